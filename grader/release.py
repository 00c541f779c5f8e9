"""``grader release``: write exercises/ from solutions/, the single source.

In a solution cell, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
become one ``raise NotImplementedError("<hint>")`` at the same indentation; the hint
is whatever follows the BEGIN marker.  Outputs and execution counts are dropped.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION:?\s*(.*)$")
END = re.compile(r"^\s*### END SOLUTION\s*$")


class MarkerError(ValueError):
    pass


def strip_solutions(source: str, where: str) -> str:
    out, inside = [], False
    for number, line in enumerate(source.splitlines(), 1):
        begin = BEGIN.match(line)
        if begin:
            if inside:
                raise MarkerError(f"{where}, line {number}: BEGIN SOLUTION inside a solution")
            indent, hint = begin.groups()
            hint = hint.strip() or "write your solution here"
            out.append(f"{indent}raise NotImplementedError({hint!r})")
            inside = True
        elif END.match(line):
            if not inside:
                raise MarkerError(f"{where}, line {number}: END SOLUTION without BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{where}: BEGIN SOLUTION never ends")
    return "\n".join(out)


def exercise_from(solution: Path) -> str:
    nb = nbformat.read(solution, as_version=4)
    for number, cell in enumerate(nb.cells):
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, f"{solution.name}, cell {number + 1}")
            cell.outputs = []
            cell.execution_count = None
    nb.nbformat_minor = 4  # no cell ids: stable output for --check
    return nbformat.writes(nb) + "\n"


def release(root: Path, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) every exercise; return the files that differ."""
    differ = []
    for solution in sorted((root / "solutions").glob("*.ipynb")):
        target = root / "exercises" / solution.name
        content = exercise_from(solution)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != content:
            differ.append(str(target.relative_to(root)))
            if not check:
                target.parent.mkdir(exist_ok=True)
                target.write_text(content, encoding="utf-8")
    return differ

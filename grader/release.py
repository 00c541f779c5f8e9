"""``grader release``: write exercises/ from solutions/, the single source.

In a solution cell, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
become one ``raise NotImplementedError("<hint>")`` at the same indentation; the hint
is whatever follows the BEGIN marker.  The worked examples (cells marked
``# NBVAL_CHECK_OUTPUT``) keep the outputs of the executed solution, as the student's
reference, and the grader's copy of them goes to ``grader/expected/<chapter>.json``;
every other output and execution count is dropped.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from .expected_outputs import dumps, expected_from, is_checked, shown_outputs
from .notebook_clean import clean, cleaned_text

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


def worked_example_outputs(cell, where: str) -> list:
    """A worked example's outputs, refused unless the solution was stored executed."""
    if cell.execution_count is None or any(o.output_type == "error" for o in cell.outputs):
        raise MarkerError(f"{where}: a worked example (NBVAL_CHECK_OUTPUT) needs the outputs of a "
                          "successful run; execute the solution and save it")
    return shown_outputs(cell.outputs)


def exercise_from(solution: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(solution, as_version=4)
    for number, cell in enumerate(nb.cells):
        cell.pop("id", None)
        if cell.cell_type == "code":
            where = f"{solution.name}, cell {number + 1}"
            cell.source = strip_solutions(cell.source, where)
            if is_checked(cell):
                cell.outputs = worked_example_outputs(cell, where)
            else:
                cell.outputs, cell.execution_count = [], None
    nb.nbformat_minor = 4  # no cell ids: stable output for --check
    return clean(nb)


def release(root: Path, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) every exercise and the grader's expected
    outputs; return the files that differ."""
    differ = []
    for solution in sorted((root / "solutions").glob("*.ipynb")):
        exercise = exercise_from(solution)
        for target, content in (
            (solution, cleaned_text(solution)),
            (root / "exercises" / solution.name, nbformat.writes(exercise) + "\n"),
            (root / "grader" / "expected" / f"{solution.stem}.json", dumps(expected_from(exercise))),
        ):
            current = target.read_text(encoding="utf-8") if target.exists() else None
            if current != content:
                differ.append(str(target.relative_to(root)))
                if not check:
                    target.parent.mkdir(exist_ok=True)
                    target.write_text(content, encoding="utf-8")
    return differ

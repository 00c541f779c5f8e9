"""Building test notebooks from the solutions: wrong variants and damaged files."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
REGION = re.compile(r"(?ms)^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[ \t]*$")


def solution(chapter: str) -> Path:
    return ROOT / "solutions" / f"{chapter}.ipynb"


def replace_regions(chapter: str, regions: dict[int, str]) -> nbformat.NotebookNode:
    """The solution with its n-th solution regions (0-based, in notebook order)
    replaced by the given code, re-indented to the region's indentation."""
    nb = nbformat.read(solution(chapter), as_version=4)
    seen = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None

        def swap(match):
            nonlocal seen
            index, seen = seen, seen + 1
            if index not in regions:
                return match.group(0)
            indent = match.group(1)
            return "\n".join(indent + line if line else line for line in regions[index].strip("\n").splitlines())

        cell.source = REGION.sub(swap, cell.source)
    assert seen > max(regions, default=-1), f"{chapter} has only {seen} solution regions"
    return nb


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def with_cells(chapter: str, before: list[str] = (), after: list[str] = (), regions: dict | None = None):
    """The solution (optionally with wrong regions) with extra code cells around it."""
    nb = replace_regions(chapter, regions or {})
    extra = lambda sources: [nbformat.v4.new_code_cell(s) for s in sources]
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    # The imports cell stays first, so that added cells can use its names.
    nb.cells = nb.cells[: first_code + 1] + extra(before) + nb.cells[first_code + 1:] + extra(after)
    return nb

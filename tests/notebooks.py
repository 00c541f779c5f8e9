"""Building test notebooks from the solutions: wrong variants and damaged files."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat

from grader.authoring.release import owner

ROOT = Path(__file__).resolve().parent.parent
REGION = re.compile(r"(?ms)^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[ \t]*$")


def solution(chapter: str) -> Path:
    return ROOT / "solutions" / f"{chapter}.ipynb"


@cache
def region_names(chapter: str) -> tuple[str, ...]:
    """The owner of each solution region of the chapter's solution, in notebook order."""
    nb = nbformat.read(solution(chapter), as_version=4)
    return tuple(owner(cell.source, m.start(), m.group(1))
            for cell in nb.cells if cell.cell_type == "code" for m in REGION.finditer(cell.source))


def check_region_names(chapter: str, names) -> None:
    """Every name owns exactly one solution region of the chapter; else a ValueError
    that lists the names there are (inserting a function never moves a pitfall)."""
    owners = region_names(chapter)
    for name in names:
        if owners.count(name) != 1:
            problem = "no solution region" if name not in owners else "several solution regions"
            raise ValueError(f"{chapter}: {name!r} owns {problem}; regions sit in {', '.join(owners)}")


def replace_regions(chapter: str, regions: dict[str, str]) -> nbformat.NotebookNode:
    """The solution with the solution regions of the named functions (``"sample_next"``,
    ``"TiedIO.__call__"``) replaced by the given code, re-indented to the region's
    indentation."""
    check_region_names(chapter, regions)
    nb = nbformat.read(solution(chapter), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None

        def swap(match, source=cell.source):
            name = owner(source, match.start(), match.group(1))
            if name not in regions:
                return match.group(0)
            indent = match.group(1)
            return "\n".join(indent + line if line else line for line in regions[name].strip("\n").splitlines())

        cell.source = REGION.sub(swap, cell.source)
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

"""Naming a notebook's cells as JupyterLab shows them.

nbval and the worker count code cells only, from 0; a student sees every cell, the
markdown ones included, and reads a cell by what it says.  A message names a cell by
its position among all cells, from 1, and its first line.
"""
from __future__ import annotations

from dataclasses import replace

from grader.kernel.runtime import shorten
from grader.registry import Finding

FIRST_LINE = 60  # characters of a cell's first line quoted in a message


def source_text(cell) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(map(str, source)) if isinstance(source, list) else str(source)


def first_line(source: str) -> str:
    """The cell's first line that is neither blank nor an nbval marker."""
    for line in source.splitlines():
        text = line.strip()
        if text and text.lstrip("#").strip() not in ("NBVAL_CHECK_OUTPUT", ""):
            return shorten(text, FIRST_LINE)
    return ""


def code_cells(cells: list) -> list[tuple[int, str]]:
    """For each code cell, in order: its position among all cells (from 1) and first line."""
    return [(position, first_line(source_text(cell)))
            for position, cell in enumerate(cells, 1)
            if isinstance(cell, dict) and cell.get("cell_type") == "code"]


def named(finding: Finding, shown: list[tuple[int, str]]) -> Finding:
    """``finding`` with its ``cell`` (a code cell's number, from 1) as the student sees it."""
    number = finding.params.get("cell")
    if type(number) is not int or not 1 <= number <= len(shown):
        return finding
    position, line = shown[number - 1]
    return replace(finding, params={**finding.params, "cell": position, "first_line": line})

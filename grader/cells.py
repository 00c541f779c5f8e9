"""Naming a notebook's cells as JupyterLab shows them, and reading a cell's traceback.

nbval and the worker count code cells only, from 0; a student sees every cell, the
markdown ones included, and reads a cell by what it says.  A message names a cell by
its position among all cells, from 1, and its first line.  ``cell_error`` reads the
exception and the student's line out of the traceback IPython gives for a cell, for
the worker (``grader check``) and the in-notebook ``check()`` alike.
"""
from __future__ import annotations

import re
from dataclasses import replace

from grader.kernel.runtime import CELL_LINES, shorten
from grader.outcome import Finding

FIRST_LINE = 60  # characters of a cell's first line quoted in a message
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ARROW_LINE = re.compile(r"^\s*-*>\s*\d+\s(.*)$")
FRAME_HEAD = re.compile(r"^\s*(Cell In\[\d+\]|File \S.*:\d+)")  # IPython 8's frame headers
CELL_FUNCTION = re.compile(r", in ([\w.]+)\(")  # "Cell In[4], line 3, in TinyLM.__init__(self, ...)"
# The line that names the exception, ``jax.errors.TracerArrayConversionError: ...``: its
# message may go on over later lines (JAX ends with "See https://..."), which are its text.
EXCEPTION_HEAD = re.compile(
    r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration))(?::\s?(.*))?$")


def cell_error(inner_traceback: str) -> dict:
    """Exception type, message and the student's line from an IPython traceback: the
    arrow line of the innermost frame headed ``Cell In[n]`` (a notebook cell), never a
    library's line."""
    lines = [ANSI.sub("", line) for line in (inner_traceback or "").splitlines()]
    lines = [line for line in lines if line.strip()]
    heads = [(i, m) for i, line in enumerate(lines) if (m := EXCEPTION_HEAD.match(line))]
    if heads:
        head, match = heads[-1]
        etype = match.group(1).rsplit(".", 1)[-1]  # as type(exc).__name__ gives it in-process
        message = " ".join([match.group(2) or "", *(line.strip() for line in lines[head + 1:])])
    else:
        etype, _, message = (lines[-1] if lines else "").partition(":")
    failing, functions, in_cell = [], [], False
    for line in lines:
        if FRAME_HEAD.match(line):
            in_cell = line.lstrip().startswith("Cell In")
            functions += [m.group(1) if (m := CELL_FUNCTION.search(line)) else ""] * in_cell
        elif in_cell and (m := ARROW_LINE.match(line)):
            failing.append(m.group(1).strip())
    return {
        "type": etype.strip()[:80] or "Error",
        "message": shorten(message.strip()),
        "line": shorten(failing[-1]) if failing else "",
        "function": functions[-1] if functions else "",  # as error_fact names it in-process
        "lines": [shorten(line) for line in failing[-CELL_LINES:]],  # which is the student's: ``own_line``
    }


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

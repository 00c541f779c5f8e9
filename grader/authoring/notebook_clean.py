"""What a run of a notebook leaves behind that is no part of its content.

Executing a solution writes the time of every cell (``metadata.execution``), and the
``check()`` cell's verdicts, which are the student's own result to come, not a worked
example.  A widget a cell shows (an old check panel, a progress bar) adds its model's
state under ids drawn at each run (``metadata.widgets`` and each output's
``widget-view`` reference); the check panel draws none now, but a notebook saved by an
older grader or a cell that shows a widget still holds them.  Kept, they turn a
ten-line change of a solution into hundreds of changed lines in git, in the solution
and again in the exercise released from it.  ``clean`` drops them; what a reader sees
offline stays: an output's plain-text form, the worked examples' outputs and their
execution counts (``grader release`` requires those).
"""
from __future__ import annotations

import re

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOK_KEYS = ("widgets",)  # the widget models' state, under ids drawn at each run
CELL_KEYS = ("execution",)  # when each cell started and ended (JupyterLab, nbclient)
CHECK_CALL = re.compile(r"^[ \t]*(?:\w+[ \t]*=[ \t]*)?check\(", re.M)  # check("04_gpt_head"), r = check(...)


def calls_check(cell) -> bool:
    """Is ``cell`` the code cell that runs the in-notebook ``check()``?"""
    return cell.cell_type == "code" and bool(CHECK_CALL.search(cell.source))


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without what changes at every run, changed in place and returned."""
    for key in NOTEBOOK_KEYS:
        nb.metadata.pop(key, None)
    for cell in nb.cells:
        for key in CELL_KEYS:
            cell.metadata.pop(key, None)
        if calls_check(cell):
            cell.outputs, cell.execution_count = [], None
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return nb


def cleaned_text(path) -> str:
    """The notebook at ``path`` cleaned, as ``nbformat.write`` would store it."""
    return nbformat.writes(clean(nbformat.read(path, as_version=4))) + "\n"

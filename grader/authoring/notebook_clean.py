"""What a run of a notebook leaves behind that is no part of its content.

Executing a solution writes the time of every cell (``metadata.execution``) and, for
the check panel, the state of every widget model under fresh random ids
(``metadata.widgets`` and each output's ``widget-view`` reference).  Kept, they turn a
ten-line change of a solution into hundreds of changed lines in git, in the solution
and again in the exercise released from it.  ``clean`` drops them; what a reader sees
offline stays: an output's plain-text form, the worked examples' outputs and their
execution counts (``grader release`` requires those).
"""
from __future__ import annotations

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOK_KEYS = ("widgets",)  # the widget models' state, under ids drawn at each run
CELL_KEYS = ("execution",)  # when each cell started and ended (JupyterLab, nbclient)


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without what changes at every run, changed in place and returned."""
    for key in NOTEBOOK_KEYS:
        nb.metadata.pop(key, None)
    for cell in nb.cells:
        for key in CELL_KEYS:
            cell.metadata.pop(key, None)
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return nb


def cleaned_text(path) -> str:
    """The notebook at ``path`` cleaned, as ``nbformat.write`` would store it."""
    return nbformat.writes(clean(nbformat.read(path, as_version=4))) + "\n"

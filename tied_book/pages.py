"""Helpers for the book's pages (kept here so that no chapter copies them): the exercise's stubs
as the student gets them, and parameter counts as people read them."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent

# A line that is only an nbval marker comment: it tells the test runner how to compare the
# cell's output, and says nothing to a reader.
def exercise_code(chapter_id: str) -> str:
    """The code cells of an exercise notebook, as the student receives them."""
    nb = nbformat.read(ROOT / "exercises" / f"{chapter_id}.ipynb", as_version=4)
    return "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def show_exercise(chapter_id: str):
    """The exercise's stubs (its worked examples are marked by a cell tag, not a comment),
    as a Markdown code block: myst-nb
    renders it as the page's own code is rendered (highlighted by the theme, lines kept,
    a copy button), where an HTML ``Code`` output would be an output, wrapped."""
    from IPython.display import Markdown

    code = exercise_code(chapter_id).strip("\n")
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`{3,}", code))])
    return Markdown(f"{fence}python\n{code}\n{fence}")


def count(n: int) -> str:
    """A parameter count as people read it: 38,597,376 (38.6 M)."""
    return f"{n:,} ({n / 1e6:.1f} M)"

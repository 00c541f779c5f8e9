"""The book's view of an exercise shows the stubs a student gets, with no nbval marker."""
import nbformat
import pytest

from conftest import ROOT, chapters
from grader.expected_outputs import MARKER_TAG
from tied_book.pages import show_exercise


@pytest.mark.parametrize("chapter", chapters())
def test_the_stubs_are_shown_without_nbval_markers(chapter):
    exercise = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    # the worked examples are marked by a cell tag, which the view does not show
    assert any(MARKER_TAG in cell.metadata.get("tags", []) for cell in exercise.cells)
    shown = show_exercise(chapter).data
    assert "NBVAL_" not in shown and "raise NotImplementedError" in shown
    # a Markdown code block, which myst-nb renders as highlighted code with its lines kept
    assert shown.startswith("```python\n") and shown.endswith("\n```")

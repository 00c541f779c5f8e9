"""The book's view of an exercise shows the stubs a student gets, without nbval's markers."""
import pytest

from conftest import chapters
from tied_book.pages import NBVAL_MARKER, exercise_code, show_exercise


@pytest.mark.parametrize("chapter", chapters())
def test_the_stubs_are_shown_without_nbval_markers(chapter):
    assert NBVAL_MARKER.search(exercise_code(chapter))  # the exercise itself has them
    shown = show_exercise(chapter).data
    assert "NBVAL_" not in shown and "raise NotImplementedError" in shown
    # a Markdown code block, which myst-nb renders as highlighted code with its lines kept
    assert shown.startswith("```python\n") and shown.endswith("\n```")


def test_a_marker_after_code_stays():
    source = "x = 1  # NBVAL_SKIP\n# NBVAL_CHECK_OUTPUT\nprint(x)\n"
    assert NBVAL_MARKER.sub("", source) == "x = 1  # NBVAL_SKIP\nprint(x)\n"

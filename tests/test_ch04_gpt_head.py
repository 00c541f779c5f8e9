"""Chapter 04, the GPT head in NumPy, beyond what every item must have
(tests/test_item_properties.py, which also holds the public cases to the worked examples'
calls): the values a message quotes are the ones that went wrong, and an argument the
notebook passes as a list stays a list (that test compares the arrays, not their types)."""
import pytest

from conftest import chapters
from inprocess import public_args
from messages import message

pytestmark = pytest.mark.skipif("04_gpt_head" not in chapters(), reason="TIED_CHAPTERS leaves chapter 04 out")


def test_a_bad_draw_is_quoted_not_the_first_one():
    # Draws shifted by one: the first ones (1, 2, 3) are token ids; V = 4 is the bad one.
    assert "got 4." in message("04_gpt_head-off_by_one_draws", "sample_next")


def test_the_targets_the_notebook_passes_as_a_list_stay_a_list():
    """``cross_entropy_from_logits(np.zeros((3, 5)), [0, 1, 4])``: a function that indexes
    with ``targets`` as an array only fails on the list, as the student's notebook would."""
    calls = [args["args"] for args in public_args("04_gpt_head", "cross_entropy_from_logits")]
    assert [0, 1, 4] in [targets for _, targets in calls if isinstance(targets, list)]

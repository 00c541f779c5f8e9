"""Chapter 04, the GPT head in NumPy, beyond what every item must have
(tests/test_item_properties.py): the values a message quotes are the ones that went
wrong, and the worked examples' calls that one test cannot replay (a call made partway
through a cell) are the public cases."""
import numpy as np
import pytest

from conftest import chapters, judged_in_process
from inprocess import notebook_namespace, public_args
from pitfalls import PITFALLS


def message(pitfall_id: str, item: str) -> str:
    entry = judged_in_process(next(p for p in PITFALLS if p.id == pitfall_id))
    return next(i["message"] for i in entry["items"] if i["item"] == item)


@pytest.mark.skipif("04_gpt_head" not in chapters(), reason="TIED_CHAPTERS leaves chapter 04 out")
def test_a_bad_draw_is_quoted_not_the_first_one():
    # Draws shifted by one: the first ones (1, 2, 3) are token ids; V = 4 is the bad one.
    assert "got 4." in message("04_gpt_head-off_by_one_draws", "sample_next")


@pytest.mark.skipif("04_gpt_head" not in chapters(), reason="TIED_CHAPTERS leaves chapter 04 out")
def test_the_gpt_head_worked_examples_are_the_notebooks():
    ns = notebook_namespace("04_gpt_head", until="cross_entropy_from_logits(logits + 1e4")
    calls = [args["args"] for args in public_args("04_gpt_head", "cross_entropy_from_logits")]
    assert any(np.array_equal(logits, ns["logits"] + 1e4) for logits, _ in calls)
    assert any(isinstance(targets, list) and targets == [0, 1, 4] for _, targets in calls)
    ns = notebook_namespace("04_gpt_head", until="out = tied_head_forward(")
    (forward,) = public_args("04_gpt_head", "tied_head_forward")
    assert np.array_equal(forward["args"][1], ns["E"]) and np.array_equal(forward["args"][0], [0, 3, 3, 5])
    taus = {args["temperature"] for args in public_args("04_gpt_head", "sample_next")}
    assert taus == {1.0, 1e-4}

"""Chapter 01, Flax Linen, beyond what every item must have (tests/test_item_properties.py):
the public cases the grader builds from a module (its drawn matrix) are the notebook's own
worked example, the values the solution's cells compute, not values drawn apart."""
import numpy as np
import pytest

from conftest import chapters
from inprocess import notebook_namespace, public_args

pytestmark = pytest.mark.skipif("01_linen" not in chapters(), reason="TIED_CHAPTERS leaves chapter 01 out")


def public(chapter_id: str, item: str) -> dict:
    (args,) = public_args(chapter_id, item)
    return args


def test_linen_public_cases_are_the_notebook_examples():
    ns = notebook_namespace("01_linen")
    matrix = np.asarray(ns["variables"]["params"]["embedding"])
    forward = public("01_linen", "TiedIO.__call__")
    np.testing.assert_array_equal(forward["embedding"], matrix)
    assert forward["token_ids"] == [0, 2]
    gradient = public("01_linen", "TiedIO.gradient")
    np.testing.assert_array_equal(gradient["embedding"], matrix)
    assert gradient["token_ids"] == ns["ids"].tolist() and gradient["targets"] == ns["targets"].tolist()
    seed, ids, v, d = public("01_linen", "tied_io_embed")["args"]
    assert (seed, ids.tolist(), v, d) == (0.0, [0.0, 2.0], 4.0, 3.0)


def test_a_second_parameter_is_named_without_flax_scope_path():
    """Flax names the root scope "/": the message names the parameter alone."""
    from conftest import judged_in_process
    from grader.i18n import LANGUAGES
    from grader.outputs.report import item_message
    from pitfalls import PITFALLS

    entry = judged_in_process(next(p for p in PITFALLS if p.id == "01_linen-second_param"))
    item = next(i for i in entry["items"] if i["item"] == "TiedIO.__call__")
    for lang in LANGUAGES:
        message = item_message(item, lang)
        assert "`head`" in message and " /" not in message and "scope" not in message, message

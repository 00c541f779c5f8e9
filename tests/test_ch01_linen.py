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

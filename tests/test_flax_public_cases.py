"""Chapters 01 and 02: the public case of every item is the notebook's own worked example
(the values the solution's cells compute, not values drawn apart), and each item's text
promises are listed next to it."""
import nbformat
import numpy as np
import pytest

from conftest import chapters
from grader.disk_cache import cases
from inprocess import run_cells
from notebooks import solution

FLAX = [c for c in ("01_linen", "02_nnx") if c in chapters()]


def public(chapter_id: str, item: str) -> dict:
    (case,) = [c for c in cases(chapter_id, item) if c.public]
    return case.args


@pytest.fixture(scope="module")
def namespaces() -> dict:
    """The namespace each solution notebook leaves after its cells ran."""
    # A copy: the next notebook runs in the same IPython shell, which clears its namespace.
    return {c: dict(run_cells(nbformat.read(solution(c), as_version=4))[0]) for c in FLAX}


@pytest.mark.skipif("01_linen" not in FLAX, reason="TIED_CHAPTERS leaves chapter 01 out")
def test_linen_public_cases_are_the_notebook_examples(namespaces):
    ns = namespaces["01_linen"]
    matrix = np.asarray(ns["variables"]["params"]["embedding"])
    forward = public("01_linen", "TiedIO.__call__")
    np.testing.assert_array_equal(forward["embedding"], matrix)
    assert forward["token_ids"] == [0, 2]
    gradient = public("01_linen", "TiedIO.gradient")
    np.testing.assert_array_equal(gradient["embedding"], matrix)
    assert gradient["token_ids"] == ns["ids"].tolist() and gradient["targets"] == ns["targets"].tolist()
    seed, ids, v, d = public("01_linen", "tied_io_embed")["args"]
    assert (seed, ids.tolist(), v, d) == (0.0, [0.0, 2.0], 4.0, 3.0)


@pytest.mark.skipif("02_nnx" not in FLAX, reason="TIED_CHAPTERS leaves chapter 02 out")
def test_nnx_public_cases_are_the_notebook_examples(namespaces):
    ns = namespaces["02_nnx"]
    gradient = public("02_nnx", "TiedEmbed.gradient")
    embedding, ids, targets = public("02_nnx", "tied_grad_paths")["args"]
    for matrix in (gradient["embedding"], embedding):
        np.testing.assert_array_equal(matrix, np.asarray(ns["E"]))
    for got in (gradient["token_ids"], ids.tolist()):
        assert got == ns["ids"].tolist()
    for got in (gradient["targets"], targets.tolist()):
        assert got == ns["targets"].tolist()
    from flax import nnx

    drawn = ns["TiedEmbed"](4, 3, rngs=nnx.Rngs(0)).embedding[...]
    np.testing.assert_array_equal(public("02_nnx", "TiedEmbed.__call__")["embedding"], np.asarray(drawn))

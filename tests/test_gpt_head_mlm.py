"""Chapters 04 and 05 beyond the message keys: the values a message quotes are the ones
that went wrong, and the public cases are exactly the notebook's worked examples."""
import nbformat
import numpy as np
import pytest

from conftest import chapters, judged_in_process
from grader import disk_cache
from inprocess import run_cells
from notebooks import ROOT
from pitfalls import PITFALLS


def message(pitfall_id: str, item: str) -> str:
    entry = judged_in_process(next(p for p in PITFALLS if p.id == pitfall_id))
    return next(i["message"] for i in entry["items"] if i["item"] == item)


@pytest.mark.skipif("04_gpt_head" not in chapters(), reason="TIED_CHAPTERS leaves chapter 04 out")
def test_a_bad_draw_is_quoted_not_the_first_one():
    # Draws shifted by one: the first ones (1, 2, 3) are token ids; V = 4 is the bad one.
    assert "got 4." in message("04_gpt_head-off_by_one_draws", "sample_next")


@pytest.mark.skipif("05_mlm" not in chapters(), reason="TIED_CHAPTERS leaves chapter 05 out")
def test_berts_eps_is_named_as_the_eps_used():
    text = message("05_mlm-bert_eps_default", "layer_norm")
    assert "eps = 1e-12" in text and "1e-05" in text and "standard deviation" not in text
    assert "eps = 1e-12" in message("05_mlm-forward_with_bert_eps", "mlm_forward_tied")


def notebook_namespace(chapter_id: str, until: str = "check(") -> dict:
    """The solution's namespace after its cells up to the first one that holds ``until``."""
    nb = nbformat.read(ROOT / "solutions" / f"{chapter_id}.ipynb", as_version=4)
    last = next(i for i, c in enumerate(nb.cells) if until in c.source)
    nb.cells = nb.cells[:last + (until != "check(")]
    namespace, cells = run_cells(nb)
    assert all(c["passed"] for c in cells)
    return namespace


def public_args(chapter_id: str, item: str) -> list[dict]:
    return [case.args for case in disk_cache.cases(chapter_id, item) if case.public]


@pytest.mark.skipif("05_mlm" not in chapters(), reason="TIED_CHAPTERS leaves chapter 05 out")
def test_the_mlm_worked_examples_are_the_notebooks():
    ns = notebook_namespace("05_mlm")
    forward, bare = public_args("05_mlm", "mlm_forward_tied")
    for name, value in (("input_ids", ns["ids"]), ("mask_indicator", ns["mask"]), ("w_emb", ns["w_emb"]),
                        ("pos_embed", ns["pos"]), ("blocks_weights", ns["blocks"])):
        assert np.array_equal(forward[name], value.numpy()), name
    assert bare["blocks_weights"].shape == (0, 6, 8, 8)
    assert not np.any(bare["pos_embed"]) and np.all(bare["mask_indicator"])
    (attention,) = public_args("05_mlm", "multi_head_attention")
    assert np.array_equal(attention["x"], ns["x"].numpy()) and np.array_equal(attention["w_o"], ns["w"][3].numpy())


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

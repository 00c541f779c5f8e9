"""Chapter 05, masked language modelling, beyond what every item must have
(tests/test_item_properties.py): the values a message quotes are the ones that went
wrong, and the public cases built from the notebook's tensors are its worked examples.
Its loops judged by cost are in ``test_loop_cost``."""
import numpy as np
import pytest

from conftest import chapters
from inprocess import notebook_namespace, public_args
from messages import message

pytestmark = pytest.mark.skipif("05_mlm" not in chapters(), reason="TIED_CHAPTERS leaves chapter 05 out")


def test_berts_eps_is_named_as_the_eps_used():
    text = message("05_mlm-bert_eps_default", "layer_norm")
    assert "eps = 1e-12" in text and "1e-05" in text and "standard deviation" not in text
    assert "eps = 1e-12" in message("05_mlm-forward_with_bert_eps", "mlm_forward_tied")


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

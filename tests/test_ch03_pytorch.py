"""Chapter 03, PyTorch, beyond what every item must have (tests/test_item_properties.py):
the model the TinyLM items' public case builds is the notebook's worked example (its seed
and its ids, which no call's arguments show), a refused tie's message is read for both
shapes however it writes them, and a tied head is judged on the tie, however the forward
pass spells it."""
import numpy as np
import pytest

import grader.pipeline.judge.items as judging
from conftest import chapters
from inprocess import notebook_namespace, public_args
from messages import message
from test_fair_variants import verdicts

pytestmark = pytest.mark.skipif("03_pytorch" not in chapters(), reason="TIED_CHAPTERS leaves chapter 03 out")

TINY_ITEMS = ("TinyLM.tied", "TinyLM.forward", "TinyLM.grad")


def test_the_tinylm_public_cases_are_the_notebooks_model():
    """The probe seeds torch with the case's seed and builds ``TinyLM``: the same
    parameters as the worked example's model, called on the same ids."""
    import torch

    seen = []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: seen.append(args[0].clone()) if type(module).__name__ == "TinyLM" else None)
    try:
        ns = notebook_namespace("03_pytorch", until="model = TinyLM(")
    finally:
        hook.remove()
    example = ns["model"].state_dict()
    for item in TINY_ITEMS:
        (case,) = public_args("03_pytorch", item)
        assert (case["vocab_size"], case["d_model"], case["n_layers"]) == (11, 8, None), item
        torch.manual_seed(case["seed"])
        built = ns["TinyLM"](case["vocab_size"], case["d_model"]).state_dict()
        assert built.keys() == example.keys() and all(torch.equal(built[k], example[k]) for k in built), item
        np.testing.assert_array_equal(case["input_ids"], seen[0].numpy(), err_msg=item)
        assert case["input_ids"].dtype == np.int64, item


@pytest.mark.parametrize("text", ["cannot tie (6, 4) with (7, 4)", "[6, 4] vs [7, 4]", "6x4 and 7 x 4",
                                  "torch.Size([6, 4]) != torch.Size([7, 4])", "6 by 4, 7×4"])
def test_a_refused_ties_message_names_the_shapes_however_written(text):
    from grader.chapters.pytorch.grade import names_shape

    assert names_shape(text, (6, 4)) and names_shape(text, (7, 4))


@pytest.mark.parametrize("text", ["cannot tie (16, 4)", "cannot tie (6, 45)", "(4, 6), transposed", "6 and 4"])
def test_a_refused_ties_message_without_the_shape_is_told_so(text):
    from grader.chapters.pytorch.grade import names_shape

    assert not names_shape(text, (6, 4))


def test_a_message_with_one_shape_is_quoted_with_both_shapes_expected():
    """The worked example's refused tie, nn.Embedding(6, 4) and nn.Linear(4, 7): the
    finding names both shapes and quotes the student's own message."""
    text = message("03_pytorch-one_shape_named_and_layers_ignored", "tie_weights.ValueError")
    assert "(6, 4)" in text and "(7, 4)" in text and "lm_head.weight has shape (7, 4)" in text, text


def tiny_forward(last_line: str) -> str:
    return ("T = input_ids.shape[1]\n"
            "x = self.embed(input_ids) + self.pos(torch.arange(T, device=input_ids.device))\n"
            f"for block in self.blocks:\n    x = block(x)\n{last_line}\n")


# A tied TinyLM's head, three ways: the gradient is judged from the tie itself.
HEADS = {
    "lm_head": "return self.lm_head(self.ln_f(x))",
    "f_linear": "return torch.nn.functional.linear(self.ln_f(x), self.embed.weight)",
    "matmul_transpose": "return self.ln_f(x) @ self.embed.weight.T",
}


@pytest.mark.parametrize("head", HEADS)
def test_a_tied_head_however_written_gets_the_gradient_item(head):
    found = verdicts("03_pytorch", {"TinyLM.forward": tiny_forward(HEADS[head])}, ("TinyLM.forward", "TinyLM.grad"))
    assert {name: v.status for name, v in found.items()} == {"TinyLM.forward": judging.PASS,
                                                             "TinyLM.grad": judging.PASS}, \
        {name: v.finding for name, v in found.items()}

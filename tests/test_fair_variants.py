"""Fair code in unusual styles earns the points (issue 27): each variant is the
solution with one region replaced, judged in this process on the items it touches.
Chapter 05's loops over a fixed handful are in ``test_loop_cost``, chapter 03's heads in
``test_ch03_pytorch``."""
import pytest

import grader.pipeline.judge.items as judging
from grader import disk_cache
from grader.chapters import chapter
from grader.pipeline.prepare.probe_bundle import run_in_process
from inprocess import run_cells
from notebooks import replace_regions


def verdicts(chapter_id: str, regions: dict, items: tuple[str, ...]) -> dict:
    namespace, cells = run_cells(replace_regions(chapter_id, regions))
    assert all(c["passed"] for c in cells), cells
    ch = chapter(chapter_id)
    found = {}
    for name in items:
        facts = run_in_process(ch, namespace, only=name)[name]
        found[name] = judging.judge_item(ch, ch.item(name), facts, disk_cache)
    return found


def test_an_exception_keeps_its_type_and_its_text_over_several_lines():
    """JAX's message ends with a line of its own, "See https://...": the kernel's
    traceback is read from the line that names the exception, never split at a colon."""
    from grader.cells import cell_error

    traceback = "\n".join([
        "Cell In[4], line 3", "----> 3 grad = jax.grad(loss)(E)", "",
        "File /site-packages/jax/core.py:12, in f()", "---> 12     raise e", "",
        "jax.errors.TracerArrayConversionError: The numpy.ndarray conversion method __array__() was called",
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError"])
    error = cell_error(traceback)
    assert error["type"] == "TracerArrayConversionError"
    assert error["message"].endswith("See https://docs.jax.dev/en/latest/errors.html"
                                     "#jax.errors.TracerArrayConversionError")
    assert error["line"] == "grad = jax.grad(loss)(E)"


MLM_FORWARD = '''
x = {lookup} + pos_embed
for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_1) @ w_2
return {head}[mask_indicator > 0.5]
'''
# Chapter 05's tied head and lookup, written other ways: the tie's gradient is judged
# from w_emb's raw gradient, so every spelling that uses w_emb itself passes.
MLM_TIES = {
    "f_linear": ("w_emb[input_ids]", "torch.nn.functional.linear(x, w_emb)"),
    "einsum": ("w_emb[input_ids]", "torch.einsum('ntd,vd->ntv', x, w_emb)"),
    "f_embedding_and_matmul_of_transpose": ("torch.nn.functional.embedding(input_ids, w_emb)",
                                           "torch.matmul(x, w_emb.transpose(0, 1))"),
}


@pytest.mark.parametrize("tie", MLM_TIES)
def test_a_tied_mlm_head_however_written_keeps_the_gradient(tie):
    lookup, head = MLM_TIES[tie]
    found = verdicts("05_mlm", {"mlm_forward_tied": MLM_FORWARD.format(lookup=lookup, head=head)},
                     ("mlm_forward_tied",))
    assert found["mlm_forward_tied"].status == judging.PASS, found["mlm_forward_tied"].finding


# Chapter 05's attention with the softmax written other ways: the gradient that reaches
# x and each weight is judged from the raw gradients, so every spelling in torch passes.
MHA_SOFTMAX = '''
n, t, d = x.shape
d_head = d // num_heads
q, k, v = (torch.matmul(x, w).view(n, t, num_heads, d_head).permute(0, 2, 1, 3) for w in (w_q, w_k, w_v))
scores = torch.einsum('nhqd,nhkd->nhqk', q, k) / d_head ** 0.5
{softmax}
return (weights @ v).permute(0, 2, 1, 3).reshape(n, t, d) @ w_o
'''
MHA_SOFTMAXES = {
    "by_hand": "e = torch.exp(scores - scores.amax(-1, keepdim=True))\nweights = e / e.sum(-1, keepdim=True)",
    "functional": "weights = torch.nn.functional.softmax(scores, dim=-1)",
    "log_softmax": "weights = scores.log_softmax(dim=-1).exp()",
}


@pytest.mark.parametrize("softmax", MHA_SOFTMAXES)
def test_an_attention_in_torch_however_written_keeps_the_gradient(softmax):
    found = verdicts("05_mlm", {"multi_head_attention": MHA_SOFTMAX.format(softmax=MHA_SOFTMAXES[softmax])},
                     ("multi_head_attention",))
    assert found["multi_head_attention"].status == judging.PASS, found["multi_head_attention"].finding

"""Chapter 05's "no Python loop over heads or positions", judged by cost: loops over a
fixed handful pass however they are written, and loops over heads, positions or masked
rows fail however they are disguised (reduce, recursion, itertools, a comprehension
in a string that no source scan reads).  Each variant is the
solution with one region replaced, judged in this process on the one item it touches."""
import nbformat
import pytest

import grader.pipeline.judge.items as judging
from grader import disk_cache
from grader.chapters import chapter
from grader.pipeline.prepare.probe_bundle import run_in_process
from inprocess import run_cells
from notebooks import replace_regions

CH = "05_mlm"

SPLIT_BY_CHUNK = '''
n, t, d = x.shape

def _split_heads(h, heads):
    return h.reshape(n, t, heads, d // heads).transpose(1, 2)

qkv = x @ torch.cat([w_q, w_k, w_v], dim=1)
q, k, v = (_split_heads(t_, num_heads) for t_ in qkv.chunk(3, dim=-1))
weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // num_heads), dim=-1)
return (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
'''
MAP_OVER_QKV = '''
import functools
n, t, d = x.shape
q, k, v = map(lambda w: (x @ w).reshape(n, t, num_heads, d // num_heads).transpose(1, 2), (w_q, w_k, w_v))
weights = torch.softmax(functools.reduce(torch.matmul, (q, k.transpose(-2, -1))) / math.sqrt(d // num_heads), -1)
return (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
'''
SIX_BY_INDEX = '''
x = w_emb[input_ids] + pos_embed
for i in range(blocks_weights.shape[0]):
    w_q, w_k, w_v, w_o, w_1, w_2 = [blocks_weights[i, j] for j in range(6)]
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_1) @ w_2
return (x @ w_emb.T)[mask_indicator > 0.5]
'''
BLOCKS_BY_REDUCE = '''
import functools

def block(x, w):
    x = x + multi_head_attention(layer_norm(x), *w[:4], num_heads)
    return x + gelu_tanh(layer_norm(x) @ w[4]) @ w[5]

x = functools.reduce(block, blocks_weights, w_emb[input_ids] + pos_embed)
return (x @ w_emb.T)[mask_indicator > 0.5]
'''
FAIR = {
    "qkv_chunk_generator": ("multi_head_attention", SPLIT_BY_CHUNK),
    "map_over_qkv_and_reduce_of_two": ("multi_head_attention", MAP_OVER_QKV),
    "six_weights_by_index": ("mlm_forward_tied", SIX_BY_INDEX),
    "blocks_by_reduce": ("mlm_forward_tied", BLOCKS_BY_REDUCE),
}

HEADS_BY_STARMAP = '''
import itertools
n, t, d = x.shape
dh = d // num_heads
one = lambda lo, hi: torch.softmax(x @ w_q[:, lo:hi] @ (x @ w_k[:, lo:hi]).transpose(-2, -1) / math.sqrt(dh), -1) \\
    @ (x @ w_v[:, lo:hi])
return torch.cat(list(itertools.starmap(one, ((h * dh, (h + 1) * dh) for h in range(num_heads)))), -1) @ w_o
'''
ROWS_BY_RECURSION = '''
def rows(r):
    if len(r) == 0:
        return []
    c = r[0] - r[0].mean()
    return [c / torch.sqrt((c * c).mean() + eps)] + rows(r[1:])
return torch.stack(rows(x.reshape(-1, x.shape[-1]))).reshape(x.shape) if x.numel() else x
'''
HEADS_BY_REDUCE = '''
import functools
n, t, d = x.shape
dh = d // num_heads
head = lambda h: torch.softmax((x @ w_q)[..., h * dh:(h + 1) * dh] @ (x @ w_k)[..., h * dh:(h + 1) * dh]
                               .transpose(-2, -1) / math.sqrt(dh), -1) @ (x @ w_v)[..., h * dh:(h + 1) * dh]
return functools.reduce(lambda acc, h: torch.cat([acc, head(h)], -1), range(1, num_heads), head(0)) @ w_o
'''
GATHER_IN_A_STRING = '''
x = w_emb[input_ids] + pos_embed
for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_1) @ w_2
flat, keep = (x @ w_emb.T).flatten(0, 1), (mask_indicator > 0.5).flatten()
return torch.stack(eval("[flat[i] for i in range(len(keep)) if keep[i]]", {"flat": flat, "keep": keep}))
'''
DISGUISED = {
    "heads_by_itertools_starmap": ("multi_head_attention", HEADS_BY_STARMAP, "mlm.python_loop"),
    "positions_by_recursion": ("layer_norm", ROWS_BY_RECURSION, "mlm.python_loop"),
    "heads_by_functools_reduce": ("multi_head_attention", HEADS_BY_REDUCE, "mlm.python_loop"),
    # No source shows a loop in a string: the cost alone finds it.
    "masked_rows_in_an_eval_string": ("mlm_forward_tied", GATHER_IN_A_STRING, "mlm.cost_grows"),
}


def judged(item: str, code: str):
    nb: nbformat.NotebookNode = replace_regions(CH, {item: code})
    namespace, cells = run_cells(nb)
    assert all(c["passed"] for c in cells), cells
    ch = chapter(CH)
    return judging.judge_item(ch, ch.item(item), run_in_process(ch, namespace, only=item)[item], disk_cache)


@pytest.mark.parametrize("name", FAIR)
def test_a_loop_over_a_fixed_handful_passes(name):
    item, code = FAIR[name]
    verdict = judged(item, code)
    assert verdict.status == judging.PASS, verdict.finding


@pytest.mark.parametrize("name", DISGUISED)
def test_a_disguised_loop_over_heads_or_positions_fails(name):
    item, code, key = DISGUISED[name]
    verdict = judged(item, code)
    assert verdict.status == judging.FAIL and verdict.finding.key == key, verdict.finding
    assert verdict.case == "mlm.case_cost"
    assert verdict.finding.params["count_big"] - verdict.finding.params["count_small"] >= \
        verdict.finding.params["big"] - verdict.finding.params["small"]

"""Chapter 05's references: a BERT-style encoder with a tied head, in float64 NumPy.

Written once, with a switch for each mistake the chapter teaches (unbiased variance,
eps outside the square root, exact-erf GELU, causal mask, missing scale, softmax over
the queries, heads split or merged the wrong way, post-LN, no gather, another head).
``grade.py`` compares the student's value with the reference, and a symptom asks
whether it is the reference with one switch flipped.
"""
from __future__ import annotations

import math

import numpy as np

from grader.drawing import softmax

EPS = 1e-5


def layer_norm_ref(x, eps=EPS, unbiased=False, eps_outside=False):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # the mistakes may divide 0 by 0, as the student's code did
        var = x.var(-1, ddof=1 if unbiased else 0, keepdims=True)
        if eps_outside:  # (x - mean) / (std + eps)
            return (x - mean) / (np.sqrt(var) + eps)
        return (x - mean) / np.sqrt(var + eps)


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def gelu_ref(x, exact=False):
    x = np.asarray(x, np.float64)
    if exact:
        return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


LAYOUTS = ("heads", "flat", "interleaved")


def _split(h, heads, layout):
    """(N, T, d) -> (N, H, T, d_head): the right way ("heads") and two wrong ones."""
    n, t, d = h.shape
    if layout == "heads":  # each head owns a contiguous slice of the features
        return h.reshape(n, t, heads, d // heads).transpose(0, 2, 1, 3)
    if layout == "flat":  # reshape straight to (N, H, T, d_head): mixes positions
        return h.reshape(n, heads, t, d // heads)
    return h.reshape(n, t, d // heads, heads).transpose(0, 3, 1, 2)  # strided features


def _merge(o, layout):
    """(N, H, T, d_head) -> (N, T, d), the inverse of ``_split`` for the same layout."""
    n, heads, t, dh = o.shape
    if layout == "heads":
        return o.transpose(0, 2, 1, 3).reshape(n, t, heads * dh)
    if layout == "flat":
        return o.reshape(n, t, heads * dh)
    return o.transpose(0, 2, 3, 1).reshape(n, t, heads * dh)


def mha_ref(x, w_q, w_k, w_v, w_o, num_heads, causal=False, scale=True, softmax_axis=-1,
            split="heads", merge="heads"):
    x = np.asarray(x, np.float64)
    heads = int(num_heads)
    q, k, v = (_split(x @ np.asarray(w, np.float64), heads, split) for w in (w_q, w_k, w_v))
    scores = q @ k.transpose(0, 1, 3, 2)
    if scale:
        scores = scores / math.sqrt(x.shape[-1] // heads)
    if causal:
        t = x.shape[1]
        scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
    return _merge(softmax(scores, softmax_axis) @ v, merge) @ np.asarray(w_o, np.float64)


def forward_ref(input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads, post_ln=False,
                unbiased=False, eps_outside=False, ln_eps=EPS, exact=False, gathered=True, head=None, **attention):
    """The forward pass in float64; ``head``: the head's matrix, w_emb (the tie) by default."""
    emb = np.asarray(w_emb, np.float64)
    x = emb[np.asarray(input_ids, int)] + np.asarray(pos_embed, np.float64)
    ln = lambda u: layer_norm_ref(u, ln_eps, unbiased=unbiased, eps_outside=eps_outside)
    for w_q, w_k, w_v, w_o, w_1, w_2 in np.asarray(blocks_weights, np.float64):
        attend = lambda u: mha_ref(u, w_q, w_k, w_v, w_o, num_heads, **attention)
        ffn = lambda u: gelu_ref(u @ w_1, exact) @ w_2
        if post_ln:
            x = ln(x + attend(x))
            x = ln(x + ffn(x))
        else:
            x = x + attend(ln(x))
            x = x + ffn(ln(x))
    logits = x @ (emb if head is None else np.asarray(head, np.float64)).T
    return logits[np.asarray(mask_indicator) > 0.5] if gathered else logits

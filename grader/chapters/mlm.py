"""Chapter 05, a BERT-style masked LM with a tied head, from scratch in PyTorch:
``layer_norm``, ``gelu_tanh``, ``multi_head_attention`` and ``mlm_forward_tied``.

The references are written once, in float64 NumPy, with switches for the mistakes the
chapter teaches (unbiased variance, eps outside the square root, exact-erf GELU, causal
mask, missing scale, softmax over the queries, heads split the wrong way, post-LN, no
gather).  A symptom recomputes the reference with one switch flipped and asks whether
the student's value is that one.  A separate head is recognised by logits that leave
the span of the embedding's columns.  The forbidden built-ins are caught in the kernel
(see ``mlm_probe``), where they raise ``ForbiddenFunctionError`` naming themselves.
"""
from __future__ import annotations

import math
from itertools import product

import numpy as np

from ..cases import hidden_rng
from ..judge import close, matches_reference
from ..registry import Case, Chapter, ErrorPattern, Item, Symptom

EPS = 1e-5
# Tolerances: rtol, and atol as a fraction of the largest |reference| of the case (at
# least 1), so that a logit of 200 and one of 0.01 in the same output are judged alike.
# Measured on every case: the float32 solution uses at most 3% of the forward tolerance,
# while the smallest mistake, the exact-erf GELU, exceeds it 5.9 times or more wherever
# there are blocks.  The other items have no mistake that small and get more room.
LN_TOL = dict(rtol=1e-4, atol=1e-4)
GELU_TOL = dict(rtol=1e-5, atol=1e-6)
MHA_TOL = dict(rtol=1e-4, atol=1e-4)
FORWARD_TOL = dict(rtol=1e-5, atol=1e-5)
LAYOUTS = ("heads", "flat", "interleaved")


# ---------------------------------------------------------------- references

def layer_norm_ref(x, eps=EPS, unbiased=False, eps_outside=False):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
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


def _softmax(s, axis):
    s = s - s.max(axis=axis, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)


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
    return _merge(_softmax(scores, softmax_axis) @ v, merge) @ np.asarray(w_o, np.float64)


def forward_ref(input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads,
                post_ln=False, unbiased=False, eps_outside=False, exact=False, gathered=True, **attention):
    emb = np.asarray(w_emb, np.float64)
    x = emb[np.asarray(input_ids, int)] + np.asarray(pos_embed, np.float64)
    ln = lambda u: layer_norm_ref(u, unbiased=unbiased, eps_outside=eps_outside)
    for w_q, w_k, w_v, w_o, w_1, w_2 in np.asarray(blocks_weights, np.float64):
        attend = lambda u: mha_ref(u, w_q, w_k, w_v, w_o, num_heads, **attention)
        ffn = lambda u: gelu_ref(u @ w_1, exact) @ w_2
        if post_ln:
            x = ln(x + attend(x))
            x = ln(x + ffn(x))
        else:
            x = x + attend(ln(x))
            x = x + ffn(ln(x))
    logits = x @ emb.T
    return logits[np.asarray(mask_indicator) > 0.5] if gathered else logits


# ---------------------------------------------------------------- cases

def _normal(rng, shape, std):
    return rng.normal(0.0, std, shape).astype(np.float32)


def ln_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/layer_norm")
    public = np.linspace(-1.0, 2.0, 12, dtype=np.float32).reshape(1, 3, 4)
    found = [Case("worked example (1, 3, 4)", {"x": public}, True)]
    shapes = (
        # label, x, eps (None: the default)
        ("two features (2, 5, 2)", _normal(rng, (2, 5, 2), 1.0), None),
        ("offset and spread (4, 64, 128)", 10.0 + _normal(rng, (4, 64, 128), 3.0), None),
        ("a 2-D input (7, 5)", _normal(rng, (7, 5), 1.0), None),
        ("eps=0.1 (3, 6, 16)", _normal(rng, (3, 6, 16), 0.5), 0.1),
        ("variance near eps (2, 8, 32)", _normal(rng, (2, 8, 32), 3e-3), None),
    )
    for label, x, eps in shapes:
        found.append(Case(f"hidden {label}", {"x": x, "eps": eps}))
    return found


def gelu_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/gelu_tanh")
    found = [Case("worked example: 13 points in [-3, 3]", {"x": np.linspace(-3, 3, 13, dtype=np.float32)}, True)]
    found.append(Case("hidden (4, 64, 128), std 3", {"x": _normal(rng, (4, 64, 128), 3.0)}))
    found.append(Case("hidden large inputs, |x| up to 30", {"x": np.linspace(-30, 30, 61, dtype=np.float32).reshape(61, 1)}))
    return found


# (N, T, d, heads) of the attention cases; the first is public.
MHA_SHAPES = ((2, 4, 8, 2), (1, 1, 4, 1), (2, 6, 12, 3), (3, 9, 16, 8), (2, 5, 6, 6), (4, 64, 128, 8), (1, 7, 8, 1))


def _mha_args(rng, n, t, d, heads):
    weights = {k: _normal(rng, (d, d), d**-0.5) for k in ("w_q", "w_k", "w_v", "w_o")}
    return {"x": _normal(rng, (n, t, d), 1.0), **weights, "num_heads": heads}


def mha_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/multi_head_attention")
    found = []
    for i, (n, t, d, heads) in enumerate(MHA_SHAPES):
        # Queries and keys a little larger than 1/sqrt(d) make the scores spread,
        # so that a missing scale or a wrong softmax axis moves the result visibly.
        args = _mha_args(rng, n, t, d, heads)
        args["w_q"] *= 2.0
        args["w_k"] *= 2.0
        label = f"(N={n}, T={t}, d_model={d}, heads={heads})"
        found.append(Case(("worked example " if i == 0 else "hidden ") + label, args, i == 0))
    return found


# (N, T, V, d, heads, blocks, mask) of the forward cases; the first is public.
# mask: "some" (at least one masked, at least one not), "none" or "all".
FORWARD_SHAPES = (
    (2, 5, 11, 8, 2, 1, "some"),
    (1, 1, 7, 4, 1, 0, "all"),
    (2, 6, 20, 8, 2, 2, "none"),
    (2, 8, 40, 16, 4, 0, "some"),
    (3, 10, 50, 16, 4, 1, "some"),
    (1, 4, 6, 16, 2, 1, "some"),  # V < d: the head still multiplies by w_emb.T
    (2, 7, 30, 12, 3, 3, "all"),
    (2, 16, 64, 32, 1, 2, "some"),
    (4, 64, 200, 128, 8, 3, "some"),
)


def _mask(rng, n, t, kind):
    if kind == "none":
        return np.zeros((n, t), np.float32)
    if kind == "all":
        return np.ones((n, t), np.float32)
    mask = (rng.random((n, t)) < 0.3).astype(np.float32)
    mask.flat[0], mask.flat[-1] = 1.0, 0.0  # at least one of each
    return mask


def forward_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/mlm_forward_tied")
    found = []
    for i, (n, t, v, d, heads, blocks, kind) in enumerate(FORWARD_SHAPES):
        packed = _normal(rng, (blocks, 6, d, d), d**-0.5)
        packed[:, 4] *= 2.0  # spread the GELU inputs to where tanh and erf differ most
        args = dict(
            input_ids=rng.integers(0, v, (n, t)).astype(np.int64),
            mask_indicator=_mask(rng, n, t, kind),
            w_emb=_normal(rng, (v, d), 1.0),
            pos_embed=_normal(rng, (t, d), 0.5),
            blocks_weights=packed,
            num_heads=heads,
        )
        label = f"(N={n}, T={t}, V={v}, d_model={d}, heads={heads}, blocks={blocks}, masked: {kind})"
        found.append(Case(("worked example " if i == 0 else "hidden ") + label, args, i == 0))
    return found


# ---------------------------------------------------------------- symptoms

def _scaled(ref, rtol, atol) -> dict:
    """The tolerance for ``ref``: ``atol`` scaled by its largest magnitude (at least 1)."""
    ref = np.asarray(ref)
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size and np.all(np.isfinite(ref)) else 1.0
    return dict(rtol=rtol, atol=float(f"{atol * scale:.3g}"))


def _close(value, ref, rtol, atol) -> bool:
    return close(value, ref, **_scaled(ref, rtol, atol))


def judge_against(symptoms, rtol, atol):
    """``matches_reference`` with the case's own scale applied to ``atol``."""
    def judge(case, value, ref):
        return matches_reference(symptoms, **_scaled(ref, rtol, atol))(case, value, ref)
    return judge


def _is(reference, tol, **switches):
    """A symptom test: the value equals ``reference`` with these switches."""
    return lambda case, value: _close(value, reference(**case.args, **switches), **tol)


def _ln_reference(x, eps=None, **switches):
    return layer_norm_ref(x, EPS if eps is None else eps, **switches)


def _ln(**switches):
    return _is(_ln_reference, LN_TOL, **switches)


def _any_wrong_split(reference, tol):
    def test(case, value):
        return any(_close(value, reference(**case.args, split=s, merge=m), **tol)
                   for s, m in product(LAYOUTS, LAYOUTS) if (s, m) != ("heads", "heads"))
    return test


def _separate_head(case, value) -> bool:
    """Tied logits are ``h @ E.T``: every row lies in the span of E's columns."""
    emb = np.asarray(case.args["w_emb"], np.float64)
    value = np.asarray(value, np.float64)
    v, d = emb.shape
    if v <= d or value.ndim != 2 or value.shape[0] == 0 or value.shape[1] != v or not np.all(np.isfinite(value)):
        return False
    coef, *_ = np.linalg.lstsq(emb, value.T, rcond=None)
    residual = np.linalg.norm(value.T - emb @ coef)
    return bool(residual > 1e-3 * max(np.linalg.norm(value), 1e-12))


def _not_gathered(case, value) -> bool:
    return _close(value, forward_ref(**case.args, gathered=False), **FORWARD_TOL)


def attention_symptoms(reference, tol) -> tuple[Symptom, ...]:
    """The attention mistakes, as seen through ``reference`` (attention alone, or the forward pass)."""
    return (
        Symptom("mlm.causal_mask", _is(reference, tol, causal=True)),
        Symptom("mlm.missing_scale", _is(reference, tol, scale=False)),
        Symptom("mlm.softmax_axis", _is(reference, tol, softmax_axis=-2)),
        Symptom("mlm.head_split", _any_wrong_split(reference, tol)),
    )


FORBIDDEN = (
    ErrorPattern("mlm.forbidden_attention", r"ForbiddenFunctionError", r"attention|transformer"),
    ErrorPattern("mlm.forbidden_layer_norm", r"ForbiddenFunctionError", r"layer_?norm"),
    ErrorPattern("mlm.forbidden_gelu", r"ForbiddenFunctionError", r"gelu"),
)

CHAPTER = Chapter(
    id="05_mlm",
    title="A masked LM with a tied head, in PyTorch",
    probe_module="grader.chapters.mlm_probe",
    errors=FORBIDDEN,
    items=(
        Item(
            name="layer_norm", points=1, probe="layer_norm", cases=ln_cases,
            reference=lambda case: _ln_reference(**case.args),
            judge=judge_against((
                Symptom("mlm.unbiased_variance", _ln(unbiased=True)),
                Symptom("mlm.eps_outside", _ln(eps_outside=True)),
            ), **LN_TOL),
        ),
        Item(
            name="gelu_tanh", points=1, probe="gelu_tanh", cases=gelu_cases,
            reference=lambda case: gelu_ref(case.args["x"]),
            judge=judge_against((Symptom("mlm.exact_gelu", _is(gelu_ref, GELU_TOL, exact=True)),), **GELU_TOL),
        ),
        Item(
            name="multi_head_attention", points=2, probe="multi_head_attention", cases=mha_cases,
            reference=lambda case: mha_ref(**case.args),
            judge=judge_against(attention_symptoms(mha_ref, MHA_TOL), **MHA_TOL),
        ),
        Item(
            name="mlm_forward_tied", points=3, probe="mlm_forward_tied", cases=forward_cases,
            reference=lambda case: forward_ref(**case.args),
            judge=judge_against((
                Symptom("mlm.separate_head", _separate_head),
                Symptom("mlm.not_gathered", _not_gathered),
                Symptom("mlm.post_ln", _is(forward_ref, FORWARD_TOL, post_ln=True)),
                Symptom("mlm.unbiased_variance", _is(forward_ref, FORWARD_TOL, unbiased=True)),
                Symptom("mlm.eps_outside", _is(forward_ref, FORWARD_TOL, eps_outside=True)),
                Symptom("mlm.exact_gelu", _is(forward_ref, FORWARD_TOL, exact=True)),
                *attention_symptoms(forward_ref, FORWARD_TOL),
            ), **FORWARD_TOL),
        ),
    ),
)

"""Chapter 05, a BERT-style masked LM with a tied head, from scratch in PyTorch:
``layer_norm``, ``gelu_tanh``, ``multi_head_attention`` and ``mlm_forward_tied``.

Beside this module: ``reference.py``, the float64 NumPy references with a switch for
each mistake the chapter teaches; ``cases.py``, the worked examples as the notebook
draws them and the hidden, cost and gradient cases; ``code_rules.py``, what the code
may not do (forbidden built-ins, loops over heads or positions) and how it is found.
Here: the judges and one ``exercise`` block per graded function.  A symptom recomputes
the reference with one switch flipped and asks whether the student's value is that one;
a separate head is recognised by logits that leave the span of the embedding's columns.

What the text forbids is checked three ways: in the kernel the forbidden built-ins
raise ``ForbiddenFunctionError`` naming themselves (see ``probe.py``); the source of
the function and of the notebook's functions it calls comes back raw and
``code_rules`` finds loops and forbidden names in it, with their line; and the raw list
of ATen operations the call dispatched catches a built-in reached under a name no
source shows.  ``mlm_forward_tied`` runs with the reference helpers in place of the
student's, so each helper's mistake costs its own points once.

What every exercise shares comes first (the tolerances, the judge of the code before
the values), then one block per exercise, in the notebook's order, each ending with
its ``Item``.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from grader.chapters.mlm.cases import (
    ATTENTION_GRADIENT,
    ATTENTION_INPUTS,
    COST,
    GRADIENT,
    attention_gradient_case,
    forward_cases,
    forward_cost,
    gelu_cases,
    gradient_case,
    ln_cases,
    mha_cases,
    mha_cost,
    tensor_cost,
)
from grader.chapters.mlm.code_rules import FORBIDDEN, code_finding, cost_finding
from grader.chapters.mlm.reference import EPS, LAYOUTS, forward_ref, gelu_ref, layer_norm_ref, mha_ref
from grader.comparisons import as_numbers, close, compare_arrays, matches_reference
from grader.registry import Case, Chapter, ErrorPattern, Finding, Item, Promise, Symptom

# eps values a LayerNorm is written with: BERT's, none, T5's and Llama's, this exercise's.
EPS_SEEN = (1e-12, 0.0, 1e-6, 1e-5, 1e-8, 1e-3)
# A gradient is known along random directions, by central differences of the reference:
# their step, how many directions, and the relative tolerance along each.
GRADIENT_STEP, GRADIENT_DIRECTIONS, GRADIENT_RTOL = 1e-5, 3, 1e-3


# ---------------------------------------------------------------- values, within a tolerance of the case's scale

# Tolerances: rtol, and atol as a fraction of the largest |reference| of the case (at
# least 1), so that a logit of 200 and one of 0.01 in the same output are judged alike.
# Measured on every case: the float32 solution uses at most 3% of the forward tolerance,
# while the smallest mistake, the exact-erf GELU, exceeds it 5.9 times or more wherever
# there are blocks.  The other items have no mistake that small and get more room.

def _scaled(ref, rtol, atol) -> dict:
    """The tolerance for ``ref``: ``atol`` scaled by its largest magnitude (at least 1)."""
    ref = np.asarray(ref)
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size and np.all(np.isfinite(ref)) else 1.0
    return dict(rtol=rtol, atol=float(f"{atol * scale:.3g}"))


def _close(value, ref, rtol, atol) -> bool:
    """``close``, with NaN where ``ref`` has NaN counting as equal (no eps: 0 / 0)."""
    value, ref = np.asarray(value), np.asarray(ref, np.float64)
    if value.shape == ref.shape and np.any(np.isnan(ref)):
        try:
            both = np.isnan(ref) & np.isnan(value.astype(np.float64))
        except (TypeError, ValueError):
            return False
        if not np.array_equal(both, np.isnan(ref)):
            return False
        value, ref = np.where(both, 0.0, value), np.where(both, 0.0, ref)
    return close(value, ref, **_scaled(np.where(np.isnan(ref), 0.0, ref), rtol, atol))


def _is(reference, tol, **switches):
    """A symptom test: the value equals ``reference`` with these switches."""
    return lambda case, value, ref: _close(value, reference(**case.args, **switches), **tol)


def eps_used(reference, tol, asked: float, case_args: dict, value, name: str = "eps"):
    """The first eps of ``EPS_SEEN`` other than ``asked`` that reproduces ``value``."""
    return next((eps for eps in EPS_SEEN if eps != asked
                 and _close(value, reference(**case_args, **{name: eps}), **tol)), None)


def values_judge(symptoms, tol, eps_finding=None):
    """``matches_reference`` with the case's scale on ``atol``; before the symptoms, the
    eps the student used, when ``eps_finding(case, value)`` recognises one."""
    def judge(case, value, ref):
        scaled = _scaled(ref, **tol)
        finding = compare_arrays(value, ref, **scaled)
        if finding is None or finding.key == "common.not_an_array":
            return finding
        found = eps_finding(case, value) if eps_finding else None
        return found or matches_reference(symptoms, **scaled)(case, value, ref)
    return judge


# ---------------------------------------------------------------- an item: its code, its result's type, its values

TENSOR_TYPES = ("Tensor", "Parameter")
FLOAT32 = "torch.float32"  # every input is float32 (the ids int64), and so is every result
RETURNS_TENSOR = Promise("returns one float32 tensor", "the probe sends the result's type and raw dtype: "
                         "mlm.not_a_tensor, then common.wrong_dtype before the values",
                         keys=("mlm.not_a_tensor", "common.wrong_dtype"))
WHOLE_TENSORS = Promise("Work on whole tensors: no Python loop over heads or positions.",
                        "cost case mlm.case_cost: the ATen operations one call dispatches, counted in the kernel "
                        "at two sizes of each dimension, may not grow with it (mlm.cost_grows, or "
                        "mlm.python_loop with the loop's line when the source shows it)",
                        keys=("mlm.cost_grows", "mlm.python_loop"))


def checked(item: str, judge_values, loops_over_blocks: bool = False, judge_gradient=None):
    """The judge of an item: first what the code may not do (a forbidden built-in; on
    the cost case, a cost that grows), then the result's type (one float32 tensor), then its
    values (on the gradient case, the shared table's gradient, ``judge_gradient``)."""
    def judge(case, value, ref):
        if not isinstance(value, dict) or "out" not in value:
            return Finding("common.not_judged", {"reason": "the probe's record has no result"})
        finding = code_finding(value)
        if finding is not None or case.label == COST:
            return finding or cost_finding(item, case, value, loops_over_blocks)
        if value.get("type") not in TENSOR_TYPES:
            return Finding("mlm.not_a_tensor", {"type": str(value.get("type"))})
        if value.get("dtype") != FLOAT32:  # float64 or bfloat16 from float32 inputs: a slip, whatever the values
            return Finding("common.wrong_dtype", {"got": str(value.get("dtype")), "expected": FLOAT32})
        if case.label in (GRADIENT, ATTENTION_GRADIENT) and judge_gradient is not None:
            return judge_gradient(case, value, ref)
        return judge_values(case, value["out"], ref)
    return judge


def exercise(name: str, points: int, promises, cases, reference, judge_values, cost, loops_over_blocks=False,
             judge_gradient=None, errors=()) -> Item:
    """An item of this chapter: the probe of the same name calls the student's function
    in the kernel, and the judge checks its code before its values.  The cost case
    (``cost()``) comes right after the worked examples."""
    def drawn():
        found = cases()
        public = sum(case.public for case in found)
        return found[:public] + [cost()] + found[public:]

    return Item(name=name, points=points, probe=name, promises=promises, cases=drawn,
                reference=lambda case: None if case.label == COST else reference(case),
                judge=checked(name, judge_values, loops_over_blocks, judge_gradient), errors=errors)


# ---------------------------------------------------------------- layer_norm(x, eps=1e-5)

LN_TOL = dict(rtol=1e-4, atol=1e-4)


def _ln_reference(x, eps=None, **switches):
    return layer_norm_ref(x, EPS if eps is None else eps, **switches)


def _layer_norm_eps(case, value):
    asked = EPS if case.args.get("eps") is None else case.args["eps"]
    got = eps_used(_ln_reference, LN_TOL, asked, {"x": case.args["x"]}, value)
    return None if got is None else Finding("mlm.eps_value", {"got": f"{got:g}", "expected": f"{asked:g}"})


LAYER_NORM_ITEM = exercise(
    "layer_norm", 1,
    promises=(
        Promise("layer_norm(x, eps=1e-5)", "the probe calls layer_norm(x) and layer_norm(x, eps=...) by keyword"),
        Promise("normalises the last axis of a tensor of any shape", "hidden cases 1-D (16,), 2-D (7, 5), 3-D, 4-D "
                "(2, 3, 4, 8), one feature (5, 1), two features (2, 5, 2), 128 features offset by 10"),
        Promise("without learned scale or shift", "values against the reference"),
        Promise("(x - mean) / sqrt(var + eps)", "symptom mlm.eps_outside (eps added to the standard deviation)",
                keys=("mlm.eps_outside",)),
        Promise("eps=1e-5 by default, eps used when passed", "hidden case of variance near eps with a constant row "
                "(first hidden case), cases eps=0.1 and eps=1e-12: mlm.eps_value names the eps used (0, 1e-12, ...)",
                keys=("mlm.eps_value",)),
        Promise("var is the biased variance (divide by d, not d - 1)", "symptom mlm.unbiased_variance",
                keys=("mlm.unbiased_variance",)),
        RETURNS_TENSOR,
        Promise("nn.LayerNorm / F.layer_norm are not allowed", "raise while checked (probe.py); source check of "
                "every spelling (F.layer_norm, torch.layer_norm, torch.ops.aten.native_layer_norm, getattr(..., "
                "'layer_norm'), a name bound by import ... as) with its line; runtime: aten.native_layer_norm "
                "dispatched", keys=("mlm.forbidden_layer_norm",)),
        WHOLE_TENSORS,
    ),
    cases=ln_cases, reference=lambda case: _ln_reference(**case.args), cost=lambda: tensor_cost("layer_norm"),
    judge_values=values_judge((
        Symptom("mlm.unbiased_variance", _is(_ln_reference, LN_TOL, unbiased=True)),
        Symptom("mlm.eps_outside", _is(_ln_reference, LN_TOL, eps_outside=True)),
    ), LN_TOL, _layer_norm_eps),
)


# ---------------------------------------------------------------- gelu_tanh(x)

GELU_TOL = dict(rtol=1e-5, atol=1e-6)


GELU_ITEM = exercise(
    "gelu_tanh", 1,
    promises=(
        Promise("gelu_tanh(x), elementwise, any shape", "cases (13,), (4, 64, 128), (63, 1), (2, 3, 4, 5)"),
        Promise("the tanh form 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³)))",
                "values (rtol 1e-5); symptom mlm.exact_gelu", keys=("mlm.exact_gelu",)),
        Promise("finite for large inputs", "hidden case |x| up to 100"),
        RETURNS_TENSOR,
        Promise("F.gelu is not allowed", "raise while checked; source check (F.gelu, torch._C._nn.gelu, "
                "torch.ops.aten.gelu, getattr(torch.ops.aten, 'gelu'), from torch.nn.functional import gelu as g) "
                "with its line; runtime: aten.gelu dispatched", keys=("mlm.forbidden_gelu",)),
        WHOLE_TENSORS,
    ),
    cases=gelu_cases, reference=lambda case: gelu_ref(case.args["x"]), cost=lambda: tensor_cost("gelu_tanh"),
    judge_values=values_judge((Symptom("mlm.exact_gelu", _is(gelu_ref, GELU_TOL, exact=True)),), GELU_TOL),
)


# --------------------------------------------------------------- multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads)

MHA_TOL = dict(rtol=1e-4, atol=1e-4)


def _any_wrong_split(reference, tol):
    def test(case, value, ref):
        return any(_close(value, reference(**case.args, split=s, merge=m), **tol)
                   for s, m in product(LAYOUTS, LAYOUTS) if (s, m) != ("heads", "heads"))
    return test


def attention_symptoms(reference, tol) -> tuple[Symptom, ...]:
    """The attention mistakes, as seen through ``reference`` (attention alone, or the forward pass)."""
    return (
        Symptom("mlm.causal_mask", _is(reference, tol, causal=True)),
        Symptom("mlm.missing_scale", _is(reference, tol, scale=False)),
        Symptom("mlm.softmax_axis", _is(reference, tol, softmax_axis=-2)),
        Symptom("mlm.head_split", _any_wrong_split(reference, tol)),
    )


# The attention's gradient.  Scores taken to NumPy (a softmax there, scipy's, or a
# .detach() on the way) give the right output and cut the gradient to x, w_q and w_k:
# only the gradient shows it.  The gradient case sends, raw, the gradient that
# sum(out * C) leaves in x and in each weight (C a fixed random cotangent); the grader
# knows each one along fixed random directions, by central differences of the
# reference in float64, and names every input whose gradient is missing or wrong.
def attention_reference(case: Case):
    """The output; on the gradient case also, for each input, the gradient of
    sum(out * C) along each of its directions."""
    args = {k: v for k, v in case.args.items() if k != "cotangent"}
    if case.label != ATTENTION_GRADIENT:
        return mha_ref(**args)
    cot = np.asarray(case.args["cotangent"], np.float64)
    loss = lambda **changed: float(np.sum(cot * mha_ref(**{**args, **changed})))
    rng = np.random.default_rng(0)
    ref = {"out": mha_ref(**args)}
    for name in ATTENTION_INPUTS:
        at = np.asarray(args[name], np.float64)
        directions = rng.normal(0.0, 1.0, (GRADIENT_DIRECTIONS, *at.shape))
        along = [(loss(**{name: at + GRADIENT_STEP * u}) - loss(**{name: at - GRADIENT_STEP * u})) / (2 * GRADIENT_STEP)
                 for u in directions]
        ref[name] = {"directions": directions, "along": np.array(along)}
    return ref


def judge_attention_gradient(case: Case, value: dict, ref: dict) -> Finding | None:
    """The output, then the gradient in x and every weight: the inputs it misses, named."""
    finding = compare_arrays(value["out"], ref["out"], **_scaled(ref["out"], **MHA_TOL))
    if finding is not None:
        return finding
    grads = value.get("grads")
    if not isinstance(grads, dict):
        return Finding("common.malformed_record")
    cut = []
    for name in ATTENTION_INPUTS:
        grad, want = as_numbers(grads.get(name)), ref[name]
        if grad is None or grad.shape != want["directions"].shape[1:]:
            cut.append(name)
            continue
        got = np.tensordot(want["directions"], grad.astype(np.float64), axes=grad.ndim)
        scale = GRADIENT_RTOL * max(float(np.max(np.abs(want["along"]))), 1e-12)
        if not np.allclose(got, want["along"], rtol=GRADIENT_RTOL, atol=scale):
            cut.append(name)
    return Finding("mlm.attention_gradient_cut", {"names": ", ".join(cut)}) if cut else None


ATTENTION_ITEM = exercise(
    "multi_head_attention", 2,
    promises=(
        Promise("multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads), x (N, T, d_model)",
                "hidden cases N 1-4, T 1-64, d_model 4-128, heads 1 to d_model (d_head = 1)"),
        Promise("weights applied as x @ W, no biases", "values against the reference"),
        Promise("heads of d_head contiguous features", "symptom mlm.head_split (flat or strided split, any merge)",
                keys=("mlm.head_split",)),
        Promise("scores q @ kᵀ / sqrt(d_head)", "symptom mlm.missing_scale", keys=("mlm.missing_scale",)),
        Promise("softmax over the keys", "symptom mlm.softmax_axis", keys=("mlm.softmax_axis",)),
        Promise("no mask: every position sees every other one", "symptom mlm.causal_mask", keys=("mlm.causal_mask",)),
        Promise("heads back together in the same order, then @ w_o", "mlm.head_split covers every wrong merge",
                keys=("mlm.head_split",)),
        RETURNS_TENSOR,
        Promise("nn.MultiheadAttention, F.scaled_dot_product_attention not allowed", "raise while checked; source "
                "check of the names with their line; runtime: aten._native_multi_head_attention, "
                "aten._scaled_dot_product_*", keys=("mlm.forbidden_attention",)),
        Promise("the gradient reaches x and every weight (the attention trains as part of a model)",
                "gradient case mlm.case_attention_gradient: the raw gradients of sum(out * C) in x, w_q, w_k, "
                "w_v, w_o, along three random directions each, against central differences of the reference; "
                ".numpy() on a tensor that requires grad", keys=("mlm.attention_gradient_cut", "mlm.attention_numpy")),
        WHOLE_TENSORS,
    ),
    cases=lambda: mha_cases() + [attention_gradient_case()], reference=attention_reference, cost=mha_cost,
    judge_values=values_judge(attention_symptoms(mha_ref, MHA_TOL), MHA_TOL),
    judge_gradient=judge_attention_gradient,
    # .numpy() on a tensor that requires grad (the gradient case's inputs do).
    errors=(ErrorPattern("mlm.attention_numpy", r"RuntimeError", r"numpy\(\) on Tensor that requires grad"),),
)


# -------------------------------------------------------------- mlm_forward_tied(input_ids, mask_indicator, w_emb, ...)

FORWARD_TOL = dict(rtol=1e-5, atol=1e-5)


def _separate_head(case, value, ref) -> bool:
    """Tied logits are ``h @ E.T``: every row lies in the span of E's columns."""
    emb = np.asarray(case.args["w_emb"], np.float64)
    value = np.asarray(value, np.float64)
    v, d = emb.shape
    if v <= d or value.ndim != 2 or value.shape[0] == 0 or value.shape[1] != v or not np.all(np.isfinite(value)):
        return False
    coef, *_ = np.linalg.lstsq(emb, value.T, rcond=None)
    residual = np.linalg.norm(value.T - emb @ coef)
    return bool(residual > 1e-3 * max(np.linalg.norm(value), 1e-12))


def _forward_eps(case, value):
    got = eps_used(forward_ref, FORWARD_TOL, EPS, case.args, value, name="ln_eps")
    return None if got is None else Finding("mlm.forward_eps", {"got": f"{got:g}"})


# The tie's gradient.  w_emb is used twice, by the lookup and by the head, so its
# gradient is the sum of the two paths; a head on w_emb.detach() (or a lookup in it)
# still gives the right logits, and only the gradient shows it.  The gradient case
# sends, raw, the gradient that sum(logits * C) leaves in w_emb (C a fixed random
# cotangent).  The grader knows the head's path exactly, C.T @ x (x, the final hidden
# states of the masked rows, is the forward pass with the identity for the head), and
# the lookup's along fixed random directions, by central differences of the forward
# pass with the head held still: the student's gradient along each direction must be
# the sum of the two.


def forward_reference(case: Case):
    """The logits; on the gradient case also the two paths of the tie along each direction."""
    args = {k: v for k, v in case.args.items() if k != "cotangent"}
    if case.label != GRADIENT:
        return forward_ref(**args)
    cot, emb = np.asarray(case.args["cotangent"], np.float64), np.asarray(args["w_emb"], np.float64)
    directions = np.random.default_rng(0).normal(0.0, 1.0, (GRADIENT_DIRECTIONS, *emb.shape))
    loss = lambda table: float(np.sum(cot * forward_ref(**{**args, "w_emb": table}, head=emb)))
    lookup = [(loss(emb + GRADIENT_STEP * u) - loss(emb - GRADIENT_STEP * u)) / (2 * GRADIENT_STEP) for u in directions]
    head = cot.T @ forward_ref(**args, head=np.eye(emb.shape[1]))
    return {"logits": forward_ref(**args), "directions": directions, "lookup": np.array(lookup),
            "head": np.einsum("vd,kvd->k", head, directions)}


def judge_tie_gradient(case: Case, value: dict, ref: dict) -> Finding | None:
    """The logits, then the gradient in w_emb: the sum of both paths, or the path that is missing."""
    finding = compare_arrays(value["out"], ref["logits"], **_scaled(ref["logits"], **FORWARD_TOL))
    if finding is not None:
        return finding
    grad = as_numbers(value.get("grad"))
    if grad is None:
        return Finding("mlm.tie_no_gradient")
    if grad.shape != ref["directions"].shape[1:]:
        return Finding("common.malformed_record")
    got = np.einsum("vd,kvd->k", grad.astype(np.float64), ref["directions"])
    total = ref["lookup"] + ref["head"]
    along = lambda want: bool(np.allclose(got, want, rtol=GRADIENT_RTOL, atol=GRADIENT_RTOL * np.max(np.abs(total))))
    if along(total):
        return None
    if along(ref["lookup"]):
        return Finding("mlm.tie_head_detached")
    if along(ref["head"]):
        return Finding("mlm.tie_lookup_detached")
    return Finding("mlm.tie_gradient_wrong")


FORWARD_ITEM = exercise(
    "mlm_forward_tied", 3,
    promises=(
        Promise("mlm_forward_tied(input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads) with the "
                "table's shapes and dtypes", "cases N 1-4, T 1-64, V 6-200 (V < d_model too), d_model 4-128, "
                "heads 1-8"),
        Promise("x = w_emb[input_ids] + pos_embed", "values against the reference"),
        Promise("for every block (there may be none)", "cases with 0, 1, 2 and 3 blocks (the notebook's bare "
                "example)"),
        Promise("pre-LN: x + MHA(LN(x)), then x + FFN(LN(x)), LN with its default eps", "symptoms mlm.post_ln, "
                "mlm.forward_eps (hidden case of small embeddings, where eps matters)",
                keys=("mlm.post_ln", "mlm.forward_eps")),
        Promise("FFN(u) = gelu_tanh(u @ w_mlp1) @ w_mlp2", "values; symptom mlm.exact_gelu when GELU is inlined",
                keys=("mlm.exact_gelu",)),
        Promise("judged on its own", "the probe runs it with the reference layer_norm, gelu_tanh and "
                "multi_head_attention in place of the student's"),
        Promise("tied head x @ w_emb.T, no other matrix, no final LayerNorm", "symptom mlm.separate_head",
                keys=("mlm.separate_head",)),
        Promise("both uses of w_emb carry its gradient: the sum of the lookup's path and the head's",
                "gradient case mlm.case_gradient: the raw gradient of sum(logits * C) in w_emb, along three random "
                "directions, against the head's path (exact) plus the lookup's (central differences)",
                keys=("mlm.tie_head_detached", "mlm.tie_lookup_detached", "mlm.tie_no_gradient",
                      "mlm.tie_gradient_wrong")),
        Promise("return logits_all[mask_indicator > 0.5], (M, V), batch-then-position order",
                "masks some, none (M = 0) and all; symptom mlm.not_gathered", keys=("mlm.not_gathered",)),
        RETURNS_TENSOR,
        Promise("no Python loop over heads or positions (the loop over the blocks is the one allowed)",
                "cost case: the dispatched operations may not grow with heads, T, N or the masked positions M "
                "(the blocks stay one); mlm.python_loop_forward names a loop not over blocks_weights",
                keys=("mlm.python_loop_forward",)),
        Promise("forbidden built-ins", "as in the helpers: raise, source check, dispatched operations"),
    ),
    cases=lambda: forward_cases() + [gradient_case()], reference=forward_reference, cost=forward_cost,
    judge_values=values_judge((
        Symptom("mlm.separate_head", _separate_head),
        Symptom("mlm.not_gathered", _is(forward_ref, FORWARD_TOL, gathered=False)),
        Symptom("mlm.post_ln", _is(forward_ref, FORWARD_TOL, post_ln=True)),
        Symptom("mlm.unbiased_variance", _is(forward_ref, FORWARD_TOL, unbiased=True)),
        Symptom("mlm.eps_outside", _is(forward_ref, FORWARD_TOL, eps_outside=True)),
        Symptom("mlm.exact_gelu", _is(forward_ref, FORWARD_TOL, exact=True)),
        *attention_symptoms(forward_ref, FORWARD_TOL),
    ), FORWARD_TOL, _forward_eps),
    loops_over_blocks=True, judge_gradient=judge_tie_gradient,
    # A conversion to NumPy of w_emb, which requires grad on the gradient case.
    errors=(ErrorPattern("mlm.tie_no_gradient", r"RuntimeError", r"requires grad"),),
)


CHAPTER = Chapter(
    id="05_mlm",
    title="A masked LM with a tied head, in PyTorch",
    probe_module="grader.chapters.mlm.probe",
    errors=FORBIDDEN,
    items=(LAYER_NORM_ITEM, GELU_ITEM, ATTENTION_ITEM, FORWARD_ITEM),
)

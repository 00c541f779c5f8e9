"""Chapter 05, a BERT-style masked LM with a tied head, from scratch in PyTorch:
``layer_norm``, ``gelu_tanh``, ``multi_head_attention`` and ``mlm_forward_tied``.

The references are written once, in float64 NumPy, with switches for the mistakes the
chapter teaches (unbiased variance, eps outside the square root, exact-erf GELU, causal
mask, missing scale, softmax over the queries, heads split the wrong way, post-LN, no
gather).  A symptom recomputes the reference with one switch flipped and asks whether
the student's value is that one.  A separate head is recognised by logits that leave
the span of the embedding's columns.

What the text forbids is checked three ways: in the kernel the forbidden built-ins
raise ``ForbiddenFunctionError`` naming themselves (see ``probe.py``); the source of
the function and of the notebook's functions it calls comes back raw and
``grader.chapters.source_checks`` finds loops and forbidden names in it, with their line; and
the raw list of ATen operations the call dispatched catches a built-in reached under
a name no source shows.  ``mlm_forward_tied`` runs with the reference helpers in place
of the student's, so each helper's mistake costs its own points once.

What every exercise shares comes first (the notebook's examples, the tolerances, what
the code may not do), then one block per exercise, in the notebook's order, each
ending with its ``Item``.
"""
from __future__ import annotations

import math
from itertools import product

import numpy as np

import grader.chapters.source_checks as source_checks
from grader.comparisons import as_numbers, close, compare_arrays, matches_reference
from grader.drawing import hidden_rng, softmax
from grader.registry import Case, Chapter, ErrorPattern, Finding, Item, Promise, Symptom

EPS = 1e-5
# eps values a LayerNorm is written with: BERT's, none, T5's and Llama's, this exercise's.
EPS_SEEN = (1e-12, 0.0, 1e-6, 1e-5, 1e-8, 1e-3)


def _normal(rng, shape, std):
    return rng.normal(0.0, std, shape).astype(np.float32)


def _sizes(array) -> str:
    return f"x: {tuple(int(n) for n in np.shape(array))}"


def notebook_examples() -> dict:
    """The worked examples exactly as the notebook makes them: its seed, its draws, in
    its order (cells of the solution; ``torch.manual_seed(0)`` in its first cell).

    The draws come from a generator of their own, seeded as the notebook seeds the global
    one (the same numbers): the grader draws cases in several threads at once (a batch,
    the references warmed while the kernel runs), and a shared generator would give each
    thread a different mix of them."""
    import torch

    g = torch.Generator().manual_seed(0)
    n, t, v, d = 2, 5, 11, 8
    x, w = torch.randn(2, 4, 8, generator=g), torch.randn(4, 8, 8, generator=g) / math.sqrt(8)
    ids = torch.randint(0, v, (n, t), generator=g)
    mask = torch.zeros(n, t)
    mask[0, 1] = mask[1, 0] = mask[1, 4] = 1.0
    w_emb, pos = torch.randn(v, d, generator=g), 0.5 * torch.randn(t, d, generator=g)
    blocks = torch.randn(1, 6, d, d, generator=g) / math.sqrt(d)
    forward = dict(input_ids=ids, mask_indicator=mask, w_emb=w_emb, pos_embed=pos, blocks_weights=blocks, num_heads=2)
    bare = dict(forward, mask_indicator=torch.ones(n, t), pos_embed=torch.zeros(t, d),
                blocks_weights=torch.zeros(0, 6, d, d))
    numpy = lambda args: {k: (a.numpy() if isinstance(a, torch.Tensor) else a) for k, a in args.items()}
    return {
        "layer_norm": {"x": torch.linspace(-1.0, 2.0, 12).reshape(1, 3, 4).numpy()},
        "gelu_tanh": {"x": torch.linspace(-3.0, 3.0, 13).numpy()},
        "multi_head_attention": {"x": x.numpy(), **dict(zip(("w_q", "w_k", "w_v", "w_o"), w.numpy())), "num_heads": 2},
        "forward": numpy(forward),
        "bare": numpy(bare),
    }


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


# ---------------------------------------------------------------- what the code may not do

LAYER_NORM, GELU, ATTENTION = "mlm.forbidden_layer_norm", "mlm.forbidden_gelu", "mlm.forbidden_attention"
# Attribute names (through any module or alias) of the built-ins the text forbids, and
# the finding each one gets.
FORBIDDEN_NAMES = {
    **dict.fromkeys(("layer_norm", "native_layer_norm", "LayerNorm"), LAYER_NORM),
    **dict.fromkeys(("gelu", "GELU"), GELU),
    **dict.fromkeys(("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward",
                     "_native_multi_head_attention", "TransformerEncoderLayer", "TransformerEncoder",
                     "_transformer_encoder_layer_fwd"), ATTENTION),
}
# ATen operations they dispatch, whatever name reached them (F.layer_norm and
# torch.ops.aten.layer_norm both run aten.native_layer_norm).
FORBIDDEN_OPS = {
    "aten.native_layer_norm": LAYER_NORM, "aten.layer_norm": LAYER_NORM, "aten.gelu": GELU,
    "aten._native_multi_head_attention": ATTENTION, "aten._transformer_encoder_layer_fwd": ATTENTION,
}
# In the kernel, a forbidden built-in raises naming itself (probe.py).
FORBIDDEN = (
    ErrorPattern("mlm.forbidden_attention", r"ForbiddenFunctionError", r"attention|transformer"),
    ErrorPattern("mlm.forbidden_layer_norm", r"ForbiddenFunctionError", r"layer_?norm"),
    ErrorPattern("mlm.forbidden_gelu", r"ForbiddenFunctionError", r"gelu"),
)
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


def _bound_to_forbidden(globals_: dict) -> dict[str, str]:
    """Global names bound to a forbidden built-in of torch (``g`` after ``... import gelu as g``)."""
    found = {}
    for name, what in (globals_ or {}).items():
        if isinstance(what, dict) and str(what.get("module", "")).startswith("torch") \
                and what.get("name") in FORBIDDEN_NAMES and what.get("type") != "module":
            found[name] = what["name"]
    return found


def _loop_allowances(code: dict, root: str, blocks: str | None) -> dict[str, set[str]]:
    """Per function, the names whose loops are allowed: in the forward pass its blocks
    parameter, and in a helper (of the notebook, or nested) the parameters that receive
    the blocks."""
    allowed = {name: set() for name in code}
    if blocks is None or root not in code:
        return allowed
    allowed[root] = {blocks}
    params = {name: source_checks.parameters(facts.get("source")) for name, facts in code.items()}
    for _ in range(len(code) + 1):
        for name, facts in code.items():
            source = facts.get("source")
            nested = source_checks.defined_functions(source)
            for callee, received in source_checks.calls_with(source, {**params, **nested}, allowed[name]).items():
                allowed[name if callee in nested else callee] |= received
    return allowed


def code_finding(value: dict) -> Finding | None:
    """A forbidden built-in in the code, named with its line; else a forbidden
    operation in what the call dispatched."""
    code = value.get("code") or {}
    for name, facts in code.items():
        for use in source_checks.forbidden_uses(facts.get("source"), name, FORBIDDEN_NAMES,
                                                _bound_to_forbidden(facts.get("globals"))):
            key, spelling = use.what.split("|", 1)
            return Finding(key, {"message": spelling, "line": use.where})
    for op in value.get("ops") or ():
        key = FORBIDDEN_OPS.get(op) or (ATTENTION if str(op).startswith("aten._scaled_dot_product") else None)
        if key:
            return Finding(key, {"message": op})
    return None


# ---------------------------------------------------------------- what the code may cost

# "No Python loop over heads or positions" is judged by what a loop costs: the number of
# ATen operations one call dispatches, counted in the kernel at a base size and with one
# dimension grown at a time.  Whole-tensor code dispatches as many at every size; a loop
# over heads, positions or masked rows dispatches at least one more per extra one,
# however it is spelled (for, a comprehension, map, filter, reduce, recursion).  A loop
# over a fixed handful (q, k, v; a block's six matrices; the blocks, whose number stays
# the same) costs the same at every size and passes.  The source is read only to name
# the line of the loop.
COST = "mlm.case_cost"
# The gradient cases (the tie's in mlm_forward_tied, the inputs' in multi_head_attention).
GRADIENT, ATTENTION_GRADIENT = "mlm.case_gradient", "mlm.case_attention_gradient"
GRADIENT_STEP, GRADIENT_DIRECTIONS, GRADIENT_RTOL = 1e-5, 3, 1e-3
SIZE_NAMES = {"n": "N", "t": "T", "h": "heads", "m": "M"}  # as the cost case's label shows them
DIMENSIONS = {"heads": "mlm.dimension_heads", "positions": "mlm.dimension_positions",
              "batch": "mlm.dimension_batch", "masked": "mlm.dimension_masked"}


def cost_case(make, base: dict[str, int], grown: dict[str, tuple[str, int]]) -> Case:
    """The cost case: ``make(**sizes)`` at ``base``, then with one size grown at a time
    (``grown``: dimension -> (size, larger value))."""
    variants = [make(**base)] + [make(**{**base, size: big}) for size, big in grown.values()]
    dims = [[dim, base[size], big] for dim, (size, big) in grown.items()]
    shown = ", ".join(f"{SIZE_NAMES[size]} {base[size]} → {big}" for size, big in grown.values())
    return Case(COST, {"variants": variants, "dims": dims}, shown={"shape": shown})


def _loop_line(item: str, value: dict, loops_over_blocks: bool):
    """The first loop of the code that is not over a fixed handful (or the blocks), to name its line."""
    code = value.get("code") or {}
    root_source = (code.get(item) or {}).get("source")
    blocks = (source_checks.parameters(root_source)[4:5] or [None])[0] if loops_over_blocks else None
    allowed = _loop_allowances(code, item, blocks)
    for name, facts in code.items():
        found = source_checks.loops(facts.get("source"), name, allowed[name])
        if found:
            return found[0]
    return None


def cost_finding(item: str, case: Case, value: dict, loops_over_blocks: bool) -> Finding | None:
    """The first dimension whose growth makes the call dispatch more operations: as
    many more as the dimension grew, or more (one operation or more per extra head,
    position or masked row)."""
    counts, dims = value.get("counts"), case.args["dims"]
    if not isinstance(counts, list) or len(counts) != len(dims) + 1 or not all(type(c) is int for c in counts):
        return Finding("common.malformed_record")
    for (dim, small, big), count in zip(dims, counts[1:]):
        if count - counts[0] >= big - small:
            params = {"dimension_key": DIMENSIONS[dim], "small": small, "big": big,
                      "count_small": counts[0], "count_big": count}
            loop = _loop_line(item, value, loops_over_blocks)
            if loop is None:
                return Finding("mlm.cost_grows", params)
            key = "mlm.python_loop_forward" if loops_over_blocks else "mlm.python_loop"
            return Finding(key, {**params, "function": loop.function, "line": loop.where})
    return None


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


def layer_norm_ref(x, eps=EPS, unbiased=False, eps_outside=False):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # the mistakes may divide 0 by 0, as the student's code did
        var = x.var(-1, ddof=1 if unbiased else 0, keepdims=True)
        if eps_outside:  # (x - mean) / (std + eps)
            return (x - mean) / (np.sqrt(var) + eps)
        return (x - mean) / np.sqrt(var + eps)


def ln_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/layer_norm")
    public = notebook_examples()["layer_norm"]["x"]
    found = [Case("case.worked_example", {"x": public}, True, {"shape": _sizes(public)})]
    # First the case that tells the eps mistakes apart: a variance near eps, and one
    # constant row, where no eps divides 0 by 0 and a tiny eps gives 0.
    small = _normal(rng, (2, 8, 32), 3e-3)
    small[1, 3] = 0.25
    found.append(Case("mlm.case_small_variance", {"x": small, "eps": None}, shown={"shape": _sizes(small)}))
    shapes = (
        # x, eps (None: the default)
        (_normal(rng, (2, 5, 2), 1.0), None),       # two features
        (_normal(rng, (7, 5), 1.0), None),          # 2-D
        (_normal(rng, (16,), 1.0), None),           # 1-D: "a tensor of any shape"
        (_normal(rng, (2, 3, 4, 8), 1.0), None),    # 4-D
        (_normal(rng, (5, 1), 1.0), None),          # one feature: all zeros
        (_normal(rng, (3, 6, 16), 0.5), 0.1),       # the eps argument is used
        (_normal(rng, (3, 6, 16), 0.01), 1e-12),    # BERT's eps, passed in: right here
        (10.0 + _normal(rng, (4, 64, 128), 3.0), None),  # offset and spread
    )
    for x, eps in shapes:
        shown = _sizes(x) if eps is None else f"{_sizes(x)}, eps={eps:g}"
        found.append(Case("case.hidden", {"x": x, "eps": eps}, shown={"shape": shown}))
    return found


def tensor_cost(item: str):
    """The cost case of a function of one tensor x (N, T, 8): positions and batch grown."""
    rng = hidden_rng(f"05_mlm/{item}/cost")
    return cost_case(lambda n, t: {"x": _normal(rng, (n, t, 8), 1.0)}, {"n": 2, "t": 4},
                     {"positions": ("t", 12), "batch": ("n", 6)})


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
_ERF = np.vectorize(math.erf, otypes=[np.float64])


def gelu_ref(x, exact=False):
    x = np.asarray(x, np.float64)
    if exact:
        return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gelu_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/gelu_tanh")
    public = notebook_examples()["gelu_tanh"]["x"]
    wide = np.concatenate([np.linspace(-30, 30, 61), [-100.0, 100.0]]).astype(np.float32).reshape(-1, 1)
    return [
        Case("case.worked_example", {"x": public}, True, {"shape": _sizes(public)}),
        Case("case.hidden", {"x": _normal(rng, (4, 64, 128), 3.0)}, shown={"shape": "x: (4, 64, 128), std 3"}),
        Case("case.hidden", {"x": wide}, shown={"shape": "x: (63, 1), |x| ≤ 100"}),
        Case("case.hidden", {"x": _normal(rng, (2, 3, 4, 5), 2.0)}, shown={"shape": "x: (2, 3, 4, 5)"}),
    ]


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
LAYOUTS = ("heads", "flat", "interleaved")
# (N, T, d, heads) of the hidden attention cases, to d_head = 1 and T = 64.
MHA_SHAPES = ((1, 1, 4, 1), (2, 6, 12, 3), (3, 9, 16, 8), (2, 5, 6, 6), (4, 64, 128, 8), (1, 7, 8, 1))


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


def _mha_shape(n, t, d, heads) -> str:
    return f"N={n}, T={t}, d_model={d}, heads={heads}"


def mha_cases() -> list[Case]:
    public = notebook_examples()["multi_head_attention"]
    found = [Case("case.worked_example", public, True, {"shape": _mha_shape(2, 4, 8, 2)})]
    rng = hidden_rng("05_mlm/multi_head_attention")
    for n, t, d, heads in MHA_SHAPES:
        weights = {k: _normal(rng, (d, d), d**-0.5) for k in ("w_q", "w_k", "w_v", "w_o")}
        args = {"x": _normal(rng, (n, t, d), 1.0), **weights, "num_heads": heads}
        # Queries and keys a little larger than 1/sqrt(d) make the scores spread,
        # so that a missing scale or a wrong softmax axis moves the result visibly.
        args["w_q"] *= 2.0
        args["w_k"] *= 2.0
        found.append(Case("case.hidden", args, shown={"shape": _mha_shape(n, t, d, heads)}))
    return found


def mha_cost() -> Case:
    """Heads (d_model 16), positions and batch grown."""
    rng = hidden_rng("05_mlm/multi_head_attention/cost")

    def make(n, t, h):
        return {"x": _normal(rng, (n, t, 16), 1.0), **{k: _normal(rng, (16, 16), 0.25) for k in
                ("w_q", "w_k", "w_v", "w_o")}, "num_heads": h}
    return cost_case(make, {"n": 2, "t": 4, "h": 2}, {"heads": ("h", 8), "positions": ("t", 12), "batch": ("n", 6)})


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
ATTENTION_INPUTS = ("x", "w_q", "w_k", "w_v", "w_o")
ATTENTION_GRADIENT_SHAPE = (2, 5, 8, 2)


def attention_gradient_case() -> Case:
    rng = hidden_rng("05_mlm/multi_head_attention/gradient")
    n, t, d, heads = ATTENTION_GRADIENT_SHAPE
    args = {"x": _normal(rng, (n, t, d), 1.0), **{k: _normal(rng, (d, d), 2 * d**-0.5) for k in ATTENTION_INPUTS[1:]},
            "num_heads": heads, "cotangent": _normal(rng, (n, t, d), 1.0)}
    return Case(ATTENTION_GRADIENT, args, shown={"shape": _mha_shape(n, t, d, heads)})


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
# (N, T, V, d, heads, blocks, mask) of the hidden forward cases.
# mask: "some" (at least one masked, at least one not), "none" or "all".
FORWARD_SHAPES = (
    (1, 1, 7, 4, 1, 0, "all"),
    (2, 6, 20, 8, 2, 2, "none"),
    (2, 8, 40, 16, 4, 0, "some"),
    (3, 10, 50, 16, 4, 1, "some"),
    (1, 4, 6, 16, 2, 1, "some"),  # V < d: the head still multiplies by w_emb.T
    (2, 7, 30, 12, 3, 3, "all"),
    (2, 16, 64, 32, 1, 2, "some"),
    (4, 64, 200, 128, 8, 3, "some"),
)
# Embeddings this small put the blocks' LayerNorm inputs near eps, where its value matters.
SMALL_EMBEDDINGS = (2, 6, 24, 16, 2, 2, "some")


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


def _mask(rng, n, t, kind):
    if kind == "none":
        return np.zeros((n, t), np.float32)
    if kind == "all":
        return np.ones((n, t), np.float32)
    mask = (rng.random((n, t)) < 0.3).astype(np.float32)
    mask.flat[0], mask.flat[-1] = 1.0, 0.0  # at least one of each
    return mask


def _forward_shape(args) -> str:
    n, t = np.shape(args["input_ids"])
    v, d = np.shape(args["w_emb"])
    masked = int(np.sum(np.asarray(args["mask_indicator"]) > 0.5))
    return (f"N={n}, T={t}, V={v}, d_model={d}, heads={args['num_heads']}, "
            f"blocks={len(args['blocks_weights'])}, M={masked}")


def _forward_args(rng, shape, emb_std=1.0, pos_std=0.5):
    n, t, v, d, heads, blocks, kind = shape
    packed = _normal(rng, (blocks, 6, d, d), d**-0.5)
    packed[:, 4] *= 2.0  # spread the GELU inputs to where tanh and erf differ most
    return dict(input_ids=rng.integers(0, v, (n, t)).astype(np.int64), mask_indicator=_mask(rng, n, t, kind),
                w_emb=_normal(rng, (v, d), emb_std), pos_embed=_normal(rng, (t, d), pos_std),
                blocks_weights=packed, num_heads=heads)


def forward_cases() -> list[Case]:
    examples = notebook_examples()
    found = [Case("case.worked_example", args, True, {"shape": _forward_shape(args)})
             for args in (examples["forward"], examples["bare"])]
    rng = hidden_rng("05_mlm/mlm_forward_tied")
    for shape in FORWARD_SHAPES:
        args = _forward_args(rng, shape)
        found.append(Case("case.hidden", args, shown={"shape": _forward_shape(args)}))
    args = _forward_args(rng, SMALL_EMBEDDINGS, emb_std=2e-3, pos_std=2e-3)
    found.append(Case("mlm.case_small_embeddings", args, shown={"shape": _forward_shape(args)}))
    return found


def forward_cost() -> Case:
    """Heads, positions, batch and masked positions grown; one block at every size."""
    rng = hidden_rng("05_mlm/mlm_forward_tied/cost")

    def make(n, t, h, m):
        args = _forward_args(rng, (n, t, 10, 16, h, 1, "none"))
        args["mask_indicator"].flat[:m] = 1.0
        return args
    return cost_case(make, {"n": 2, "t": 4, "h": 2, "m": 2},
                     {"heads": ("h", 8), "positions": ("t", 12), "batch": ("n", 6), "masked": ("m", 7)})


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
GRADIENT_SHAPE = (2, 5, 12, 8, 2, 1, "some")


def gradient_case() -> Case:
    rng = hidden_rng("05_mlm/mlm_forward_tied/gradient")
    args = _forward_args(rng, GRADIENT_SHAPE)
    masked = int(np.sum(args["mask_indicator"] > 0.5))
    args["cotangent"] = _normal(rng, (masked, GRADIENT_SHAPE[2]), 1.0)
    return Case(GRADIENT, args, shown={"shape": _forward_shape(args)})


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

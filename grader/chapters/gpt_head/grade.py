"""Chapter 04, the LM head of a small GPT in NumPy: the loss, the tied forward, the two
gradient paths into a tied matrix, and sampling with a temperature.

Beside this module: ``reference.py``, the references (PyTorch in float64, none of them
the hand-written NumPy the exercise asks for), and ``cases.py``, the worked examples and
the hidden cases.  Here: the symptoms, which re-create known mistakes in NumPy, the
judges, and one block per exercise in the notebook's order, each ending with its ``Item``.

Every exercise asks for plain NumPy (``grader.chapters.plain_numpy``): every item's fact
carries the source of the student's function, raw, and a framework in it is
gpt_head.framework_used, with its line.
"""
from __future__ import annotations

import builtins

import numpy as np

from grader.chapters.gpt_head.cases import (
    ce_cases,
    forward_cases,
    grad_cases,
    greedy_cases,
    sample_cases,
)
from grader.chapters.gpt_head.reference import LN_EPS, reference_ce, reference_forward, reference_grads, reference_probs
from grader.chapters.plain_numpy import numpy_only, plain_numpy_promise
from grader.comparisons import close, compare_arrays, describe_shape, matches_reference
from grader.drawing import softmax
from grader.registry import Case, Chapter, ErrorPattern, Finding, Item, Promise, Symptom

FRAMEWORK_USED = "gpt_head.framework_used"  # a framework in code that must be plain NumPy
PLAIN_NUMPY = plain_numpy_promise(FRAMEWORK_USED)


# ---------------------------------------------------------------- cross_entropy_from_logits(logits, targets) -> loss


def _same(value, wrong) -> bool:
    """Equal within 1e-6, with NaN equal to NaN and infinities of one sign equal."""
    value, wrong = np.asarray(value, np.float64), np.asarray(wrong, np.float64)
    if value.shape != wrong.shape:
        return False
    return bool(np.all(np.isclose(value, wrong, rtol=1e-6, atol=1e-8, equal_nan=True) | (value == wrong)))


def _ce_unstable(case: Case) -> dict:
    """The loss as each numerically unstable mistake computes it (NumPy float64, warnings off)."""
    logits, targets = case.args["args"]
    x, t = np.asarray(logits, np.float64), np.asarray(targets, int)
    rows = np.arange(len(t))
    with np.errstate(all="ignore"):
        p = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
        shifted = np.exp(x - x.max(-1, keepdims=True))
        q = shifted / shifted.sum(-1, keepdims=True)
        return {
            "unshifted": [-np.mean(np.log(p[rows, t])), np.mean(np.log(np.exp(x).sum(-1)) - x[rows, t])],
            "log_of_softmax": [-np.mean(np.log(q[rows, t]))],
        }


def _ce_is(mistake: str):
    """A symptom test: an infinite or NaN loss, as ``mistake`` computes it."""
    return lambda case, value, ref: not np.all(np.isfinite(value)) and any(
        _same(value, wrong) for wrong in _ce_unstable(case)[mistake])


def _ce_summed(case: Case, value, ref) -> bool:
    t = len(case.args["args"][1])
    return t > 1 and close(value, t * ref, 1e-5, 1e-7)


def _ce_not_averaged(case: Case, value, ref) -> bool:
    t = len(case.args["args"][1])
    value = np.asarray(value, np.float64)
    return value.shape == (t,) and t > 1 and close(np.mean(value), ref, 1e-5, 1e-7)


CROSS_ENTROPY = Item(
    name="cross_entropy_from_logits", points=2, probe="numpy_call",
    promises=(
        Promise("cross_entropy_from_logits(logits, targets), logits (T, V), integer targets (T,)",
                "cases T 1-12, V 1-64; targets int64, int32 and, as the notebook passes them, a list"),
        Promise("returns the mean over the T positions of -log softmax(logits[t])[targets[t]]",
                "values (rtol 1e-5); symptoms gpt_head.loss_summed, gpt_head.loss_not_averaged",
                keys=("gpt_head.loss_summed", "gpt_head.loss_not_averaged")),
        Promise("as one number", "the reference is 0-d: a (T,) array is gpt_head.loss_not_averaged, any other "
                "shape common.wrong_shape; a tuple, list or dict common.not_one_array, from the raw type",
                keys=("gpt_head.loss_not_averaged", "common.wrong_shape", "common.not_one_array")),
        Promise("finite for logits of magnitude 1e4: never exponentiate a logit as it is",
                "the notebook's 1e4 calls (public), hidden cases near +1e4, near -1e4 and of spread 1e4; symptoms "
                "gpt_head.unshifted_softmax, gpt_head.log_of_softmax",
                keys=("gpt_head.unshifted_softmax", "gpt_head.log_of_softmax")),
        PLAIN_NUMPY,
    ),
    cases=ce_cases, reference=reference_ce,
    judge=numpy_only(matches_reference((
        # A spread of 1e4 makes both mistakes infinite; the unshifted one has
        # already failed on the earlier case of logits near +1e4.
        Symptom("gpt_head.log_of_softmax", _ce_is("log_of_softmax")),
        Symptom("gpt_head.unshifted_softmax", _ce_is("unshifted")),
        Symptom("gpt_head.loss_summed", _ce_summed),
        Symptom("gpt_head.loss_not_averaged", _ce_not_averaged),
    ), rtol=1e-5, atol=1e-7), FRAMEWORK_USED, one_array=True),
)


# ---------------------------------------------------------------- tied_head_forward(tokens, E) -> logits (T, V)


def _fwd_softmax_inside(case: Case, value, ref) -> bool:
    log_p = ref - ref.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    return close(value, softmax(ref), 1e-4, 1e-7) or close(value, log_p, 1e-4, 1e-7)


def _fwd_no_layernorm(case: Case, value, ref) -> bool:
    tokens, e = case.args["args"]
    return close(value, e[tokens] @ e.T, 1e-4, 1e-7)


def _ln_variants(x):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    yield (x - mean) / np.sqrt(var)                       # no eps
    yield (x - mean) / (np.sqrt(var) + LN_EPS)            # eps outside the root
    yield (x - mean) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + LN_EPS)  # sample variance
    if x.shape[0] > 1:
        yield (x - x.mean(0)) / np.sqrt(x.var(0) + LN_EPS)  # over the positions, not the features
    yield (x - mean) / (var + LN_EPS)                     # variance instead of its root


def _fwd_layernorm_variant(case: Case, value, ref) -> bool:
    tokens, e = case.args["args"]
    with np.errstate(all="ignore"):
        return any(close(value, y @ e.T, 1e-4, 1e-7) for y in _ln_variants(e[tokens]))


FORWARD = Item(
    name="tied_head_forward", points=2, probe="numpy_call",
    promises=(
        Promise("tied_head_forward(tokens, E), E (V, d)", "cases T 1-64, V 3-64, d 4-64, V < d and V > d, "
                "repeated ids"),
        Promise("look the ids up in E", "values; symptom gpt_head.missing_layernorm names a lookup without the norm",
                keys=("gpt_head.missing_layernorm",)),
        Promise("final LayerNorm without affine parameters, (x - mean) / sqrt(var + 1e-5), last axis, population "
                "variance", "symptom gpt_head.layernorm_variant (no eps, eps outside the root, ddof=1, wrong axis, "
                "no root)", keys=("gpt_head.layernorm_variant",)),
        Promise("project with the transpose of the same E", "the worked example has V != d: x @ E raises, and that "
                "matmul error is gpt_head.projection_shapes, in this item only", keys=("gpt_head.projection_shapes",)),
        Promise("returns logits of shape (T, V), not probabilities", "symptom gpt_head.softmax_in_forward; "
                "common.wrong_shape; a tuple, list or dict is common.not_one_array, from the raw type",
                keys=("gpt_head.softmax_in_forward", "common.wrong_shape", "common.not_one_array")),
        PLAIN_NUMPY,
    ),
    cases=forward_cases, reference=reference_forward,
    judge=numpy_only(matches_reference((
        Symptom("gpt_head.softmax_in_forward", _fwd_softmax_inside),
        Symptom("gpt_head.missing_layernorm", _fwd_no_layernorm),
        Symptom("gpt_head.layernorm_variant", _fwd_layernorm_variant),
    ), rtol=1e-5, atol=1e-7), FRAMEWORK_USED, one_array=True),
    # Shapes that do not line up in a matrix product: here, a projection by E, not E.T.
    errors=(ErrorPattern("gpt_head.projection_shapes", r"ValueError", r"mismatch in its core dimension"),),
)


# ------------------------------------------------------------- tied_embedding_grad(tokens, targets, E) -> the two paths

GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-9


def _hand_dx(case: Case):
    """dL/dX of the same loss, by the chain rule: what flows back into the looked-up rows."""
    tokens, targets, e = case.args["args"]
    g = softmax(e[tokens] @ e.T)
    g[np.arange(len(tokens)), targets] -= 1.0
    g /= len(tokens)
    return g @ e


def _pair(value):
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            return [np.asarray(v, np.float64) for v in value]
        except (TypeError, ValueError):
            return None
    return None


def _described(value) -> str:
    """``list of 3``, ``ndarray (2, 5, 3)``: what came back instead of a pair."""
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, np.ndarray):
        return f"ndarray {describe_shape(value.shape)}"
    return type(value).__name__


def judge_grads(case: Case, value, ref) -> Finding | None:
    tokens, _, e = case.args["args"]
    pair = _pair(value)
    if pair is None:
        if close(value, ref[0] + ref[1], GRAD_RTOL, GRAD_ATOL):
            return Finding("gpt_head.grad_total")
        return Finding("gpt_head.grad_pair", {"type": _described(value)})
    lookup, head = pair
    for got, want in ((lookup, ref[0]), (head, ref[1])):
        finding = compare_arrays(got, want, GRAD_RTOL, GRAD_ATOL)
        if finding is not None:
            break
    else:
        return None
    ok = lambda got, want: close(got, want, GRAD_RTOL, GRAD_ATOL)
    ref_lookup, ref_head = ref
    dx = _hand_dx(case)
    full = lookup.shape == e.shape and head.shape == e.shape
    if full and ok(lookup, ref_head) and ok(head, ref_lookup):
        return Finding("gpt_head.grads_swapped")
    if full and ok(lookup + head, ref_lookup + ref_head):
        return Finding("gpt_head.grads_mixed")
    if full and ok(lookup, -ref_lookup) and ok(head, -ref_head):
        return Finding("gpt_head.grad_sign")
    t = len(tokens)
    if full and t > 1 and ok(lookup, t * ref_lookup) and ok(head, t * ref_head):
        return Finding("gpt_head.grad_summed")
    if ok(head, ref_head):
        if ok(lookup, dx):
            return Finding("gpt_head.lookup_not_scattered", {"shape": describe_shape(dx.shape)})
        if lookup.shape == e.shape and not np.any(lookup):
            return Finding("gpt_head.missing_lookup")
        overwritten = np.zeros_like(e)
        overwritten[tokens] = dx  # what g[tokens] = dx and g[tokens] += dx both leave
        if ok(lookup, overwritten):
            return Finding("gpt_head.overwritten_rows")
    if ok(lookup, ref_lookup):
        if head.shape == e.shape and not np.any(head):
            return Finding("gpt_head.missing_head")
        if ok(head, ref_head.T):
            return Finding("gpt_head.head_transposed")
    return finding


GRADIENT = Item(
    name="tied_embedding_grad", points=4, probe="numpy_call",
    promises=(
        Promise("loss = cross_entropy(E[tokens] @ E.T, targets), the mean over positions",
                "references: PyTorch autograd of the untied loss at A = B = E; symptom gpt_head.grad_summed",
                keys=("gpt_head.grad_summed",)),
        Promise("return them as a pair (grad_lookup, grad_head)", "gpt_head.grad_pair, gpt_head.grad_total, "
                "gpt_head.grads_swapped, gpt_head.grads_mixed",
                keys=("gpt_head.grad_pair", "gpt_head.grad_total", "gpt_head.grads_swapped", "gpt_head.grads_mixed")),
        Promise("both of shape (V, d)", "common.wrong_shape; gpt_head.lookup_not_scattered for (T, d)",
                keys=("common.wrong_shape", "gpt_head.lookup_not_scattered", "gpt_head.grad_shapes")),
        Promise("grad_head = G.T @ X", "symptoms gpt_head.head_transposed, gpt_head.missing_head",
                keys=("gpt_head.head_transposed", "gpt_head.missing_head")),
        Promise("grad_lookup: each row of G @ E added into its token's row; repeated tokens receive both rows, "
                "absent tokens zeros", "cases with repeated and absent ids (every hidden case has a repeat); "
                "symptoms gpt_head.overwritten_rows, gpt_head.missing_lookup",
                keys=("gpt_head.overwritten_rows", "gpt_head.missing_lookup")),
        Promise("G = (softmax(logits) - onehot(targets)) / T", "symptom gpt_head.grad_sign",
                keys=("gpt_head.grad_sign",)),
        PLAIN_NUMPY,
    ),
    cases=grad_cases, reference=reference_grads, judge=numpy_only(judge_grads, FRAMEWORK_USED),
    # Shapes that do not line up in a matrix product: here, a gradient multiplied the wrong way.
    errors=(ErrorPattern("gpt_head.grad_shapes", r"ValueError", r"mismatch in its core dimension"),),
)


# ---------------------------------------------------------------- sample_next(logits, temperature, rng) -> a token id

P_VALUE = 1e-6  # a right sampler fails a frequency test this rarely


def _draws(case: Case, value):
    """The draws as ints, or the finding that says why they are not token ids: the
    first draw that is not one is quoted, then a draw of another type than ``int``."""
    n, v = case.args["n"], len(case.args["logits"])
    types = [str(t) for t in value.get("types") or []]
    if value.get("draws") is None:
        return Finding("gpt_head.sample_not_id", {"got": ", ".join(types)})
    draws = np.asarray(value["draws"])
    if draws.shape == (n, v) and np.issubdtype(draws.dtype, np.floating) and np.allclose(draws.sum(-1), 1.0):
        return Finding("gpt_head.sample_returns_probs")
    if draws.shape != (n,):
        return Finding("gpt_head.sample_not_id", {"got": f"{', '.join(types)} {describe_shape(draws.shape[1:])}"})
    with np.errstate(all="ignore"):
        bad = ~np.isfinite(draws) | (draws != np.round(draws)) | (draws < 0) | (draws >= v)
    if np.any(bad):
        return Finding("gpt_head.sample_not_id", {"got": repr(draws[np.argmax(bad)].item())})
    other = [t for t in types if t != "int"]
    if other:
        return Finding("gpt_head.sample_not_int", {"type": type_name(other[0])})
    return draws.astype(int)


def type_name(name: str) -> str:
    """A draw's type as the student wrote it: NumPy's scalars (``argmax`` returns one)
    with their module, ``np.int64``, so that it is not read as a Python int."""
    numpy_scalars = {t.__name__ for t in np.sctypeDict.values()} - set(dir(builtins))
    return f"np.{name}" if name in numpy_scalars else name


def _fits(counts, probs) -> bool:
    """Counts consistent with ``probs``: no draw where p is 0, and a chi-square test."""
    from scipy.stats import chi2

    if np.any(counts[probs < 1e-12] > 0):
        return False
    keep = probs >= 1e-12
    if keep.sum() <= 1:
        return True
    expected = probs[keep] / probs[keep].sum() * counts.sum()
    stat = float(np.sum((counts[keep] - expected) ** 2 / expected))
    return stat < chi2.isf(P_VALUE, int(keep.sum()) - 1)


def judge_sample(case: Case, value, ref) -> Finding | None:
    draws = _draws(case, value)
    if isinstance(draws, Finding):
        return draws
    again = np.asarray(value["again"])
    if again.shape != (case.args["repeat"],) or not np.array_equal(again, draws[: case.args["repeat"]]):
        return Finding("gpt_head.rng_ignored")
    counts = np.bincount(draws, minlength=len(ref)).astype(np.float64)
    if _fits(counts, ref):
        return None
    logits, tau = case.args["logits"], float(case.args["temperature"])
    top = int(np.argmax(logits))
    freq = counts / counts.sum()
    params = {"got": np.array2string(freq, precision=2, separator=", ", floatmode="fixed"),
              "expected": np.array2string(ref, precision=2, separator=", ", floatmode="fixed")}
    if counts[top] == counts.sum():
        return Finding("gpt_head.sample_greedy", params)
    if _fits(counts, softmax(np.asarray(logits))):
        return Finding("gpt_head.temperature_ignored", params)
    if _fits(counts, softmax(np.asarray(logits) * tau)):
        return Finding("gpt_head.temperature_inverted", params)
    return Finding("gpt_head.wrong_distribution", params)


SAMPLE = Item(
    name="sample_next", points=2, probe="sample_draws",
    promises=(
        Promise("sample_next(logits, temperature, rng), logits (V,), τ ≥ 0", "cases V 4-7, τ 1e-4 to 50"),
        Promise("returns one token id, a Python int", "the probe sends each draw's type: gpt_head.sample_not_int; a "
                "draw outside [0, V) or not whole is gpt_head.sample_not_id, quoting that draw",
                keys=("gpt_head.sample_not_int", "gpt_head.sample_not_id", "gpt_head.sample_returns_probs")),
        Promise("drawn from softmax(logits / τ)", "3000 draws, chi-square test at p = 1e-6; symptoms "
                "gpt_head.temperature_ignored, gpt_head.temperature_inverted, gpt_head.sample_greedy",
                keys=("gpt_head.temperature_ignored", "gpt_head.temperature_inverted", "gpt_head.sample_greedy",
                      "gpt_head.wrong_distribution", "gpt_head.sample_not_normalised")),
        Promise("draw with the generator you are given", "40 draws again from the same seed: gpt_head.rng_ignored",
                keys=("gpt_head.rng_ignored",)),
        Promise("subtract the maximum before exponentiating", "hidden cases of logits near +1e4 and -1e4 at τ = 1: "
                "gpt_head.sample_overflow", keys=("gpt_head.sample_overflow",)),
        Promise("as τ → 0 the draw becomes the argmax",
                "the notebook's τ = 1e-4 draws (public) and a hidden τ = 1e-4"),
        PLAIN_NUMPY,
    ),
    cases=sample_cases, reference=reference_probs, judge=numpy_only(judge_sample, FRAMEWORK_USED, unwrap=False),
    errors=(ErrorPattern("gpt_head.sample_overflow", r"ValueError", r"NaN"),
            ErrorPattern("gpt_head.sample_not_normalised", r"ValueError", r"sum to 1")),
)


# ---------------------------------------------------------------- sample_next at τ = 0 -> the argmax


def judge_greedy(case: Case, value, ref) -> Finding | None:
    draws = _draws(case, value)
    if isinstance(draws, Finding):
        return draws
    top = int(np.argmax(case.args["logits"]))
    if np.all(draws == top):
        return None
    return Finding("gpt_head.zero_temperature_not_argmax", {"top": top, "got": int(draws[draws != top][0])})


GREEDY = Item(
    name="sample_next.greedy", symbol="sample_next", points=1, probe="sample_draws",
    promises=(
        Promise("τ = 0 must not divide: return the argmax directly", "τ = 0.0 (public), τ = 0 an int, logits near "
                "-1e4; gpt_head.zero_temperature, gpt_head.zero_temperature_not_argmax",
                keys=("gpt_head.zero_temperature", "gpt_head.zero_temperature_not_argmax")),
        Promise("returns an int", "gpt_head.sample_not_int", keys=("gpt_head.sample_not_int",)),
    ),
    cases=greedy_cases, reference=reference_probs, judge=numpy_only(judge_greedy, FRAMEWORK_USED, unwrap=False),
    errors=(ErrorPattern("gpt_head.zero_temperature", r"ZeroDivisionError|FloatingPointError"),
            ErrorPattern("gpt_head.zero_temperature", r"ValueError", r"NaN")),
)


CHAPTER = Chapter(
    id="04_gpt_head",
    title="The LM head in NumPy",
    probe_module="grader.chapters.gpt_head.probe",
    items=(CROSS_ENTROPY, FORWARD, GRADIENT, SAMPLE, GREEDY),
)

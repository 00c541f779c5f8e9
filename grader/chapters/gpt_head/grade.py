"""Chapter 04, the LM head of a small GPT in NumPy: the loss, the tied forward, the two
gradient paths into a tied matrix, and sampling with a temperature.

The references come from PyTorch in float64 (``cross_entropy``, ``layer_norm``,
``softmax`` and autograd), so that none of them is the hand-written NumPy the exercise
asks for.  (PyTorch rather than JAX: eager JAX compiles every operation for every new
shape, which made these references ten times slower.)  The symptoms re-create known
mistakes in NumPy.

Every item's fact carries the source of the student's function, raw: the exercise asks
for plain NumPy, and ``grader.chapters.source_checks`` finds a framework in it, with its line.
One block per exercise below, in the notebook's order; each ends with its ``Item``.
"""
from __future__ import annotations

import builtins

import numpy as np

import grader.chapters.source_checks as source_checks
from grader.comparisons import CONTAINERS, close, compare_arrays, describe_shape, matches_reference
from grader.drawing import hidden_rng, softmax
from grader.registry import Case, Chapter, ErrorPattern, Finding, Item, Promise, Symptom

LN_EPS = 1e-5
MINI_GPT = (32, 64, 64)  # (T, V, d) of the book's Mini-GPT


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------- plain NumPy, promised by every exercise

# What the exercise rules out: "in plain NumPy", no framework and no ready-made softmax.
FRAMEWORKS = {"torch", "jax", "jaxlib", "flax", "tensorflow", "scipy", "sklearn"}
PLAIN_NUMPY = Promise("in plain NumPy (no framework)", "source check of the function and its notebook helpers: "
                      "an import or a global bound to torch, jax, flax, tensorflow, scipy or sklearn is "
                      "gpt_head.framework_used, with its line", keys=("gpt_head.framework_used",))


def public_module(module: str) -> str:
    """The module as a student imports it: ``scipy.special`` for the
    ``scipy.special._logsumexp`` that defines ``softmax`` (private parts dropped)."""
    parts = module.split(".")
    return ".".join(parts[:next((i for i, p in enumerate(parts) if i and p.startswith("_")), len(parts))])


def framework_finding(code: dict) -> Finding | None:
    """A framework imported or used in the student's function or its notebook helpers,
    named with its line (or with the global name bound to it when no source is readable)."""
    for name, facts in code.items():
        bound = {g: public_module(str(what.get("module", ""))) for g, what in (facts.get("globals") or {}).items()
                 if isinstance(what, dict) and str(what.get("module", "")).split(".")[0] in FRAMEWORKS}
        uses = source_checks.module_uses(facts.get("source"), name, FRAMEWORKS, bound)
        if uses:
            return Finding("gpt_head.framework_used", {"module": uses[0].what, "line": uses[0].where})
        if bound:
            return Finding("gpt_head.framework_used", {"module": next(iter(bound.values()))})
    return None


def numpy_only(judge, unwrap: bool = True, one_array: bool = False):
    """The item's judge, after the check that its code is plain NumPy; ``unwrap``: the
    judge gets the function's result, not the whole fact; ``one_array``: the exercise
    asks for one array (or number), so a tuple, list or dict is common.not_one_array,
    judged from the result's raw type."""
    def checked(case, value, ref):
        if not isinstance(value, dict) or "code" not in value or ("out" not in value and unwrap):
            return Finding("common.not_judged", {"reason": "the probe's record has no result"})
        finding = framework_finding(value.get("code") or {})
        if finding is not None:
            return finding
        if one_array and value.get("type") in CONTAINERS:
            return Finding("common.not_one_array", {"got": value["type"]})
        return judge(case, value["out"] if unwrap else value, ref)
    return checked


# ---------------------------------------------------------------- cross_entropy_from_logits(logits, targets) -> loss

CE_LOGITS = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, -1.0]])
CE_TARGETS = np.array([0, 2])


def ce_cases() -> list[Case]:
    """The notebook's four calls (its targets [0, 1, 4] a list, as it passes them), then
    hidden cases to the edges: one position, one token in the vocabulary, int32
    targets, and logits of magnitude 1e4 every way."""
    def case(label, logits, targets, public=False):
        t, v = np.shape(logits)
        return Case(label, {"args": [logits, targets]}, public, {"shape": f"T={t}, V={v}"})

    found = [case("case.worked_example", logits, targets, True) for logits, targets in (
        (np.zeros((3, 5)), [0, 1, 4]), (CE_LOGITS + 1e4, CE_TARGETS), (CE_LOGITS, CE_TARGETS),
        (1e4 * CE_LOGITS, CE_TARGETS))]
    rng = hidden_rng("04_gpt_head/cross_entropy_from_logits")
    found += [
        case("case.hidden", rng.normal(0, 1, (1, 5)), rng.integers(0, 5, 1)),
        case("case.hidden", rng.normal(0, 1, (4, 1)), np.zeros(4, np.int64)),
        case("case.hidden", rng.normal(0, 2, (8, 64)), rng.integers(0, 64, 8).astype(np.int32)),
        # Every logit near +1e4: exp overflows unless the row maximum is subtracted.
        case("gpt_head.case_logits_high", 1e4 + rng.normal(0, 1, (6, 10)), rng.integers(0, 10, 6)),
        # Every logit near -1e4: exp underflows to zero unless shifted.
        case("gpt_head.case_logits_low", -1e4 + rng.normal(0, 1, (5, 7)), rng.integers(0, 7, 5)),
        # Spread of 1e4: the target's probability is far below the smallest float.
        case("gpt_head.case_logits_spread", rng.normal(0, 1e4, (12, 32)), rng.integers(0, 32, 12)),
    ]
    return found


def reference_ce(case: Case) -> np.ndarray:
    torch = _torch()
    logits, targets = case.args["args"]
    logits = torch.tensor(np.asarray(logits), dtype=torch.float64)
    targets = torch.tensor(np.asarray(targets), dtype=torch.long)
    return np.asarray(torch.nn.functional.cross_entropy(logits, targets).item())


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
    ), rtol=1e-5, atol=1e-7), one_array=True),
)


# ---------------------------------------------------------------- tied_head_forward(tokens, E) -> logits (T, V)

INIT_STD = 0.02
FWD_PUBLIC_TOKENS = [0, 3, 3, 5]


def _matrix(rng, v, d, std=None):
    # Rows of E with entries of std d^(-1/4) give logits of order one after a lookup, so
    # the softmax is neither uniform nor one-hot and every gradient entry matters.
    return rng.normal(0.0, d ** -0.25 if std is None else std, (v, d))


def tokens_with_repeat(rng, t, v) -> np.ndarray:
    """Random ids whose last repeats the first (when t > 1), and, when t < v, with absent
    ids: every hidden case built with it has a repeated id, on which
    ``gpt_head.overwritten_rows`` shows; a symptom that needs ids all distinct needs
    cases of its own."""
    ids = rng.integers(0, v, t)
    if t > 1:
        ids[-1] = ids[0]  # the repeat, made on purpose
    return ids.astype(np.int64)


def forward_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    public_e = rng.normal(0.0, INIT_STD, (6, 4))
    found = [Case("case.worked_example", {"args": [np.asarray(FWD_PUBLIC_TOKENS), public_e]}, True,
                  {"shape": "T=4, V=6, d=4"})]
    rng = hidden_rng("04_gpt_head/tied_head_forward")
    for t, v, d in ((1, 7, 5), (9, 16, 16), (12, 50, 8), (5, 3, 8), MINI_GPT, (64, 64, 64)):
        std = INIT_STD if v == 50 else None
        args = [tokens_with_repeat(rng, t, v), _matrix(rng, v, d, std)]
        found.append(Case("case.hidden", {"args": args}, shown={"shape": f"T={t}, V={v}, d={d}"}))
    return found


def reference_forward(case: Case) -> np.ndarray:
    torch = _torch()
    tokens, e = case.args["args"]
    x = torch.tensor(np.asarray(e[tokens], np.float64))
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=LN_EPS).numpy() @ e.T


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
    ), rtol=1e-5, atol=1e-7), one_array=True),
    # Shapes that do not line up in a matrix product: here, a projection by E, not E.T.
    errors=(ErrorPattern("gpt_head.projection_shapes", r"ValueError", r"mismatch in its core dimension"),),
)


# ------------------------------------------------------------- tied_embedding_grad(tokens, targets, E) -> the two paths

GRAD_PUBLIC = dict(tokens=[1, 0, 1], targets=[0, 2, 3], vocab=5, d=3)
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-9


def grad_cases() -> list[Case]:
    rng = np.random.default_rng(1)
    e = rng.normal(0.0, 1.0, (GRAD_PUBLIC["vocab"], GRAD_PUBLIC["d"]))
    found = [Case("case.worked_example", {"args": [
        np.asarray(GRAD_PUBLIC["tokens"]), np.asarray(GRAD_PUBLIC["targets"]), e]}, True, {"shape": "T=3, V=5, d=3"})]
    rng = hidden_rng("04_gpt_head/tied_embedding_grad")
    for t, v, d in ((1, 6, 4), (10, 12, 12), (20, 9, 5), (6, 40, 8), (7, 3, 8), MINI_GPT):
        args = [tokens_with_repeat(rng, t, v), rng.integers(0, v, t).astype(np.int64), _matrix(rng, v, d)]
        found.append(Case("case.hidden", {"args": args}, shown={"shape": f"T={t}, V={v}, d={d}"}))
    return found


def reference_grads(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Autodiff of the untied loss ``CE(A[tokens] @ B.T)`` at A = B = E: the gradient
    with respect to A is the lookup path, the one with respect to B the projection path."""
    torch = _torch()
    tokens, targets, e = case.args["args"]
    a = torch.tensor(e, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(e, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(a[torch.tensor(tokens)] @ b.T, torch.tensor(targets))
    loss.backward()
    return a.grad.numpy(), b.grad.numpy()


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
    cases=grad_cases, reference=reference_grads, judge=numpy_only(judge_grads),
    # Shapes that do not line up in a matrix product: here, a gradient multiplied the wrong way.
    errors=(ErrorPattern("gpt_head.grad_shapes", r"ValueError", r"mismatch in its core dimension"),),
)


# ---------------------------------------------------------------- sample_next(logits, temperature, rng) -> a token id

SAMPLE_PUBLIC = [2.0, 1.0, 0.5, -1.0]
SAMPLE_DRAWS, SAMPLE_REPEAT = 3000, 40
P_VALUE = 1e-6  # a right sampler fails a frequency test this rarely


def sample_cases() -> list[Case]:
    """The notebook's draws at τ = 1 and τ = 1e-4, then hidden cases to the edges of
    τ > 0: near the argmax, near uniform, and logits near ±1e4."""
    def case(label, logits, temperature, seed, public=False):
        return Case(label, {"logits": np.asarray(logits, np.float64), "temperature": temperature, "seed": seed,
                            "n": SAMPLE_DRAWS, "repeat": SAMPLE_REPEAT}, public,
                    {"shape": f"V={len(logits)}, τ={temperature:g}"})

    rng = hidden_rng("04_gpt_head/sample_next")
    seed = lambda: int(rng.integers(2**31))
    wide = np.array([1.5, 0.3, -0.2, 1.0, 0.0, -0.5, 0.7])
    return [
        case("case.worked_example", SAMPLE_PUBLIC, 1.0, 0, public=True),
        case("case.worked_example", SAMPLE_PUBLIC, 1e-4, 0, public=True),
        case("case.hidden", wide, 0.5, seed()),
        case("case.hidden", wide, 2.0, seed()),
        case("case.hidden", wide, 50.0, seed()),
        case("gpt_head.case_logits_high", 1e4 + np.array([0.2, -0.4, 0.9, 0.0, -1.0]), 1.0, seed()),
        case("gpt_head.case_logits_low", -1e4 + np.array([0.2, -0.4, 0.9, 0.0, -1.0]), 1.0, seed()),
        case("case.hidden", [0.3, 2.1, -0.7, 1.9, 0.0, 1.2], 1e-4, seed()),
    ]


def reference_probs(case: Case) -> np.ndarray:
    torch = _torch()
    logits, tau = case.args["logits"], float(case.args["temperature"])
    if tau == 0.0:
        return np.eye(len(logits))[int(np.argmax(logits))]
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / tau, 0).numpy()


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
    cases=sample_cases, reference=reference_probs, judge=numpy_only(judge_sample, unwrap=False),
    errors=(ErrorPattern("gpt_head.sample_overflow", r"ValueError", r"NaN"),
            ErrorPattern("gpt_head.sample_not_normalised", r"ValueError", r"sum to 1")),
)


# ---------------------------------------------------------------- sample_next at τ = 0 -> the argmax

def greedy_cases() -> list[Case]:
    def case(label, logits, temperature, public=False):
        return Case(label, {"logits": np.asarray(logits, np.float64), "temperature": temperature, "seed": 3,
                            "n": 20, "repeat": 0}, public, {"shape": f"V={len(logits)}, τ={temperature!r}"})

    return [
        case("case.worked_example", SAMPLE_PUBLIC, 0.0, public=True),
        case("case.hidden", [0.1, -2.0, 0.4, 3.0, 2.9], 0),
        case("gpt_head.case_logits_low", -1e4 + np.array([0.5, 0.2, 0.9, -0.3]), 0.0),
    ]


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
    cases=greedy_cases, reference=reference_probs, judge=numpy_only(judge_greedy, unwrap=False),
    errors=(ErrorPattern("gpt_head.zero_temperature", r"ZeroDivisionError|FloatingPointError"),
            ErrorPattern("gpt_head.zero_temperature", r"ValueError", r"NaN")),
)


CHAPTER = Chapter(
    id="04_gpt_head",
    title="The LM head in NumPy",
    probe_module="grader.chapters.gpt_head.probe",
    items=(CROSS_ENTROPY, FORWARD, GRADIENT, SAMPLE, GREEDY),
)

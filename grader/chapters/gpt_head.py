"""Chapter 04, the LM head of a small GPT in NumPy: the loss, the tied forward, the two
gradient paths into a tied matrix, and sampling with a temperature.

The references come from PyTorch in float64 (``cross_entropy``, ``layer_norm``,
``softmax`` and autograd), so that none of them is the hand-written NumPy the exercise
asks for.  (PyTorch rather than JAX: eager JAX compiles every operation for every new
shape, which made these references ten times slower.)  The symptoms re-create known
mistakes in NumPy.
"""
from __future__ import annotations

import numpy as np

from ..cases import hidden_rng
from ..judge import close, compare_arrays, describe_shape, matches_reference
from ..registry import Case, Chapter, ErrorPattern, Finding, Item, Symptom

INIT_STD = 0.02
LN_EPS = 1e-5
# Rows of E with entries of std d^(-1/4) give logits of order one after a lookup, so
# the softmax is neither uniform nor one-hot and every gradient entry matters.
MINI_GPT = (32, 64, 64)  # (T, V, d) of the book's Mini-GPT
SAMPLE_DRAWS, SAMPLE_REPEAT = 3000, 40
P_VALUE = 1e-6  # a right sampler fails a frequency test this rarely


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------- cross_entropy_from_logits

CE_PUBLIC = dict(logits=[[2.0, 1.0, 0.1], [0.5, 2.5, -1.0]], targets=[0, 2])


def ce_cases() -> list[Case]:
    rng = hidden_rng("04_gpt_head/cross_entropy_from_logits")
    found = [Case("worked example (T=2, V=3)", {"fn": "cross_entropy_from_logits", "args": [
        np.asarray(CE_PUBLIC["logits"]), np.asarray(CE_PUBLIC["targets"])]}, True)]

    def add(label, logits, targets):
        found.append(Case(label, {"fn": "cross_entropy_from_logits",
                                  "args": [np.asarray(logits, np.float64), np.asarray(targets, np.int64)]}))

    add("hidden (T=1, V=5)", rng.normal(0, 1, (1, 5)), rng.integers(0, 5, 1))
    add("hidden (T=8, V=64)", rng.normal(0, 2, (8, 64)), rng.integers(0, 64, 8))
    # Every logit near +1e4: exp overflows unless the row maximum is subtracted.
    add("hidden, logits near +1e4 (T=6, V=10)", 1e4 + rng.normal(0, 1, (6, 10)), rng.integers(0, 10, 6))
    # Every logit near -1e4: exp underflows to zero unless shifted.
    add("hidden, logits near -1e4 (T=5, V=7)", -1e4 + rng.normal(0, 1, (5, 7)), rng.integers(0, 7, 5))
    # Spread of 1e4: the target's probability is far below the smallest float.
    add("hidden, logits of magnitude 1e4 (T=12, V=32)", rng.normal(0, 1e4, (12, 32)), rng.integers(0, 32, 12))
    return found


def reference_ce(case: Case) -> np.ndarray:
    torch = _torch()
    logits, targets = case.args["args"]
    return np.asarray(torch.nn.functional.cross_entropy(
        torch.tensor(logits, dtype=torch.float64), torch.tensor(targets, dtype=torch.long)).item())


def _same(value, wrong) -> bool:
    """Equal within 1e-6, with NaN equal to NaN and infinities of one sign equal."""
    value, wrong = np.asarray(value, np.float64), np.asarray(wrong, np.float64)
    if value.shape != wrong.shape:
        return False
    return bool(np.all(np.isclose(value, wrong, rtol=1e-6, atol=1e-8, equal_nan=True) | (value == wrong)))


def _ce_variants(case: Case) -> dict:
    """The loss as each known mistake computes it (NumPy float64, warnings off)."""
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


def _ce_unshifted(case: Case, value) -> bool:
    return not np.all(np.isfinite(value)) and any(_same(value, w) for w in _ce_variants(case)["unshifted"])


def _ce_log_of_softmax(case: Case, value) -> bool:
    return not np.all(np.isfinite(value)) and any(_same(value, w) for w in _ce_variants(case)["log_of_softmax"])


def _ce_summed(case: Case, value) -> bool:
    t = len(case.args["args"][1])
    return t > 1 and close(value, t * reference_ce(case), 1e-5, 1e-7)


def _ce_not_averaged(case: Case, value) -> bool:
    t = len(case.args["args"][1])
    value = np.asarray(value, np.float64)
    return value.shape == (t,) and t > 1 and close(np.mean(value), reference_ce(case), 1e-5, 1e-7)


# ---------------------------------------------------------------- tied_head_forward

def _matrix(rng, v, d, std=None):
    return rng.normal(0.0, d ** -0.25 if std is None else std, (v, d))


def _tokens(rng, t, v) -> np.ndarray:
    """Random ids with at least one repeat (t > 1) and, when t < v, absent ids."""
    ids = rng.integers(0, v, t)
    if t > 1:
        ids[-1] = ids[0]
    return ids.astype(np.int64)


FWD_PUBLIC_TOKENS = [0, 3, 3, 5]


def forward_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    public_e = rng.normal(0.0, INIT_STD, (6, 4))
    found = [Case("worked example (T=4, V=6, d=4, E ~ N(0, 0.02²))",
                  {"fn": "tied_head_forward", "args": [np.asarray(FWD_PUBLIC_TOKENS), public_e]}, True)]
    rng = hidden_rng("04_gpt_head/tied_head_forward")
    for t, v, d in ((1, 7, 5), (9, 16, 16), (12, 50, 8), MINI_GPT):
        std = INIT_STD if v == 50 else None
        found.append(Case(f"hidden (T={t}, V={v}, d={d})",
                          {"fn": "tied_head_forward", "args": [_tokens(rng, t, v), _matrix(rng, v, d, std)]}))
    return found


def _ln(x):
    torch = _torch()
    x = torch.tensor(np.asarray(x, np.float64))
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=LN_EPS).numpy()


def reference_forward(case: Case) -> np.ndarray:
    tokens, e = case.args["args"]
    return _ln(e[tokens]) @ e.T


def _softmax(z):
    z = z - z.max(-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(-1, keepdims=True)


def _fwd_softmax_inside(case: Case, value) -> bool:
    ref = reference_forward(case)
    log_p = ref - ref.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    return close(value, _softmax(ref), 1e-4, 1e-7) or close(value, log_p, 1e-4, 1e-7)


def _fwd_no_layernorm(case: Case, value) -> bool:
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


def _fwd_layernorm_variant(case: Case, value) -> bool:
    tokens, e = case.args["args"]
    with np.errstate(all="ignore"):
        return any(close(value, y @ e.T, 1e-4, 1e-7) for y in _ln_variants(e[tokens]))


def _fwd_untransposed(case: Case, value) -> bool:
    tokens, e = case.args["args"]
    return e.shape[0] == e.shape[1] and close(value, _ln(e[tokens]) @ e, 1e-4, 1e-7)


# ---------------------------------------------------------------- tied_embedding_grad

GRAD_PUBLIC = dict(tokens=[1, 0, 1], targets=[0, 2, 3], vocab=5, d=3)


def grad_cases() -> list[Case]:
    rng = np.random.default_rng(1)
    e = rng.normal(0.0, 1.0, (GRAD_PUBLIC["vocab"], GRAD_PUBLIC["d"]))
    found = [Case("worked example (T=3, V=5, d=3, token 1 twice)", {"fn": "tied_embedding_grad", "args": [
        np.asarray(GRAD_PUBLIC["tokens"]), np.asarray(GRAD_PUBLIC["targets"]), e]}, True)]
    rng = hidden_rng("04_gpt_head/tied_embedding_grad")
    for t, v, d in ((1, 6, 4), (10, 12, 12), (20, 9, 5), (6, 40, 8), MINI_GPT):
        args = [_tokens(rng, t, v), rng.integers(0, v, t).astype(np.int64), _matrix(rng, v, d)]
        found.append(Case(f"hidden (T={t}, V={v}, d={d})", {"fn": "tied_embedding_grad", "args": args}))
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


def _hand_parts(case: Case):
    """dL/dlogits and dL/dX of the same loss, by the chain rule, for the symptoms."""
    tokens, targets, e = case.args["args"]
    x = e[tokens]
    g = _softmax(x @ e.T)
    g[np.arange(len(tokens)), targets] -= 1.0
    g /= len(tokens)
    return g, g @ e


GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-9


def _pair(value):
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            return [np.asarray(v, np.float64) for v in value]
        except (TypeError, ValueError):
            return None
    return None


def judge_grads(case: Case, value, ref) -> Finding | None:
    tokens, _, e = case.args["args"]
    pair = _pair(value)
    if pair is None:
        if np.shape(value) == e.shape and close(value, ref[0] + ref[1], GRAD_RTOL, GRAD_ATOL):
            return Finding("gpt_head.grad_total")
        return Finding("gpt_head.grad_pair", {"type": type(value).__name__})
    lookup, head = pair
    for got, want in ((lookup, ref[0]), (head, ref[1])):
        finding = compare_arrays(got, want, GRAD_RTOL, GRAD_ATOL)
        if finding is not None:
            break
    else:
        return None
    ok = lambda got, want: close(got, want, GRAD_RTOL, GRAD_ATOL)
    ref_lookup, ref_head = ref
    _, dx = _hand_parts(case)
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


# ---------------------------------------------------------------- sample_next

SAMPLE_PUBLIC = [2.0, 1.0, 0.5, -1.0]


def sample_cases() -> list[Case]:
    def case(label, logits, temperature, seed, public=False):
        return Case(label, {"logits": np.asarray(logits, np.float64), "temperature": temperature, "seed": seed,
                            "n": SAMPLE_DRAWS, "repeat": SAMPLE_REPEAT}, public)

    rng = hidden_rng("04_gpt_head/sample_next")
    wide = np.array([1.5, 0.3, -0.2, 1.0, 0.0, -0.5, 0.7])
    return [
        case("worked example (V=4, τ=1)", SAMPLE_PUBLIC, 1.0, 0, public=True),
        case("hidden (V=7, τ=0.5)", wide, 0.5, int(rng.integers(2**31))),
        case("hidden (V=7, τ=2)", wide, 2.0, int(rng.integers(2**31))),
        case("hidden (V=5, τ=1, logits near 1e4)", 1e4 + np.array([0.2, -0.4, 0.9, 0.0, -1.0]), 1.0,
             int(rng.integers(2**31))),
        case("hidden (V=6, τ=1e-4: the argmax)", [0.3, 2.1, -0.7, 1.9, 0.0, 1.2], 1e-4, int(rng.integers(2**31))),
    ]


def greedy_cases() -> list[Case]:
    def case(label, logits, temperature, public=False):
        return Case(label, {"logits": np.asarray(logits, np.float64), "temperature": temperature, "seed": 3,
                            "n": 20, "repeat": 0}, public)

    return [
        case("worked example (τ=0.0)", SAMPLE_PUBLIC, 0.0, public=True),
        case("hidden (τ=0, an int)", [0.1, -2.0, 0.4, 3.0, 2.9], 0),
        case("hidden (τ=0.0, logits near -1e4)", -1e4 + np.array([0.5, 0.2, 0.9, -0.3]), 0.0),
    ]


def reference_probs(case: Case) -> np.ndarray:
    torch = _torch()
    logits, tau = case.args["logits"], float(case.args["temperature"])
    if tau == 0.0:
        return np.eye(len(logits))[int(np.argmax(logits))]
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / tau, 0).numpy()


def _draws(case: Case, value):
    """The draws as ints, or the finding that says why they are not token ids."""
    n, v = case.args["n"], len(case.args["logits"])
    draws = np.asarray(value["draws"])
    if draws.shape == (n, v) and np.issubdtype(draws.dtype, np.floating) and np.allclose(draws.sum(-1), 1.0):
        return Finding("gpt_head.sample_returns_probs")
    if draws.shape != (n,) or not (np.issubdtype(draws.dtype, np.integer)) or np.any((draws < 0) | (draws >= v)):
        example = draws.reshape(-1)[:1].tolist() if draws.size else []
        return Finding("gpt_head.sample_not_id", {"got": f"{example[0]!r}" if example else describe_shape(draws.shape)})
    return draws.astype(int)


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
    if _fits(counts, _softmax(np.asarray(logits))):
        return Finding("gpt_head.temperature_ignored", params)
    if _fits(counts, _softmax(np.asarray(logits) * tau)):
        return Finding("gpt_head.temperature_inverted", params)
    return Finding("gpt_head.wrong_distribution", params)


def judge_greedy(case: Case, value, ref) -> Finding | None:
    draws = _draws(case, value)
    if isinstance(draws, Finding):
        return draws
    top = int(np.argmax(case.args["logits"]))
    if np.all(draws == top):
        return None
    return Finding("gpt_head.zero_temperature_not_argmax", {"top": top, "got": int(draws[draws != top][0])})


# ---------------------------------------------------------------- the chapter

MISSING_TRANSPOSE = ErrorPattern("gpt_head.missing_transpose", r"ValueError", r"mismatch in its core dimension")

CHAPTER = Chapter(
    id="04_gpt_head",
    title="The LM head in NumPy",
    probe_module="grader.chapters.gpt_head_probe",
    errors=(MISSING_TRANSPOSE,),
    items=(
        Item(
            name="cross_entropy_from_logits", points=2, probe="call", cases=ce_cases, reference=reference_ce,
            judge=matches_reference((
                # A spread of 1e4 makes both mistakes infinite; the unshifted one has
                # already failed on the earlier case of logits near +1e4.
                Symptom("gpt_head.log_of_softmax", _ce_log_of_softmax),
                Symptom("gpt_head.unshifted_softmax", _ce_unshifted),
                Symptom("gpt_head.loss_summed", _ce_summed),
                Symptom("gpt_head.loss_not_averaged", _ce_not_averaged),
            ), rtol=1e-5, atol=1e-7),
        ),
        Item(
            name="tied_head_forward", points=2, probe="call", cases=forward_cases, reference=reference_forward,
            judge=matches_reference((
                Symptom("gpt_head.softmax_in_forward", _fwd_softmax_inside),
                Symptom("gpt_head.missing_layernorm", _fwd_no_layernorm),
                Symptom("gpt_head.layernorm_variant", _fwd_layernorm_variant),
                Symptom("gpt_head.missing_transpose", _fwd_untransposed),
            ), rtol=1e-5, atol=1e-7),
        ),
        Item(
            name="tied_embedding_grad", points=4, probe="call", cases=grad_cases, reference=reference_grads,
            judge=judge_grads,
        ),
        Item(
            name="sample_next", points=2, probe="sample_draws", cases=sample_cases, reference=reference_probs,
            judge=judge_sample,
            errors=(ErrorPattern("gpt_head.sample_overflow", r"ValueError", r"NaN"),
                    ErrorPattern("gpt_head.sample_not_normalised", r"ValueError", r"sum to 1")),
        ),
        Item(
            name="sample_next.greedy", symbol="sample_next", points=1, probe="sample_draws", cases=greedy_cases,
            reference=reference_probs, judge=judge_greedy,
            errors=(ErrorPattern("gpt_head.zero_temperature", r"ZeroDivisionError|FloatingPointError"),
                    ErrorPattern("gpt_head.zero_temperature", r"ValueError", r"NaN")),
        ),
    ),
)

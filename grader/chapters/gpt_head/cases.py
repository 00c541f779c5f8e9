"""Chapter 04's cases: the notebook's worked examples, then hidden cases to the edges
the text states (one position, one token, logits of magnitude 1e4, repeated and absent
ids, τ near 0 and far above 1).
"""
from __future__ import annotations

import numpy as np

from grader.drawing import hidden_rng
from grader.registry import Case

MINI_GPT = (32, 96, 64)  # (T, V, d) of the book's Mini-GPT


# ---------------------------------------------------------------- cross_entropy_from_logits

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


# ---------------------------------------------------------------- tied_head_forward

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


# ---------------------------------------------------------------- tied_embedding_grad

GRAD_PUBLIC = dict(tokens=[1, 0, 1], targets=[0, 2, 3], vocab=5, d=3)


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


# ---------------------------------------------------------------- sample_next, and at τ = 0

SAMPLE_PUBLIC = [2.0, 1.0, 0.5, -1.0]
SAMPLE_DRAWS, SAMPLE_REPEAT = 3000, 40


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


def greedy_cases() -> list[Case]:
    def case(label, logits, temperature, public=False):
        return Case(label, {"logits": np.asarray(logits, np.float64), "temperature": temperature, "seed": 3,
                            "n": 20, "repeat": 0}, public, {"shape": f"V={len(logits)}, τ={temperature!r}"})

    return [
        case("case.worked_example", SAMPLE_PUBLIC, 0.0, public=True),
        case("case.hidden", [0.1, -2.0, 0.4, 3.0, 2.9], 0),
        case("gpt_head.case_logits_low", -1e4 + np.array([0.5, 0.2, 0.9, -0.3]), 0.0),
    ]

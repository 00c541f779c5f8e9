"""Chapter 01, Flax Linen: ``TiedIO`` and ``tied_io_embed``."""
from __future__ import annotations

from functools import cache

import numpy as np

from ..cases import float_args, hidden_rng, self_logits_negative, token_ids
from ..judge import close, matches_reference
from ..registry import Case, Chapter, ErrorPattern, Finding, Item, Symptom

INIT_STD = 0.02
# Shapes (T, V, D) of the hidden cases: one token, a square matrix (where a missing
# transpose still runs), repeated ids, and the largest size the issue names.
HIDDEN_SHAPES = ((1, 7, 5), (6, 16, 16), (9, 50, 8), (32, 512, 256))
PUBLIC = dict(seed=0, token_ids=[0, 2], vocab_size=4, d_model=3)


@cache
def _reference_module():
    import flax.linen as nn

    class TiedIO(nn.Module):
        vocab_size: int
        d_model: int

        @nn.compact
        def __call__(self, token_ids):
            embedding = self.param(
                "embedding", nn.initializers.normal(stddev=INIT_STD), (self.vocab_size, self.d_model)
            )
            return embedding[token_ids] @ embedding.T

    return TiedIO


def reference_logits(seed, token_ids, vocab_size, d_model):
    import jax
    import jax.numpy as jnp

    ids = jnp.asarray(token_ids, jnp.int32)
    module = _reference_module()(vocab_size=int(vocab_size), d_model=int(d_model))
    variables = module.init(jax.random.PRNGKey(int(seed)), ids)
    return np.asarray(module.apply(variables, ids))


def tied_logits(embedding, token_ids):
    """``E[ids] @ E.T`` in float64: the reference does not add its own rounding."""
    emb = np.asarray(embedding, np.float64)
    return emb[np.asarray(token_ids, int)] @ emb.T


# ---------------------------------------------------------------- cases

def embed_cases() -> list[Case]:
    rng = hidden_rng("01_linen/tied_io_embed")
    found = [Case("worked example (V=4, D=3, ids [0, 2])", {"fn": "tied_io_embed", "args": float_args(**PUBLIC)}, True)]
    for t, v, d in HIDDEN_SHAPES:
        args = dict(seed=int(rng.integers(0, 2**31 - 1)), token_ids=token_ids(rng, t, v), vocab_size=v, d_model=d)
        found.append(Case(f"hidden (T={t}, V={v}, D={d})", {"fn": "tied_io_embed", "args": float_args(**args)}))
    return found


def structure_cases() -> list[Case]:
    return [
        Case("TiedIO(vocab_size=4, d_model=3)", {"vocab_size": 4, "d_model": 3, "seed": 0}, True),
        Case("hidden TiedIO(vocab_size=512, d_model=256)", {"vocab_size": 512, "d_model": 256, "seed": 7}),
    ]


def forward_cases() -> list[Case]:
    rng = hidden_rng("01_linen/TiedIO.__call__")
    found = []
    for t, v, d in ((2, 4, 3),) + HIDDEN_SHAPES:
        # Entries of std D^(-1/4) make every logit O(1), so float32 rounding stays
        # far inside the tolerance whatever the order of the sums.
        embedding = rng.normal(0.0, d ** -0.25, (v, d)).astype(np.float32)
        args = dict(vocab_size=v, d_model=d, token_ids=token_ids(rng, t, v), embedding=embedding)
        found.append(Case(f"given matrix (T={t}, V={v}, D={d})", args, public=(v == 4)))
    return found


# ---------------------------------------------------------------- judges

def judge_structure(case: Case, tree: dict, _ref) -> Finding | None:
    paths, shapes, stds = tree["paths"], tree["shapes"], tree["stds"]
    shape = [case.args["vocab_size"], case.args["d_model"]]
    if len(paths) != 1:
        return Finding("linen.param_count", {"count": len(paths), "names": ", ".join(paths)})
    if paths[0] != "params/embedding":
        return Finding("linen.param_name", {"name": paths[0]})
    if list(shapes[0]) != shape:
        return Finding("common.wrong_param_shape", {"got": tuple(shapes[0]), "expected": tuple(shape)})
    n = shape[0] * shape[1]
    # The sample std of n normal draws has a relative spread of about 1/sqrt(2n);
    # allow ten of those, and only where n makes that a meaningful bound.
    if n >= 10_000 and abs(stds[0] - INIT_STD) > 10 * INIT_STD / np.sqrt(2 * n):
        return Finding("common.init_std", {"got": f"{stds[0]:.4g}", "expected": INIT_STD})
    return None


def _untransposed(case: Case, value) -> bool:
    ids, emb = case.args["token_ids"], case.args["embedding"]
    return emb.shape[0] == emb.shape[1] and close(value, emb[ids] @ emb, 1e-4, 1e-5)


def _untransposed_embed(case: Case, value) -> bool:
    seed, ids, v, d = case.args["args"]
    if v != d:
        return False
    import jax

    emb = _reference_module()(vocab_size=int(v), d_model=int(d)).init(
        jax.random.PRNGKey(int(seed)), np.asarray(ids, np.int32))["params"]["embedding"]
    emb = np.asarray(emb)
    return close(np.ravel(value), (emb[np.asarray(ids, int)] @ emb).ravel(), 1e-4, 1e-6)


def _not_flattened(case: Case, value) -> bool:
    _, ids, v, _ = case.args["args"]
    return np.shape(value) == (len(ids), int(v))


def _embed_untied(case: Case, value) -> bool:
    _, ids, v, _ = case.args["args"]
    return np.size(value) == len(ids) * int(v) and self_logits_negative(np.reshape(value, (len(ids), int(v))), ids)


MISSING_TRANSPOSE = ErrorPattern("linen.missing_transpose", r"TypeError|ValueError", r"dot_general requires contracting|matmul")
FLOAT_IDS = ErrorPattern("linen.float_ids", r"TypeError|IndexError", r"integer or boolean|indices must be integers")

CHAPTER = Chapter(
    id="01_linen",
    title="Flax Linen",
    probe_module="grader.chapters.linen_probe",
    errors=(MISSING_TRANSPOSE, FLOAT_IDS,
            ErrorPattern("linen.second_param", r"NameInUseError"),
            ErrorPattern("linen.param_not_found", r"ScopeParamNotFoundError")),
    items=(
        Item(
            name="TiedIO.params", symbol="TiedIO", points=2, probe="tiedio_structure",
            cases=structure_cases, reference=lambda case: None, judge=judge_structure,
        ),
        Item(
            name="TiedIO.__call__", symbol="TiedIO", points=2, probe="tiedio_forward",
            cases=forward_cases,
            reference=lambda case: tied_logits(case.args["embedding"], case.args["token_ids"]),
            judge=matches_reference((Symptom("linen.missing_transpose", _untransposed),), rtol=1e-4, atol=1e-5),
        ),
        Item(
            name="tied_io_embed", points=3, probe="call", cases=embed_cases,
            reference=lambda case: reference_logits(*case.args["args"]).reshape(-1),
            judge=matches_reference((
                Symptom("linen.missing_transpose", _untransposed_embed),
                Symptom("common.not_flattened", _not_flattened),
                Symptom("common.untied", _embed_untied),
            )),
        ),
    ),
)

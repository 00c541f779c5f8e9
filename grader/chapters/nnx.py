"""Chapter 02, Flax NNX: ``TiedEmbed``, ``tied_io_embed`` and ``tied_grad_paths``."""
from __future__ import annotations

from functools import cache

import numpy as np

from ..cases import float_args, hidden_rng, self_logits_negative, token_ids
from ..judge import close, compare_arrays, matches_reference
from ..registry import Case, Chapter, ErrorPattern, Finding, Item, Symptom

# Shapes (T, V, D) of the hidden cases: one token, a square matrix (where a missing
# transpose still runs), repeated ids, and a large vocabulary.  Every item uses the
# same few (V, D), so the kernel compiles each random draw and matmul only once.
HIDDEN_SHAPES = ((1, 16, 16), (6, 16, 16), (9, 50, 8), (32, 512, 256))
PUBLIC = dict(seed=0, token_ids=[0, 2], vocab_size=4, d_model=3)
# The gradient exercise: its worked example repeats token 2, so that a lookup gradient
# written with .set instead of .add already shows on the public case.
GRAD_PUBLIC = dict(token_ids=[0, 2, 2], targets=[2, 2, 4], vocab_size=5, d_model=3)
GRAD_HIDDEN = ((9, 50, 8), (12, 10, 4))
DEPRECATIONS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


@cache
def _reference_module():
    import jax
    import jax.numpy as jnp
    from flax import nnx

    class TiedEmbed(nnx.Module):
        def __init__(self, vocab_size, d_model, rngs):
            draw = jax.random.normal(rngs.params(), (vocab_size, d_model))
            self.embedding = nnx.Param(draw / jnp.sqrt(d_model))

        def __call__(self, token_ids):
            matrix = self.embedding[...]
            return matrix[token_ids] @ matrix.T

    return TiedEmbed


def reference_embedding(seed, vocab_size, d_model) -> np.ndarray:
    """The float32 matrix that ``TiedEmbed(V, D, rngs=nnx.Rngs(seed))`` draws."""
    from flax import nnx

    model = _reference_module()(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))
    return np.asarray(model.embedding[...])


def tied_logits(embedding, ids) -> np.ndarray:
    """``E[ids] @ E.T`` in float64: the reference adds no rounding of its own."""
    emb = np.asarray(embedding, np.float64)
    return emb[np.asarray(ids, int)] @ emb.T


def reference_embed(seed, ids, vocab_size, d_model) -> np.ndarray:
    return tied_logits(reference_embedding(seed, vocab_size, d_model), ids).reshape(-1)


def reference_grad_paths(embedding, ids, targets) -> np.ndarray:
    """The two paths of the gradient of the mean cross-entropy of ``E[ids] @ E.T``, in float64.

    Row 0 is what ``nnx.grad`` gives the lookup matrix of an untied copy whose two
    matrices both equal ``embedding``, row 1 what it gives the projection matrix;
    their sum is the gradient of the tied parameter.  Written out rather than
    differentiated, so that it costs no compilation: with ``G = (softmax(Z) -
    onehot(targets)) / T`` the gradient of the logits ``Z = X @ H.T``, the projection
    ``H`` receives ``G.T @ X`` and each looked-up row ``X[t] = E[ids[t]]`` receives
    ``(G @ H)[t]``, added into row ``ids[t]`` once per occurrence.
    """
    emb = np.asarray(embedding, np.float64)
    ids, targets = np.asarray(ids, int), np.asarray(targets, int)
    x = emb[ids]
    z = x @ emb.T
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g = p
    g[np.arange(len(ids)), targets] -= 1.0
    g /= len(ids)
    lookup = np.zeros_like(emb)
    np.add.at(lookup, ids, g @ emb)
    return np.stack([lookup, g.T @ x])


# ---------------------------------------------------------------- cases

def structure_cases() -> list[Case]:
    return [
        Case("TiedEmbed(4, 3, rngs=nnx.Rngs(0))", {"vocab_size": 4, "d_model": 3, "seed": 0}, True),
        Case("hidden TiedEmbed(512, 256)", {"vocab_size": 512, "d_model": 256, "seed": 7}),
    ]


def forward_cases() -> list[Case]:
    rng = hidden_rng("02_nnx/TiedEmbed.__call__")
    found = []
    for t, v, d in ((2, 4, 3),) + HIDDEN_SHAPES:
        # Entries of std D^(-1/4) make every logit O(1), so float32 rounding stays
        # far inside the tolerance whatever the order of the sums.
        embedding = rng.normal(0.0, d ** -0.25, (v, d)).astype(np.float32)
        args = dict(vocab_size=v, d_model=d, token_ids=token_ids(rng, t, v), embedding=embedding)
        label = f"given matrix (T={t}, V={v}, D={d})"
        found.append(Case(label if v == 4 else "hidden " + label, args, public=(v == 4)))
    return found


def warnings_cases() -> list[Case]:
    return [
        Case("TiedEmbed(4, 3) called on [0, 2]", {"vocab_size": 4, "d_model": 3, "token_ids": [0, 2]}, True),
    ]


def embed_cases() -> list[Case]:
    rng = hidden_rng("02_nnx/tied_io_embed")
    found = [Case("worked example (V=4, D=3, ids [0, 2])", {"fn": "tied_io_embed", "args": float_args(**PUBLIC)}, True)]
    for t, v, d in HIDDEN_SHAPES:
        args = dict(seed=int(rng.integers(1, 2**31 - 1)), token_ids=token_ids(rng, t, v), vocab_size=v, d_model=d)
        found.append(Case(f"hidden (T={t}, V={v}, D={d})", {"fn": "tied_io_embed", "args": float_args(**args)}))
    return found


def grad_cases() -> list[Case]:
    rng = hidden_rng("02_nnx/tied_grad_paths")
    shapes = [(len(GRAD_PUBLIC["token_ids"]), GRAD_PUBLIC["vocab_size"], GRAD_PUBLIC["d_model"])] + list(GRAD_HIDDEN)
    found = []
    for n, (t, v, d) in enumerate(shapes):
        embedding = rng.normal(0.0, d ** -0.25, (v, d)).astype(np.float32)
        if n == 0:
            ids, targets = GRAD_PUBLIC["token_ids"], GRAD_PUBLIC["targets"]
            label = f"worked example (T={t}, V={v}, D={d}, ids {ids}, targets {targets})"
        else:
            ids, targets = token_ids(rng, t, v), token_ids(rng, t, v)
            label = f"hidden (T={t}, V={v}, D={d})"
        args = [embedding, np.asarray(ids, np.int32), np.asarray(targets, np.int32)]
        found.append(Case(label, {"fn": "tied_grad_paths", "args": args}, public=(n == 0)))
    return found


# ---------------------------------------------------------------- judges

def _names(paths) -> str:
    return ", ".join(paths) or "-"


def judge_structure(case: Case, tree: dict, _ref) -> Finding | None:
    paths, shapes, stds, prints = tree["paths"], tree["shapes"], tree["stds"], tree["fingerprints"]
    v, d = case.args["vocab_size"], case.args["d_model"]
    if not paths:
        for other in tree["others"]:
            if sorted(other["shape"]) == sorted([v, d]):
                return Finding("nnx.not_a_param", {"name": other["path"], "kind": other["kind"]})
        return Finding("nnx.no_param")
    if len(paths) > 1:
        copies = [p for p, f in zip(paths[1:], prints[1:]) if np.allclose(f, prints[0], rtol=1e-6, atol=0)]
        if copies:
            return Finding("nnx.copied_param", {"names": _names(paths), "copy": _names(copies)})
        return Finding("nnx.param_count", {"count": len(paths), "names": _names(paths)})
    if paths[0] != "embedding":
        return Finding("nnx.param_name", {"name": paths[0]})
    if list(shapes[0]) != [v, d]:
        return Finding("common.wrong_param_shape", {"got": tuple(shapes[0]), "expected": (v, d)})
    n, expected = v * d, 1.0 / np.sqrt(d)
    # The sample std of n normal draws has a relative spread of about 1/sqrt(2n);
    # allow ten of those, and only where n makes that a meaningful bound.
    if n >= 10_000 and abs(stds[0] - expected) > 10 * expected / np.sqrt(2 * n):
        return Finding("common.init_std", {"got": f"{stds[0]:.4g}", "expected": f"1/√{d} ≈ {expected:.4g}"})
    return None


def _untransposed(embedding, ids, value) -> bool:
    emb = np.asarray(embedding, np.float64)
    return emb.shape[0] == emb.shape[1] and close(value, emb[np.asarray(ids, int)] @ emb, 1e-4, 1e-5)


FORWARD_TOL = dict(rtol=1e-4, atol=1e-5)


def judge_forward(case: Case, value: dict, ref) -> Finding | None:
    if value["logits"] is None:
        return Finding("nnx.not_a_param", {"name": "embedding", "kind": value["kind"]})
    logits = value["logits"]
    finding = compare_arrays(logits, ref, **FORWARD_TOL)
    if finding is None or finding.key == "common.not_an_array":
        return finding
    if len(value["params"]) > 1:
        return Finding("nnx.forward_untied", {"count": len(value["params"]), "names": _names(value["params"])})
    if _untransposed(case.args["embedding"], case.args["token_ids"], logits):
        return Finding("nnx.missing_transpose", finding.params)
    return finding


def judge_warnings(case: Case, caught: list, _ref) -> Finding | None:
    # Only warnings raised from the student's own lines count: those from inside
    # an installed library are not theirs to fix.
    own = [w for w in caught if w["category"] in DEPRECATIONS
           and "site-packages" not in w["filename"] and "dist-packages" not in w["filename"]]
    for w in own:
        if "'.value'" in w["message"]:
            return Finding("nnx.deprecated_value", {"line": w["line"]})
    if own:
        return Finding("nnx.deprecated_api", {"category": own[0]["category"], "message": own[0]["message"],
                                              "line": own[0]["line"]})
    return None


# tied_io_embed: symptoms recognise a wrong result from the arguments alone.

def _embed_args(case: Case):
    seed, ids, v, d = case.args["args"]
    return int(seed), np.asarray(ids).astype(int), int(v), int(d)


def _embed_untransposed(case: Case, value) -> bool:
    seed, ids, v, d = _embed_args(case)
    return v == d and _untransposed(reference_embedding(seed, v, d), ids, np.reshape(value, (len(ids), v)))


def _embed_not_flattened(case: Case, value) -> bool:
    _, ids, v, _ = _embed_args(case)
    return np.shape(value) == (len(ids), v)


def _embed_unscaled(case: Case, value) -> bool:
    """The normal draw was not divided by sqrt(D): every logit is D times too large."""
    seed, ids, v, d = _embed_args(case)
    return d > 1 and close(value, d * reference_embed(seed, ids, v, d), 1e-4, 1e-4)


def _embed_ignores_seed(case: Case, value) -> bool:
    seed, ids, v, d = _embed_args(case)
    return seed != 0 and close(value, reference_embed(0, ids, v, d), 1e-4, 1e-5)


def _embed_untied(case: Case, value) -> bool:
    _, ids, v, _ = _embed_args(case)
    return np.size(value) == len(ids) * v and self_logits_negative(np.reshape(value, (len(ids), v)), ids)


# tied_grad_paths: symptoms compare with the two reference paths.

GRAD_TOL = dict(rtol=1e-4, atol=1e-6)


def _paths(case: Case):
    return reference_grad_paths(*case.args["args"])


def _grad_not_stacked(case: Case, value) -> bool:
    return np.shape(value) == np.shape(case.args["args"][0])


def _grad_swapped(case: Case, value) -> bool:
    ref = _paths(case)
    return np.shape(value) == ref.shape and close(value[::-1], ref, **GRAD_TOL)


def _grad_total(case: Case, value) -> bool:
    ref = _paths(case)
    total = ref[0] + ref[1]
    return np.shape(value) == ref.shape and any(close(value[k], total, **GRAD_TOL) for k in (0, 1))


def _grad_sum_not_mean(case: Case, value) -> bool:
    ref = _paths(case)
    t = len(case.args["args"][1])
    return t > 1 and np.shape(value) == ref.shape and close(value, t * ref, **GRAD_TOL)


def _grad_set_not_add(case: Case, value) -> bool:
    """Projection path right; lookup path right on tokens seen once, wrong on repeated ones."""
    ref = _paths(case)
    if np.shape(value) != ref.shape or not close(value[1], ref[1], **GRAD_TOL):
        return False
    ids, counts = np.unique(case.args["args"][1], return_counts=True)
    once, repeated = ids[counts == 1], ids[counts > 1]
    return (len(repeated) > 0 and close(value[0][once], ref[0][once], **GRAD_TOL)
            and not close(value[0][repeated], ref[0][repeated], **GRAD_TOL))


MISSING_TRANSPOSE = ErrorPattern("nnx.missing_transpose", r"TypeError|ValueError", r"dot_general requires contracting|matmul")
FLOAT_IDS = ErrorPattern("nnx.float_ids", r"TypeError|IndexError|ValueError",
                         r"integer or boolean|indices must be integers|Input type must be an integer")

CHAPTER = Chapter(
    id="02_nnx",
    title="Flax NNX",
    probe_module="grader.chapters.nnx_probe",
    errors=(MISSING_TRANSPOSE, FLOAT_IDS,
            ErrorPattern("nnx.no_embedding", r"AttributeError", r"has no attribute 'embedding'")),
    items=(
        Item(
            name="TiedEmbed.params", symbol="TiedEmbed", points=2, probe="tiedembed_structure",
            cases=structure_cases, reference=lambda case: None, judge=judge_structure,
        ),
        Item(
            name="TiedEmbed.__call__", symbol="TiedEmbed", points=2, probe="tiedembed_forward",
            cases=forward_cases,
            reference=lambda case: tied_logits(case.args["embedding"], case.args["token_ids"]),
            judge=judge_forward,
        ),
        Item(
            name="TiedEmbed.warnings", symbol="TiedEmbed", points=1, probe="tiedembed_warnings",
            cases=warnings_cases, reference=lambda case: None, judge=judge_warnings,
        ),
        Item(
            name="tied_io_embed", points=2, probe="call", cases=embed_cases,
            reference=lambda case: reference_embed(*_embed_args(case)),
            judge=matches_reference((
                Symptom("nnx.missing_transpose", _embed_untransposed),
                Symptom("common.not_flattened", _embed_not_flattened),
                Symptom("nnx.init_scale", _embed_unscaled),
                Symptom("nnx.ignores_seed", _embed_ignores_seed),
                Symptom("common.untied", _embed_untied),
            ), rtol=1e-5, atol=1e-5),
        ),
        Item(
            name="tied_grad_paths", points=3, probe="call", cases=grad_cases,
            reference=_paths,
            judge=matches_reference((
                Symptom("nnx.grad_not_stacked", _grad_not_stacked),
                Symptom("nnx.grad_swapped", _grad_swapped),
                Symptom("nnx.grad_total", _grad_total),
                Symptom("nnx.grad_sum_not_mean", _grad_sum_not_mean),
                Symptom("nnx.grad_set_not_add", _grad_set_not_add),
            ), **GRAD_TOL),
        ),
    ),
)

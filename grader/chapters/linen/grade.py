"""Chapter 01, Flax Linen: ``TiedIO``, ``tied_io_embed`` and ``SharedEmbedLM``.

The references of the tied matrix itself, which chapter 02 shares, are in
``tied_matrix`` (imported as ``tied``): the tied logits, the two paths of its gradient, and the symptoms that
name what a wrong lookup or projection did.  Here, one block per exercise, in the
notebook's order, each ending with its ``Item``.
"""
from __future__ import annotations

from dataclasses import replace
from functools import cache, partial

import numpy as np

import grader.chapters.tied_matrix as tied
from grader.chapters.linen.probe import INIT_STD, book_tiedio
from grader.comparisons import close, compare_arrays, one_array
from grader.drawing import hidden_rng
from grader.outcome import Finding
from grader.registry import Case, Chapter, ErrorPattern, Item, Promise

KEYS = tied.symptom_keys("linen")


# ---------------------------------------------------------------- TiedIO(vocab_size, d_model): its parameter

def judge_structure(case: Case, tree: dict, _ref) -> Finding | None:
    paths = tree["paths"]
    if len(paths) != 1:
        return Finding("linen.param_count", {"count": len(paths), "names": ", ".join(paths)})
    if paths[0] != "params/embedding":
        return Finding("linen.param_name", {"name": paths[0]})
    v, d, seed = case.args["vocab_size"], case.args["d_model"], case.args["seed"]
    return (tied.matrix_finding(tree["shapes"][0], tree["values"][0], case, INIT_STD, INIT_STD)
            or tied.draw_finding("linen", case, tree["values"][0], tree.get("again", []),
                                 reference_embedding(seed, v, d), lambda: transposed_draw(seed, v, d),
                                 INIT_STD, INIT_STD))


@cache
def transposed_draw(seed: int, vocab_size: int, d_model: int) -> np.ndarray:
    """What ``normal(stddev=0.02)`` draws for a (d, V) shape from the same key, transposed."""
    import jax
    import jax.numpy as jnp

    module = book_tiedio()(vocab_size=d_model, d_model=vocab_size)
    variables = module.init(jax.random.PRNGKey(seed), jnp.zeros((1,), jnp.int32))
    return np.asarray(variables["params"]["embedding"]).T


TIEDIO_PARAMS = tied.structure_item(
    "TiedIO", "tiedio_structure", judge_structure,
    promises=(
        Promise("a Linen module with fields vocab_size and d_model",
                "probe tiedio_structure builds TiedIO(vocab_size=V, d_model=d) by keyword"),
        Promise("it owns exactly one parameter", "judge_structure: linen.param_count; linen.second_param "
                "(NameInUseError)", keys=("linen.param_count", "linen.second_param")),
        Promise("named embedding", "judge_structure: linen.param_name (the path must be params/embedding)",
                keys=("linen.param_name",)),
        Promise("of shape (V, d)", "judge_structure: common.wrong_param_shape on V=4, d=3 (public), V=9 < d=12 and "
                "V=512, d=256 (hidden); linen.param_shape when the grader's (V, d) matrix is refused",
                keys=("common.wrong_param_shape", "linen.param_shape")),
        Promise("initialised with nn.initializers.normal(stddev=0.02)",
                "judge_structure: common.init_std on the V=512, d=256 case (tolerance 10 standard errors); "
                "tied.draw_finding: the values equal the seed's draw on seeds 0 and 3 (tied_io_embed runs with the "
                "book's TiedIO, so the draw is held here): linen.init_fixed_key for one matrix whatever the key, "
                "linen.init_transposed_draw for a (d, V) draw transposed, linen.init_other_draw otherwise",
                keys=("common.init_std", "linen.init_fixed_key", "linen.init_transposed_draw",
                      "linen.init_other_draw")),
        Promise("the worked example: one (4, 3) leaf", "public case V=4, d=3, seed 0, as in the notebook"),
    ),
)


# ---------------------------------------------------------------- TiedIO.__call__(token_ids) -> logits (T, V)

@cache
def reference_embedding(seed: int, vocab_size: int, d_model: int) -> np.ndarray:
    """The float32 matrix that ``TiedIO(V, d).init(PRNGKey(seed), ...)`` draws."""
    import jax
    import jax.numpy as jnp

    module = book_tiedio()(vocab_size=vocab_size, d_model=d_model)
    variables = module.init(jax.random.PRNGKey(seed), jnp.zeros((1,), jnp.int32))
    return np.asarray(variables["params"]["embedding"])


TIEDIO_CALL = Item(
    name="TiedIO.__call__", symbol="TiedIO", points=2, probe="tiedio_forward",
    promises=(
        *tied.ids_promises("tiedio_forward"),
        Promise("returns logits of shape (T, V)", "compare_arrays: common.wrong_shape; linen.product_transposed "
                "for embedding @ x.T; linen.no_lookup for (V, V); a tuple, list or dict of rows is "
                "common.not_one_array, judged from the raw type (probe tiedio_forward)",
                keys=("common.wrong_shape", "linen.product_transposed", "linen.no_lookup", "common.not_one_array")),
        Promise("look the ids up in it", "logits_symptom: linen.wrong_rows (an off-by-one or reordered lookup)",
                keys=("linen.wrong_rows",)),
        Promise("then project with its transpose", "logits_symptom: linen.missing_transpose (runs on the square "
                "case V=d=16, raises elsewhere: MISSING_TRANSPOSE); linen.scaled for a rescaled product",
                keys=("linen.missing_transpose", "linen.scaled")),
        Promise("the projection reads the same parameter", "the grader applies the module with only "
                "params/embedding given: a second parameter raises linen.param_not_found",
                keys=("linen.param_not_found", "linen.submodule")),
        Promise("values", "matches E[ids] @ E.T in float64 within rtol=1e-4, atol=1e-5, E written by the grader"),
    ),
    cases=partial(tied.forward_cases, "01_linen/TiedIO.__call__", reference_embedding),
    reference=tied.forward_reference,
    judge=one_array(tied.judge_logits(KEYS, lambda case: case.args["embedding"], flat=False)),
)


# ---------------------------------------------------------------- TiedIO: the gradient reaches the matrix by both paths

GRAD_PUBLIC = dict(token_ids=[0, 2, 2], targets=[2, 2, 3])  # the gradient cell, on the worked example's module


def gradient_cases() -> list[Case]:
    """The notebook's gradient cell (its module's matrix, its ids and targets), then
    matrices the grader draws."""
    rng = hidden_rng("01_linen/TiedIO.gradient")
    v, d = tied.PUBLIC["vocab_size"], tied.PUBLIC["d_model"]
    found = [Case("case.worked_example", dict(vocab_size=v, d_model=d, **GRAD_PUBLIC,
                                              embedding=reference_embedding(0, v, d)),
                  True, tied.shape_shown(T=len(GRAD_PUBLIC["token_ids"]), V=v, d=d))]
    for t, v, d in tied.GRAD_SHAPES:
        args = dict(vocab_size=v, d_model=d, token_ids=tied.edge_ids(rng, t, v),
                    targets=[int(i) for i in rng.integers(0, v, size=t)], embedding=tied.random_matrix(rng, v, d))
        found.append(Case("case.hidden", args, shown=tied.shape_shown(T=t, V=v, d=d)))
    return found


TIEDIO_GRADIENT = Item(
    name="TiedIO.gradient", symbol="TiedIO", points=2, probe="tiedio_gradient",
    promises=(
        *tied.gradient_promises("both uses of embedding stay differentiable: the gradient of a loss with respect to "
                                "it is the sum of the lookup path and the projection path",
                                "probe tiedio_gradient takes jax.grad of the mean cross-entropy through TiedIO.apply",
                                KEYS, "linen.grad_numpy",
                                ("for logits returned as a tuple, list or dict of rows", "common.not_one_array")),
        Promise("the worked example: ids [0, 2, 2], targets [2, 2, 3] on the module's own (4, 3) matrix prints True",
                "public case: the same matrix (TiedIO(4, 3) at PRNGKey(0)), ids and targets"),
        Promise("1 to 64 ids, with V up to 512 and d up to 256", "hidden cases T=1; T=64, V=9 (every id repeats); "
                "T=64, V=512, d=256"),
    ),
    cases=gradient_cases, reference=tied.gradient_reference, judge=tied.judge_gradient(KEYS),
    errors=(ErrorPattern("linen.grad_numpy", r"TracerArrayConversionError"),),
)


# ---------------------------------------------------------------- tied_io_embed(seed, token_ids, vocab_size, d_model)

# tied_io_embed's logits are about 0.02² · d: its own, tighter tolerance.
EMBED_TOL = dict(rtol=1e-5, atol=1e-6)


TIED_IO_EMBED = tied.embed_item(
    "01_linen", "linen", points=3, stands_on="TiedIO", drawn=reference_embedding, tol=EMBED_TOL,
    build=Promise("initialise TiedIO with jax.random.PRNGKey(int(seed))", "values equal the reference's draw for "
                  "each hidden seed (all >= 1): linen.ignores_seed for seed 0's logits; FLOAT_SEED: linen.float_seed; "
                  "probe call_alone runs it with the book's TiedIO, so TiedIO's mistakes stay TiedIO's",
                  keys=("linen.ignores_seed", "linen.float_seed")),
    apply=Promise("apply it", "logits_symptom, as for __call__, on the reference's matrix for the seed; "
                  "common.untied when a token's logit with itself is negative; linen.scaled",
                  keys=("common.untied", "linen.scaled")),
)


# ---------------------------------------------------------------- SharedEmbedLM: one nn.Embed, used by lookup and head

# Its parameter tree, as jax.tree_util lists it (sorted keys), with each leaf's shape.
SHARED_LEAVES = {"params/embed/embedding": ("V", "D"), "params/mixer/bias": ("D",), "params/mixer/kernel": ("D", "D")}
SHARED_PUBLIC = dict(vocab_size=8, d_model=4, token_ids=[1, 3, 3, 7])  # the notebook's worked example


def shared_structure_cases() -> list[Case]:
    v, d = SHARED_PUBLIC["vocab_size"], SHARED_PUBLIC["d_model"]
    return [
        Case("case.worked_example", {"vocab_size": v, "d_model": d, "seed": 0}, True, tied.shape_shown(V=v, d=d)),
        # V < d, V = d (where a (d, V) head kernel has the mixer's shape), and the largest sizes.
        Case("case.hidden", {"vocab_size": 9, "d_model": 12, "seed": 3}, shown=tied.shape_shown(V=9, d=12)),
        Case("case.hidden", {"vocab_size": 16, "d_model": 16, "seed": 5}, shown=tied.shape_shown(V=16, d=16)),
        Case("case.hidden", {"vocab_size": tied.MAX_VOCAB, "d_model": tied.MAX_D, "seed": 7},
             shown=tied.shape_shown(V=tied.MAX_VOCAB, d=tied.MAX_D)),
    ]


def judge_shared_structure(case: Case, tree: dict, _ref) -> Finding | None:
    v, d = case.args["vocab_size"], case.args["d_model"]
    sizes = {"V": v, "D": d}
    expected = {path: [sizes[s] for s in shape] for path, shape in SHARED_LEAVES.items()}
    paths, shapes = list(tree["paths"]), [list(s) for s in tree["shapes"]]
    tables = [p for p, s in zip(paths, shapes) if p.endswith("/embedding") and s == [v, d]]
    if len(tables) > 1:
        return Finding("linen.shared_two_embeds", {"names": ", ".join(tables)})
    # A head of its own: a (d, V) matrix besides the table (as an nn.Dense kernel or a param).
    heads = [p for p, s in zip(paths, shapes) if s == [d, v] and p not in expected]
    if heads:
        return Finding("linen.shared_dense_head", {"names": ", ".join(heads)})
    if not any(p.startswith("params/mixer/") for p in paths):
        return Finding("linen.shared_no_mixer", {"names": ", ".join(paths)})
    if sorted(paths) != sorted(expected):
        return Finding("linen.shared_param_names", {"names": ", ".join(paths), "expected": ", ".join(expected)})
    for path, shape in zip(paths, shapes):
        if shape != expected[path]:
            return Finding("common.wrong_param_shape", {"got": tuple(shape), "expected": tuple(expected[path])})
    # As for TiedIO: the std of the table.
    return tied.init_std_finding(tree["values"][paths.index("params/embed/embedding")], v * d, INIT_STD, INIT_STD)


SHARED_PARAMS = Item(
    name="SharedEmbedLM.params", symbol="SharedEmbedLM", points=2, probe="shared_structure",
    promises=(
        Promise("a Linen module SharedEmbedLM with fields vocab_size and d_model",
                "probe shared_structure builds SharedEmbedLM(vocab_size=V, d_model=d) by keyword"),
        Promise("ONE nn.Embed named embed: params/embed/embedding of shape (V, d)",
                "judge_shared_structure: linen.shared_two_embeds for a second (V, d) table; "
                "linen.shared_param_names for another name; common.wrong_param_shape",
                keys=("linen.shared_two_embeds", "linen.shared_param_names", "common.wrong_param_shape")),
        Promise("the head is that table (embed.attend), not a matrix of its own",
                "judge_shared_structure: linen.shared_dense_head for any (d, V) leaf outside the three expected "
                "paths (V=d=16 hidden case included: a head's kernel then has the mixer's shape but another path); "
                "the forward item gives only the three expected leaves, so a head of its own raises "
                "linen.param_not_found", keys=("linen.shared_dense_head", "linen.param_not_found")),
        Promise("an nn.Dense(d_model) named mixer between lookup and head: params/mixer/kernel (d, d) and "
                "params/mixer/bias (d,)", "judge_shared_structure: linen.shared_no_mixer when no params/mixer leaf "
                "exists; linen.shared_param_names for a missing bias or other names; common.wrong_param_shape",
                keys=("linen.shared_no_mixer", "linen.shared_param_names", "common.wrong_param_shape")),
        Promise("nothing else: exactly those three leaves", "judge_shared_structure: linen.shared_param_names",
                keys=("linen.shared_param_names",)),
        Promise("the table initialised with nn.initializers.normal(stddev=0.02)",
                "judge_shared_structure: common.init_std on the V=512, d=256 case (ten standard errors)",
                keys=("common.init_std",)),
        Promise("the worked example: V=8, d=4, the printed tree of shapes", "public case V=8, d=4, seed 0"),
    ),
    cases=shared_structure_cases, reference=lambda case: None, judge=judge_shared_structure,
)


# ---------------------------------------------------------------- SharedEmbedLM.__call__(token_ids) -> logits (T, V)

def shared_forward_cases() -> list[Case]:
    """Parameters the grader draws (the table, the mixer's kernel and bias), each sized
    so that every logit is O(1), and ids with both ends of the vocabulary."""
    rng = hidden_rng("01_linen/SharedEmbedLM.__call__")
    public = (len(SHARED_PUBLIC["token_ids"]), SHARED_PUBLIC["vocab_size"], SHARED_PUBLIC["d_model"])
    found = []
    for t, v, d in (public, *tied.HIDDEN_SHAPES):
        worked = not found
        ids = SHARED_PUBLIC["token_ids"] if worked else tied.edge_ids(rng, t, v)
        args = dict(vocab_size=v, d_model=d, token_ids=ids, embedding=tied.random_matrix(rng, v, d),
                    kernel=rng.normal(0.0, d ** -0.5, (d, d)).astype(np.float32),
                    bias=rng.normal(0.0, d ** -0.25, (d,)).astype(np.float32))
        found.append(Case("case.worked_example" if worked else "case.hidden", args, worked,
                          tied.shape_shown(T=t, V=v, d=d)))
    return found


def shared_logits(args: dict, mixed: bool = True) -> np.ndarray:
    """``mixer(E[ids]) @ E.T`` in float64, or ``E[ids] @ E.T`` without the mixer."""
    emb = np.asarray(args["embedding"], np.float64)
    x = emb[np.asarray(args["token_ids"], int)]
    if mixed:
        x = x @ np.asarray(args["kernel"], np.float64) + np.asarray(args["bias"], np.float64)
    return x @ emb.T


def judge_shared_forward(case: Case, value, ref) -> Finding | None:
    finding = compare_arrays(value, ref, **tied.FORWARD_TOL, dtype="float32")
    if finding is None or finding.key != "common.wrong_values":
        return finding
    if close(value, shared_logits(case.args, mixed=False), **tied.FORWARD_TOL):
        return Finding("linen.shared_mixer_skipped", finding.params)
    return finding


SHARED_CALL = Item(
    name="SharedEmbedLM.__call__", symbol="SharedEmbedLM", points=2, probe="shared_forward",
    promises=(
        Promise("__call__(token_ids) takes int ids of shape (T,)", "probe shared_forward passes int32 ids"),
        Promise("1 to 64 ids, each in 0..V-1, V up to 512, d up to 256",
                "hidden cases T=1; V=d=16; T=64 over V=9; T=33, V=50; T=64, V=512, d=256; ids hold V-1 and 0"),
        Promise("returns float32 logits of shape (T, V)", "compare_arrays: common.wrong_shape, common.wrong_dtype",
                keys=("common.wrong_shape", "common.wrong_dtype")),
        Promise("look the ids up in embed, apply mixer, then embed.attend",
                "the grader applies the module with its own table, kernel and bias and compares with "
                "(E[ids] @ W + b) @ E.T in float64 within rtol=1e-4, atol=1e-5; linen.shared_mixer_skipped when "
                "the result is E[ids] @ E.T", keys=("linen.shared_mixer_skipped",)),
        Promise("the worked example: logits (4, 8) float32 that equal the hand-written mixer(E[ids]) @ E.T",
                "public case: V=8, d=4, the notebook's ids [1, 3, 3, 7], parameters the grader draws"),
    ),
    cases=shared_forward_cases, reference=lambda case: shared_logits(case.args), judge=judge_shared_forward,
)


# ------------------------------------------------ SharedEmbedLM: the gradient reaches the table by both paths

SHARED_GRAD_PUBLIC = dict(token_ids=SHARED_PUBLIC["token_ids"], targets=[3, 3, 7, 0])


def shared_gradient_cases() -> list[Case]:
    """The forward cases (the grader's table, kernel and bias), each with targets."""
    rng = hidden_rng("01_linen/SharedEmbedLM.gradient")
    found = []
    for case in shared_forward_cases():
        targets = (SHARED_GRAD_PUBLIC["targets"] if case.public
                   else [int(i) for i in rng.integers(0, case.args["vocab_size"], size=len(case.args["token_ids"]))])
        found.append(replace(case, args={**case.args, "targets": targets}))
    return found


def shared_gradient_reference(case: Case) -> dict:
    args = case.args
    return {"logits": shared_logits(args),
            "paths": tied.gradient_paths(args["embedding"], args["token_ids"], args["targets"], args["kernel"],
                                    args["bias"])}


SHARED_KEYS = dict(grad_after_forward="linen.shared_grad_after_forward", grad_blocked="linen.shared_grad_blocked",
                   grad_lookup_blocked="linen.shared_grad_lookup_blocked",
                   grad_head_blocked="linen.shared_grad_head_blocked")

SHARED_GRADIENT = Item(
    name="SharedEmbedLM.gradient", symbol="SharedEmbedLM", points=2, probe="shared_gradient",
    promises=(
        *tied.gradient_promises("the head is the table itself: the gradient of a loss with respect to "
                                "embed.embedding is the sum of the lookup path and the embed.attend path",
                                "probe shared_gradient takes jax.grad of the mean cross-entropy through "
                                "SharedEmbedLM.apply with respect to the table (the grader's kernel and bias fixed; "
                                "the paths go through the mixer)", SHARED_KEYS, "linen.grad_numpy"),
    ),
    cases=shared_gradient_cases, reference=shared_gradient_reference, judge=tied.judge_gradient(SHARED_KEYS),
    errors=(ErrorPattern("linen.grad_numpy", r"TracerArrayConversionError"),),
)


# ---------------------------------------------------------------- the chapter

MISSING_TRANSPOSE = ErrorPattern("linen.missing_transpose", r"TypeError|ValueError",
                                 r"dot_general requires contracting|matmul")
FLOAT_IDS = ErrorPattern("linen.float_ids", r"TypeError|IndexError", r"integer or boolean|indices must be integers")
FLOAT_SIZES = ErrorPattern("linen.float_sizes", r"TypeError",
                           r"Shapes must be 1D sequences of concrete values of integer")
FLOAT_SEED = ErrorPattern("linen.float_seed", r"TypeError", r"PRNG key seed must be an integer")
# An nn.Embed named "embedding" looks for its own dict of parameters in the grader's array.
SUBMODULE = ErrorPattern("linen.submodule", r"TypeError", r"Array.__contains__: unsupported operand type")

CHAPTER = Chapter(
    id="01_linen",
    title="Flax Linen",
    probe_module="grader.chapters.linen.probe",
    errors=(MISSING_TRANSPOSE, FLOAT_IDS, FLOAT_SIZES, FLOAT_SEED, SUBMODULE,
            ErrorPattern("linen.second_param", r"NameInUseError"),
            ErrorPattern("linen.param_not_found", r"ScopeParamNotFoundError",
                         r'^(?:.*?named "(?P<name>[^"]+)" in scope "[^"]*")?'),
            ErrorPattern("linen.param_shape", r"ScopeParamShapeError")),
    items=(TIEDIO_PARAMS, TIEDIO_CALL, TIEDIO_GRADIENT, TIED_IO_EMBED, SHARED_PARAMS, SHARED_CALL, SHARED_GRADIENT),
)

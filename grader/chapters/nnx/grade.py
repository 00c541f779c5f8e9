"""Chapter 02, Flax NNX: ``TiedEmbed``, ``tied_io_embed`` and ``tied_grad_paths``.

The tied logits, the two paths of the gradient and the symptoms of a wrong lookup or
projection are shared with chapter 01 (``tied_matrix``, imported as ``tied``): the matrix
is the same, only its holder differs.  What the module's items share comes first, then one block per exercise, in
the notebook's order, each ending with its ``Item``.
"""
from __future__ import annotations

from functools import cache, partial

import numpy as np

import grader.chapters.tied_matrix as tied
from grader.chapters.nnx.probe import book_tiedembed
from grader.comparisons import CONTAINERS, close, matches_reference, one_array
from grader.drawing import hidden_rng
from grader.numerics import extremes
from grader.outcome import Finding
from grader.registry import Case, Chapter, ErrorPattern, Item, Promise, Symptom

KEYS = tied.symptom_keys("nnx")
PROBED = ("kind", "params", "path", "logits")  # what the forward and gradient probes report


@cache
def reference_embedding(seed: int, vocab_size: int, d_model: int) -> np.ndarray:
    """The float32 matrix that ``TiedEmbed(V, d, rngs=nnx.Rngs(seed))`` draws."""
    from flax import nnx

    model = book_tiedembed()(vocab_size, d_model, rngs=nnx.Rngs(seed))
    return np.asarray(model.embedding[...])


def _names(paths) -> str:
    return ", ".join(paths) or "-"


def malformed(value, fields=PROBED) -> Finding | None:
    """A report that is not what the probe writes (a channel someone altered)."""
    if isinstance(value, dict) and all(f in value for f in fields) and isinstance(value["params"], list):
        return None
    return Finding("common.not_an_array", {"type": type(value).__name__})


def nowhere_written(value: dict) -> Finding:
    """The module keeps no (V, d) matrix where the grader could write its own: at
    self.embedding something that is no parameter, and no nnx.Param anywhere (that is
    all nnx.state(model, nnx.Param) can miss), or parameters none of which fits."""
    if value["kind"] and not value["params"]:
        return Finding("nnx.not_a_param", {"name": "embedding", "kind": value["kind"]})
    return Finding("nnx.no_matrix", {"names": _names(value["params"])})


# ---------------------------------------------------------------- TiedEmbed(vocab_size, d_model, rngs): its parameter

def judge_structure(case: Case, tree: dict, _ref) -> Finding | None:
    paths, shapes, values = tree["paths"], tree["shapes"], tree["values"]
    v, d = case.args["vocab_size"], case.args["d_model"]
    if not paths:
        for other in tree["others"]:
            if sorted(other["shape"]) == sorted([v, d]):
                return Finding("nnx.not_a_param", {"name": other["path"], "kind": other["kind"]})
        return Finding("nnx.no_param")
    if len(paths) > 1:
        prints = [extremes(v) for v in values]
        copies = [p for p, f in zip(paths[1:], prints[1:]) if f is not None and prints[0] is not None
                  and f.shape == prints[0].shape and np.allclose(f, prints[0], rtol=1e-6, atol=0)]
        if copies:
            return Finding("nnx.copied_param", {"names": _names(paths), "copy": _names(copies)})
        return Finding("nnx.param_count", {"count": len(paths), "names": _names(paths)})
    if "/" in paths[0]:  # an nnx.Param inside a submodule, such as nnx.Embed's
        return Finding("nnx.param_in_submodule", {"name": paths[0]})
    if paths[0] != "embedding":
        return Finding("nnx.param_name", {"name": paths[0]})
    expected = 1.0 / np.sqrt(d)
    return (tied.matrix_finding(shapes[0], values[0], case, expected, f"1/√{d} ≈ {expected:.4g}")
            or tied.draw_finding("nnx", case, values[0], tree.get("again", []),
                                 reference_embedding(case.args["seed"], v, d),
                                 lambda: transposed_draw(case.args["seed"], v, d), expected,
                                 f"1/√{d} ≈ {expected:.4g}"))


@cache
def transposed_draw(seed: int, vocab_size: int, d_model: int) -> np.ndarray:
    """A (d, V) draw of the seed's key, transposed and divided by sqrt(d): another matrix."""
    import jax
    from flax import nnx

    draw = jax.random.normal(nnx.Rngs(seed).params(), (d_model, vocab_size))
    return np.asarray(draw).T / np.sqrt(d_model)


TIEDEMBED_PARAMS = tied.structure_item(
    "TiedEmbed", "tiedembed_structure", judge_structure,
    promises=(
        Promise("built as TiedEmbed(vocab_size, d_model, rngs=nnx.Rngs(seed))",
                "probe _build: V and d positional, rngs by keyword, as the notebook writes it"),
        Promise("stores the matrix as the only parameter", "judge_structure: nnx.param_count; nnx.copied_param for "
                "a second Param that starts as a copy; nnx.no_param",
                keys=("nnx.param_count", "nnx.copied_param", "nnx.no_param")),
        Promise("self.embedding = nnx.Param(...)", "judge_structure: nnx.param_name; nnx.param_in_submodule (an "
                "nnx.Embed's Param); nnx.not_a_param for a plain array or another Variable kind",
                keys=("nnx.param_name", "nnx.param_in_submodule", "nnx.not_a_param", "nnx.no_embedding",
                      "nnx.no_matrix")),
        Promise("a (V, d) matrix", "judge_structure: common.wrong_param_shape on V=4, d=3 (public), V=9 < d=12 and "
                "V=512, d=256 (hidden)", keys=("common.wrong_param_shape",)),
        Promise("drawn from jax.random.normal with rngs.params(), divided by sqrt(d)",
                "judge_structure: common.init_std on V=512, d=256 (10 standard errors); tied.draw_finding: the values "
                "equal the seed's draw on seeds 0 and 3 (tied_io_embed runs with the book's TiedEmbed, so the "
                "draw is held here): nnx.init_fixed_key for the same matrix whatever the seed, "
                "nnx.init_transposed_draw for a (d, V) draw transposed, nnx.init_other_draw otherwise",
                keys=("common.init_std", "nnx.init_fixed_key", "nnx.init_transposed_draw", "nnx.init_other_draw")),
        Promise("the worked example: nnx.state(model, nnx.Param) holds one (4, 3) entry",
                "public case V=4, d=3, seed 0"),
    ),
)


# ---------------------------------------------------------------- TiedEmbed.__call__(token_ids) -> logits (T, V)

_judge_logits = tied.judge_logits(KEYS, lambda case: case.args["embedding"], flat=False)


def judge_forward(case: Case, value: dict, ref) -> Finding | None:
    if malformed(value):
        return malformed(value)
    if value["logits"] is None:
        return nowhere_written(value)
    if value.get("type") in CONTAINERS:
        return Finding("common.not_one_array", {"got": value["type"]})
    finding = _judge_logits(case, value["logits"], ref)
    if finding is not None and finding.key in ("common.wrong_values", "common.untied") and len(value["params"]) > 1:
        return Finding("nnx.forward_untied", {"count": len(value["params"]), "names": _names(value["params"])})
    return finding


TIEDEMBED_CALL = Item(
    name="TiedEmbed.__call__", symbol="TiedEmbed", points=2, probe="tiedembed_forward",
    promises=(
        *tied.ids_promises("tiedembed_forward"),
        Promise("returns logits of shape (T, V)", "common.wrong_shape; nnx.product_transposed; nnx.no_lookup; a "
                "tuple, list or dict of rows is common.not_one_array, judged from the raw type",
                keys=("common.wrong_shape", "nnx.product_transposed", "nnx.no_lookup", "common.not_one_array")),
        Promise("look the ids up in the matrix", "nnx.wrong_rows (an off-by-one or reordered lookup)",
                keys=("nnx.wrong_rows",)),
        Promise("then project with its transpose", "nnx.missing_transpose (square case, or MISSING_TRANSPOSE); "
                "nnx.scaled; nnx.forward_untied when the projection reads a second Param",
                keys=("nnx.missing_transpose", "nnx.scaled", "nnx.forward_untied")),
        Promise("values", "E[ids] @ E.T in float64 within rtol=1e-4, atol=1e-5, E written by the grader into "
                "self.embedding (or the module's only (V, d) Param: the forward pass is judged on its own)"),
    ),
    cases=partial(tied.forward_cases, "02_nnx/TiedEmbed.__call__", reference_embedding),
    reference=tied.forward_reference,
    judge=judge_forward,
)


# ------------------------------------------------------------- TiedEmbed: the gradient reaches the matrix by both paths

# The gradient cells: E = normal(key(1), (5, 3)) / sqrt(3), and ids that repeat token 2,
# so that a lookup gradient written with .set instead of .add already shows there.
GRAD_PUBLIC = dict(token_ids=[0, 2, 2], targets=[2, 2, 4], vocab_size=5, d_model=3, key=1)


@cache
def worked_matrix() -> np.ndarray:
    """The matrix of the notebook's gradient cells: ``normal(key(1), (5, 3)) / sqrt(3)``."""
    import jax
    import jax.numpy as jnp

    v, d = GRAD_PUBLIC["vocab_size"], GRAD_PUBLIC["d_model"]
    return np.asarray(jax.random.normal(jax.random.key(GRAD_PUBLIC["key"]), (v, d)) / jnp.sqrt(float(d)))


def _grad_inputs(name: str) -> list[tuple[dict, dict]]:
    """(embedding, ids, targets) of the gradient items, with the sizes each shows: the
    notebook's gradient cell, then matrices, ids and targets the grader draws."""
    rng = hidden_rng(name)
    v, d = GRAD_PUBLIC["vocab_size"], GRAD_PUBLIC["d_model"]
    found = [(dict(embedding=worked_matrix(), token_ids=GRAD_PUBLIC["token_ids"], targets=GRAD_PUBLIC["targets"]),
              tied.shape_shown(T=len(GRAD_PUBLIC["token_ids"]), V=v, d=d))]
    for t, v, d in tied.GRAD_SHAPES:
        found.append((dict(embedding=tied.random_matrix(rng, v, d), token_ids=tied.edge_ids(rng, t, v),
                           targets=[int(i) for i in rng.integers(0, v, size=t)]), tied.shape_shown(T=t, V=v, d=d)))
    return found


def gradient_cases() -> list[Case]:
    found = []
    for n, (args, shown) in enumerate(_grad_inputs("02_nnx/TiedEmbed.gradient")):
        v, d = args["embedding"].shape
        found.append(Case("case.hidden" if n else "case.worked_example",
                          dict(vocab_size=v, d_model=d, **args), n == 0, shown))
    return found


_judge_gradient = tied.judge_gradient(KEYS)


def judge_model_gradient(case: Case, value: dict, ref: dict) -> Finding | None:
    """The gradient nnx.grad gives the module's matrix; a matrix it does not see as a
    parameter gets none at all."""
    if malformed(value, PROBED + ("grad",)):
        return malformed(value, PROBED + ("grad",))
    if value["path"] is None:
        return nowhere_written(value)
    finding = _judge_gradient(case, value, ref)
    if finding is not None and finding.key == "common.not_an_array" and value["grad"] is None:
        return Finding("nnx.grad_not_a_param", {"kind": value["kind"]})
    return finding


TIEDEMBED_GRADIENT = Item(
    name="TiedEmbed.gradient", symbol="TiedEmbed", points=2, probe="tiedembed_gradient",
    promises=(
        *tied.gradient_promises("the matrix is the one parameter nnx.grad trains: its gradient is the sum of the "
                                "lookup path and the projection path",
                                "probe tiedembed_gradient takes nnx.grad of the mean cross-entropy through the "
                                "student's module, of the matrix", KEYS, "nnx.grad_numpy",
                                ("when nnx.grad gives the matrix nothing", "nnx.grad_not_a_param"),
                                ("for logits returned as a tuple, list or dict of rows", "common.not_one_array"),
                                unblocked="nothing may stop it (jax.lax.stop_gradient, a NumPy round trip)"),
        Promise("the worked example: E = normal(key(1), (5, 3)) / sqrt(3), ids [0, 2, 2], targets [2, 2, 4]",
                "public case: the same matrix, ids and targets"),
        Promise("1 to 64 ids, V up to 512, d up to 256",
                "hidden cases T=1; T=64, V=9 (every id repeats); T=64, V=512, d=256"),
    ),
    cases=gradient_cases, reference=tied.gradient_reference, judge=judge_model_gradient,
    errors=(ErrorPattern("nnx.grad_numpy", r"TracerArrayConversionError"),),
)


# ---------------------------------------------------------------- TiedEmbed raises no deprecation warning

DEPRECATIONS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


def warnings_cases() -> list[Case]:
    t, v, d = len(tied.PUBLIC["token_ids"]), tied.PUBLIC["vocab_size"], tied.PUBLIC["d_model"]
    return [Case("case.worked_example", {"vocab_size": v, "d_model": d, "token_ids": tied.PUBLIC["token_ids"]}, True,
                 tied.shape_shown(T=t, V=v, d=d))]


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


TIEDEMBED_WARNINGS = Item(
    name="TiedEmbed.warnings", symbol="TiedEmbed", points=1, probe="tiedembed_warnings",
    promises=(
        Promise("read the array with self.embedding[...]; the class raises no DeprecationWarning",
                "probe tiedembed_warnings records the deprecation warnings of building and calling it; those from "
                "the student's lines fail: nnx.deprecated_value for .value, nnx.deprecated_api otherwise",
                keys=("nnx.deprecated_value", "nnx.deprecated_api")),
    ),
    cases=warnings_cases, reference=lambda case: None, judge=judge_warnings,
)


# ---------------------------------------------------------------- tied_io_embed(seed, token_ids, vocab_size, d_model)

EMBED_TOL = dict(rtol=1e-5, atol=1e-5)


def init_scale(case: Case, value, ref, finding: Finding) -> Finding | None:
    """The normal draw not divided by sqrt(d): every logit d times too large."""
    d = tied.embed_sizes(case)[2]
    if d > 1 and close(value, d * ref, rtol=1e-4, atol=1e-4):
        return Finding("nnx.init_scale", finding.params)
    return None


TIED_IO_EMBED = tied.embed_item(
    "02_nnx", "nnx", points=2, stands_on="TiedEmbed", drawn=reference_embedding, tol=EMBED_TOL,
    build=Promise("build TiedEmbed with nnx.Rngs(int(seed))", "values equal the reference's draw for each hidden "
                  "seed (all >= 1): nnx.ignores_seed; nnx.init_scale for an undivided draw; FLOAT_SEED: "
                  "nnx.float_seed; probe call_alone runs it with the book's TiedEmbed, so TiedEmbed's mistakes "
                  "stay TiedEmbed's", keys=("nnx.ignores_seed", "nnx.init_scale", "nnx.float_seed")),
    apply=Promise("call it", "the symptoms of __call__ on the reference's matrix for the seed; common.untied",
                  keys=("common.untied",)),
    retried=("common.wrong_values", "nnx.scaled"), also=init_scale,
)


# ---------------------------------------------------------- tied_grad_paths(embedding, token_ids, targets) -> (2, V, d)

def grad_cases() -> list[Case]:
    found = []
    for n, (args, shown) in enumerate(_grad_inputs("02_nnx/tied_grad_paths")):
        call = [args["embedding"], np.asarray(args["token_ids"], np.int32), np.asarray(args["targets"], np.int32)]
        found.append(Case("case.hidden" if n else "case.worked_example", {"args": call}, n == 0, shown))
    return found


def _paths(case: Case):
    return tied.gradient_paths(*case.args["args"])


# The symptoms compare with the two reference paths, ``ref``.

def _grad_not_stacked(case: Case, value, ref) -> bool:
    return np.shape(value) == ref.shape[1:]


def _grad_swapped(case: Case, value, ref) -> bool:
    return np.shape(value) == ref.shape and close(value[::-1], ref, **tied.GRAD_TOL)


def _grad_total(case: Case, value, ref) -> bool:
    total = ref[0] + ref[1]
    return np.shape(value) == ref.shape and any(close(value[k], total, **tied.GRAD_TOL) for k in (0, 1))


def _grad_sum_not_mean(case: Case, value, ref) -> bool:
    t = len(case.args["args"][1])
    return t > 1 and np.shape(value) == ref.shape and close(value, t * ref, **tied.GRAD_TOL)


def _grad_set_not_add(case: Case, value, ref) -> bool:
    """Projection path right; lookup path right on tokens seen once, wrong on repeated ones."""
    if np.shape(value) != ref.shape or not close(value[1], ref[1], **tied.GRAD_TOL):
        return False
    ids, counts = np.unique(case.args["args"][1], return_counts=True)
    once, repeated = ids[counts == 1], ids[counts > 1]
    return (len(repeated) > 0 and close(value[0][once], ref[0][once], **tied.GRAD_TOL)
            and not close(value[0][repeated], ref[0][repeated], **tied.GRAD_TOL))


def _grad_slot_zero(slot: int):
    """One path right, the other all zeros: something stopped the gradient on that path."""

    def test(case: Case, value, ref) -> bool:
        return (np.shape(value) == ref.shape and close(value[1 - slot], ref[1 - slot], **tied.GRAD_TOL)
                and not np.any(np.asarray(value[slot])))

    return test


TIED_GRAD_PATHS = Item(
    name="tied_grad_paths", points=3, probe="typed_call",
    promises=(
        Promise("tied_grad_paths(embedding, token_ids, targets): a (V, d) float32 matrix and int ids and targets of "
                "shape (T,)", "cases send a float32 array and two int32 arrays, positionally"),
        Promise("returns both paths stacked, shape (2, V, d)", "nnx.grad_not_stacked for one (V, d) matrix, and for a "
                "tuple, list or dict, judged from the raw type (probe typed_call); common.wrong_shape",
                keys=("nnx.grad_not_stacked", "common.wrong_shape")),
        Promise("[0] the lookup path, [1] the projection path", "nnx.grad_swapped; nnx.grad_total for the sum in "
                "one slot; nnx.grad_lookup_zero / nnx.grad_head_zero for a path stopped to zeros",
                keys=("nnx.grad_swapped", "nnx.grad_total", "nnx.grad_lookup_zero", "nnx.grad_head_zero")),
        Promise("of the mean cross-entropy", "nnx.grad_sum_not_mean", keys=("nnx.grad_sum_not_mean",)),
        Promise("a repeated id adds its gradient to the row", "nnx.grad_set_not_add; the public case repeats token 2",
                keys=("nnx.grad_set_not_add",)),
        Promise("the grader compares them with what nnx.grad gives", "gradient_paths in float64, rtol=1e-4, "
                "atol=1e-6; no dtype is imposed (NumPy by hand is allowed)"),
        Promise("the worked example: E = normal(key(1), (5, 3)) / sqrt(3), ids [0, 2, 2], targets [2, 2, 4]",
                "public case: the same matrix, ids and targets"),
        Promise("1 to 64 ids, V up to 512, d up to 256",
                "hidden cases T=1; T=64, V=9 (every id repeats); T=64, V=512, d=256"),
    ),
    cases=grad_cases, reference=_paths,
    judge=one_array(matches_reference((
        Symptom("nnx.grad_not_stacked", _grad_not_stacked),
        Symptom("nnx.grad_swapped", _grad_swapped),
        Symptom("nnx.grad_total", _grad_total),
        Symptom("nnx.grad_sum_not_mean", _grad_sum_not_mean),
        Symptom("nnx.grad_set_not_add", _grad_set_not_add),
        Symptom("nnx.grad_lookup_zero", _grad_slot_zero(0)),
        Symptom("nnx.grad_head_zero", _grad_slot_zero(1)),
    ), **tied.GRAD_TOL), key="nnx.grad_not_stacked"),
)


# ---------------------------------------------------------------- the chapter

CHAPTER = Chapter(
    id="02_nnx",
    title="Flax NNX",
    probe_module="grader.chapters.nnx.probe",
    errors=(ErrorPattern("nnx.missing_transpose", r"TypeError|ValueError", r"dot_general requires contracting|matmul"),
            ErrorPattern("nnx.float_ids", r"TypeError|IndexError|ValueError",
                         r"integer or boolean|indices must be integers|Input type must be an integer"),
            ErrorPattern("nnx.float_sizes", r"TypeError", r"Shapes must be 1D sequences of concrete values of integer"),
            ErrorPattern("nnx.float_seed", r"TypeError|ValueError",
                         r"seed must be an integer|Invalid rng value: [-0-9.e]+,"),
            ErrorPattern("nnx.no_embedding", r"AttributeError", r"has no attribute 'embedding'")),
    items=(TIEDEMBED_PARAMS, TIEDEMBED_CALL, TIEDEMBED_GRADIENT, TIEDEMBED_WARNINGS, TIED_IO_EMBED, TIED_GRAD_PATHS),
)

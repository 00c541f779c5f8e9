"""Chapter 07, one matrix in three frameworks: ``linen_to_torch`` and ``torch_to_nnx``.

Both functions convert the checkpoint of one small tied model (an embedding, a square
"mixer" Dense layer, and the tied output projection) between frameworks.  The probes
(``frameworks_probe.py``) hand the student's function a checkpoint built from the
grader's arrays and report what the returned model holds and computes; every
comparison is here, against float64 references.
"""
from __future__ import annotations

import numpy as np

from ..cases import hidden_rng, token_ids
from ..judge import close, compare_arrays, describe_shape
from ..registry import Case, Chapter, ErrorPattern, Finding, Item

CHAPTER_ID = "07_three_frameworks"
RTOL, ATOL = 1e-5, 1e-5  # float32 logits of size O(10) against float64: see the book page
NNX_PATHS = ("embed/embedding", "mixer/bias", "mixer/kernel")

# (V, d, T) of the cases: the worked example, a square embedding (where a transposed
# embedding still runs), repeated ids, and a larger vocabulary.
SHAPES = ((6, 4, 3), (5, 5, 4), (50, 8, 9), (300, 32, 16))


def weights(rng: np.random.Generator, v: int, d: int) -> dict:
    """A float32 checkpoint in the Flax layout: embedding (V, d), kernel (in, out), bias (d,).

    Entries of std d^(-1/4) in the embedding and 1/sqrt(d) in the kernel keep every
    logit of order one to ten, so float32 rounding stays far inside the tolerance.
    """
    return dict(
        embedding=rng.normal(0.0, d ** -0.25, (v, d)).astype(np.float32),
        kernel=rng.normal(0.0, d ** -0.5, (d, d)).astype(np.float32),
        bias=rng.normal(0.0, 0.1, d).astype(np.float32),
    )


def reference_logits(embedding, kernel, bias, ids) -> np.ndarray:
    """The tied model in float64: ``x = E[ids]; h = x + tanh(x @ kernel + bias); h @ E.T``."""
    E = np.asarray(embedding, np.float64)
    x = E[np.asarray(ids, int)]
    h = x + np.tanh(x @ np.asarray(kernel, np.float64) + np.asarray(bias, np.float64))
    return h @ E.T


# ---------------------------------------------------------------- cases

def _cases(item: str, shapes=SHAPES, alias=None) -> list[Case]:
    """One case per shape; ``alias`` says, per case, whether the state_dict keeps lm_head.weight."""
    rng = hidden_rng(f"{CHAPTER_ID}/{item}")
    found = []
    for n, (v, d, t) in enumerate(shapes):
        args = dict(weights(rng, v, d), token_ids=token_ids(rng, t, v))
        label = f"V={v}, d={d}, {t} ids"
        if alias is not None:
            args["alias"] = alias[n]
            label += ", with lm_head.weight" if alias[n] else ", without lm_head.weight"
        found.append(Case(label if n == 0 else f"hidden {label}", args, public=(n == 0)))
    return found


# The structure is checked on the worked example and the largest shape.
STRUCTURE_SHAPES = (SHAPES[0], SHAPES[-1])


def torch_cases() -> list[Case]:
    return _cases("linen_to_torch")


def torch_structure_cases() -> list[Case]:
    return _cases("linen_to_torch.tied", STRUCTURE_SHAPES)


def nnx_cases() -> list[Case]:
    # The worked example keeps the alias, as model.state_dict() does; the others mix
    # files with and without it, as safetensors' save_model writes them.
    return _cases("torch_to_nnx", alias=(True, False, True, False))


def nnx_structure_cases() -> list[Case]:
    return _cases("torch_to_nnx.params", STRUCTURE_SHAPES, alias=(True, False))


def logits_reference(case: Case) -> np.ndarray:
    a = case.args
    return reference_logits(a["embedding"], a["kernel"], a["bias"], a["token_ids"])


# ---------------------------------------------------------------- judges

def _names(names) -> str:
    return ", ".join(names) or "-"


def _not_float32(dtypes: dict) -> Finding | None:
    wrong = [f"{name} {kind}" for name, kind in dtypes.items() if kind not in ("float32", "torch.float32")]
    return Finding("frameworks.float64", {"message": _names(wrong)}) if wrong else None


def _embedding_finding(case: Case, name: str, held) -> Finding | None:
    """What is wrong with the matrix the model holds as its embedding, if anything."""
    E = case.args["embedding"]
    held = np.asarray(held)
    v, d = E.shape
    if held.shape == (d, v) and (v != d or np.array_equal(held.astype(np.float32), E.T)):
        return Finding("frameworks.embedding_transposed")
    if held.shape != (v, d):
        return Finding("common.wrong_param_shape", {"got": describe_shape(held.shape),
                                                    "expected": describe_shape((v, d))})
    if not np.array_equal(held.astype(np.float32), E):
        return Finding("frameworks.not_loaded", {"name": name})
    return None


def judge_torch_structure(case: Case, facts: dict, _ref) -> Finding | None:
    if not facts["is_module"]:
        return Finding("frameworks.not_torch_module", {"type": facts["type"]})
    if not facts["same_object"]:
        if facts["same_ptr"]:
            return Finding("frameworks.torch_alias")
        if np.array_equal(facts["head"], facts["embed"]):
            return Finding("frameworks.torch_copy")
        return Finding("frameworks.torch_head_stale")
    return (_embedding_finding(case, "embed.weight", facts["embed"])
            or _not_float32(facts["dtypes"]))


def judge_nnx_structure(case: Case, facts: dict, _ref) -> Finding | None:
    if not facts["is_module"]:
        return Finding("frameworks.not_nnx_module", {"type": facts["type"]})
    paths = facts["paths"]
    if facts["abstract"]:
        return Finding("frameworks.nnx_unfilled")
    if not set(NNX_PATHS) <= set(paths):
        return Finding("frameworks.nnx_paths", {"got": _names(paths)})
    extra = [p for p in paths if p not in NNX_PATHS]
    if extra:
        return Finding("frameworks.nnx_extra_param", {"names": _names(extra)})
    return (_embedding_finding(case, "embed/embedding", facts["values"][paths.index("embed/embedding")])
            or _not_float32(dict(zip(paths, facts["dtypes"]))))


def judge_logits(not_a_module: str):
    """Judge of a converted model's logits; ``not_a_module`` is the key when it is no model."""

    def judge(case: Case, facts: dict, ref) -> Finding | None:
        if not facts["is_module"]:
            return Finding(not_a_module, {"type": facts["type"]})
        logits = facts["logits"]
        finding = compare_arrays(logits, ref, RTOL, ATOL)
        if finding is None or finding.key != "common.wrong_values":
            return finding
        a = case.args
        E, W, b, ids = a["embedding"], a["kernel"], a["bias"], a["token_ids"]
        if close(logits, reference_logits(E, W.T, b, ids), RTOL, ATOL):
            return Finding("frameworks.kernel_not_transposed")
        if E.shape[0] == E.shape[1] and close(logits, reference_logits(E.T, W, b, ids), RTOL, ATOL):
            return Finding("frameworks.embedding_transposed")
        if not facts.get("head_is_embed", True):
            return Finding("frameworks.torch_head_stale")
        return finding

    return judge


# ---------------------------------------------------------------- the chapter

CHAPTER = Chapter(
    id=CHAPTER_ID,
    title="One matrix, three frameworks",
    probe_module="grader.chapters.frameworks_probe",
    errors=(
        ErrorPattern("frameworks.alias_key", r"KeyError", r"lm_head"),
        ErrorPattern("frameworks.key_name", r"KeyError"),
        ErrorPattern("frameworks.state_dict_keys", r"RuntimeError", r"Missing key\(s\)|Unexpected key\(s\)"),
        ErrorPattern("frameworks.nnx_key_name", r"ValueError", r"not available in state"),
        ErrorPattern("frameworks.nnx_unfilled", r"TypeError|AttributeError", r"ShapeDtypeStruct"),
        ErrorPattern("frameworks.float64", r"RuntimeError", r"same dtype|Double|Found dtype"),
        ErrorPattern("frameworks.shape_mismatch", r"RuntimeError|TypeError",
                     r"size mismatch|must match the size|shapes cannot be multiplied|dot_general requires contracting"),
    ),
    items=(
        Item(
            name="linen_to_torch.tied", symbol="linen_to_torch", points=2, probe="torch_structure",
            cases=torch_structure_cases, reference=lambda case: None, judge=judge_torch_structure,
        ),
        Item(
            name="linen_to_torch", points=3, probe="torch_logits", cases=torch_cases,
            reference=logits_reference, judge=judge_logits("frameworks.not_torch_module"),
        ),
        Item(
            name="torch_to_nnx.params", symbol="torch_to_nnx", points=2, probe="nnx_structure",
            cases=nnx_structure_cases, reference=lambda case: None, judge=judge_nnx_structure,
        ),
        Item(
            name="torch_to_nnx", points=3, probe="nnx_logits", cases=nnx_cases,
            reference=logits_reference, judge=judge_logits("frameworks.not_nnx_module"),
        ),
    ),
)

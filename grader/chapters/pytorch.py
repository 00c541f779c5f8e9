"""Chapter 03, PyTorch: ``tie_weights``, ``TinyLM`` and ``tied_logits``.

The probes (``pytorch_probe.py``) build the modules in the student's kernel and report
identities, data pointers, shapes, values and gradients; every comparison is here.
"""
from __future__ import annotations

import numpy as np

from ..cases import hidden_rng, token_ids
from ..judge import close, compare_arrays, describe_shape, matches_reference
from ..registry import Case, Chapter, ErrorPattern, Finding, Item, Symptom

CHAPTER_ID = "03_pytorch"
RTOL = 1e-4


def _matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Entries of std cols^(-1/4): a product over cols of two such factors is O(1)."""
    return rng.normal(0.0, cols ** -0.25, (rows, cols)).astype(np.float32)


def _scaled_atol(ref) -> float:
    """Float32 results checked against float64: the error grows with the values."""
    return 1e-5 * max(1.0, float(np.max(np.abs(ref), initial=0.0)))


def _f64(x) -> np.ndarray:
    return np.asarray(x, np.float64)


# ---------------------------------------------------------------- tie_weights

# (V, d, bias, leading shape of the hidden vectors fed to the head)
TIE_SHAPES = ((6, 4, False, (2,)), (5, 5, True, (3,)), (20, 8, True, (2, 3)), (3, 7, False, (4,)),
              (1000, 64, True, (4,)))


def tie_cases() -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/tie_weights")
    found = []
    for n, (v, d, bias, lead) in enumerate(TIE_SHAPES):
        args = dict(
            embedding=_matrix(rng, v, d),
            head=_matrix(rng, v, d),  # the head's own values, which tying must replace
            head_bias=rng.normal(0.0, 1.0, v).astype(np.float32) if bias else None,
            hidden=rng.normal(0.0, d ** -0.25, (*lead, d)).astype(np.float32),
        )
        label = f"nn.Embedding({v}, {d}) and nn.Linear({d}, {v}, bias={bias})"
        found.append(Case(label if n == 0 else f"hidden {label}", args, public=(n == 0)))
    return found


def tie_reference(case: Case) -> np.ndarray:
    a = case.args
    out = _f64(a["hidden"]) @ _f64(a["embedding"]).T
    return out if a["head_bias"] is None else out + _f64(a["head_bias"])


def _is_transposed_view(facts: dict, v: int, d: int) -> bool:
    if list(facts["head_shape"]) != [d, v]:
        return False
    return v != d or list(facts["head_stride"]) == list(reversed(facts["embed_stride"]))


def _untied_finding(facts: dict, embedding: np.ndarray) -> Finding:
    """Why ``lm_head.weight`` is not the embedding's Parameter, as far as the facts tell."""
    v, d = embedding.shape
    head = np.asarray(facts["head"])
    if facts["same_ptr"] and _is_transposed_view(facts, v, d):
        return Finding("pytorch.transposed")
    if facts["same_ptr"]:
        return Finding("pytorch.data_alias")
    if head.shape == embedding.shape and np.array_equal(head, embedding):
        return Finding("pytorch.copied")
    if head.shape == (d, v) and np.array_equal(head, embedding.T):
        return Finding("pytorch.transposed")
    return Finding("pytorch.not_tied")


def judge_tie(case: Case, facts: dict, ref) -> Finding | None:
    embedding = np.asarray(facts["embed"])
    if not facts["same_object"]:
        return _untied_finding(facts, embedding)
    original = case.args["embedding"]
    if not np.array_equal(embedding, original) and np.array_equal(embedding, case.args["head"]):
        return Finding("pytorch.wrong_direction")
    if facts["forward_error"]:
        kind, _, message = facts["forward_error"].partition(": ")
        return Finding("common.exception", {"type": kind, "message": message})
    logits = np.asarray(facts["logits"])
    finding = compare_arrays(logits, ref, RTOL, _scaled_atol(ref))
    if finding is not None and case.args["head_bias"] is not None:
        no_bias = _f64(case.args["hidden"]) @ _f64(original).T
        if not facts["has_bias"] or close(logits, no_bias, RTOL, _scaled_atol(ref)):
            return Finding("pytorch.bias_dropped")
    return finding


# (V, d, in_features, out_features) that cannot be tied, and what is wrong with them
REFUSED = (
    (6, 4, 4, 7, "nn.Linear(4, 7): the head scores 7 tokens, the embedding holds 6"),
    (6, 4, 5, 6, "nn.Linear(5, 6): the head reads vectors of size 5, the embedding makes size 4"),
    (6, 4, 6, 4, "nn.Linear(6, 4): weight (4, 6), the transpose of the embedding's (6, 4)"),
    (8, 8, 8, 5, "nn.Linear(8, 5) against nn.Embedding(8, 8)"),
)


def refused_cases() -> list[Case]:
    return [
        Case(("" if n == 0 else "hidden ") + f"nn.Embedding({v}, {d}) and {what}",
             dict(vocab_size=v, d_model=d, in_features=i, out_features=o), public=(n == 0))
        for n, (v, d, i, o, what) in enumerate(REFUSED)
    ]


def judge_refused(case: Case, facts: dict, _ref) -> Finding | None:
    shapes = {"embed": describe_shape(facts["embed_shape"]), "head": describe_shape(facts["head_shape"])}
    if not facts["raised"]:
        return Finding("pytorch.no_shape_check", shapes)
    if not facts["is_value_error"]:
        return Finding("pytorch.wrong_exception", {"type": facts["raised"]})
    if facts["tied_anyway"] or facts["head_replaced"]:
        return Finding("pytorch.tied_before_check")
    if not facts["message"].strip():
        return Finding("pytorch.empty_message")
    return None


# ---------------------------------------------------------------- TinyLM

# (V, d, n_layers, batch, length); d is always a multiple of 4, length at most 64
TINY_SHAPES = ((11, 8, 2, 2, 5), (32, 16, 1, 1, 7), (16, 16, 3, 3, 4), (97, 32, 2, 2, 16), (8, 12, 2, 2, 9))


def _tiny_cases(item: str, with_upstream: bool = False, shapes=TINY_SHAPES) -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/{item}")
    found = []
    for n, (v, d, layers, batch, length) in enumerate(shapes):
        ids = np.asarray(token_ids(rng, batch * length, v), np.int64).reshape(batch, length)
        args = dict(vocab_size=v, d_model=d, n_layers=layers, seed=int(rng.integers(0, 2**31 - 1)),
                    input_ids=ids)
        if with_upstream:
            args["upstream"] = rng.normal(0.0, 1.0, (batch, length, v)).astype(np.float32)
        label = f"TinyLM({v}, {d}, n_layers={layers}) on ids of shape ({batch}, {length})"
        found.append(Case(label if n == 0 else f"hidden {label}", args, public=(n == 0)))
    return found


def structure_cases() -> list[Case]:
    return _tiny_cases("TinyLM.tied", shapes=TINY_SHAPES[:1] + TINY_SHAPES[2:4])


def forward_cases() -> list[Case]:
    return _tiny_cases("TinyLM.forward")


def grad_cases() -> list[Case]:
    return _tiny_cases("TinyLM.grad", with_upstream=True, shapes=TINY_SHAPES[:4])


def judge_structure(case: Case, facts: dict, _ref) -> Finding | None:
    v, d = case.args["vocab_size"], case.args["d_model"]
    if facts["head_bias"]:
        return Finding("pytorch.head_bias")
    if list(facts["embed_shape"]) != [v, d]:
        return Finding("common.wrong_param_shape", {"got": describe_shape(facts["embed_shape"]),
                                                    "expected": describe_shape((v, d))})
    if not facts["same_object"]:
        if facts["same_ptr"] and _is_transposed_view(facts, v, d):
            return Finding("pytorch.transposed")
        if facts["same_ptr"]:
            return Finding("pytorch.data_alias")
        return Finding("pytorch.copied" if facts["values_equal"] else "pytorch.not_tied")
    if facts["n_listed"] - facts["n_unique"] != v * d:
        return Finding("pytorch.param_count", {"unique": facts["n_unique"], "listed": facts["n_listed"],
                                               "matrix": v * d})
    if not (facts["step_same_object"] and facts["step_equal"]):
        return Finding("pytorch.untied_by_step")
    if not (facts["f64_same_object"] and facts["f64_same_ptr"]) or facts["f64_dtype"] != "torch.float64":
        return Finding("pytorch.untied_by_to")
    return None


def judge_forward(case: Case, facts: dict, _ref) -> Finding | None:
    ids = np.asarray(case.args["input_ids"])
    v = case.args["vocab_size"]
    logits = np.asarray(facts["logits"])
    expected_shape = (*ids.shape, v)
    if logits.dtype == object or not np.issubdtype(logits.dtype, np.number):
        return Finding("common.not_an_array", {"type": str(logits.dtype)})
    if logits.shape != expected_shape:
        return Finding("common.wrong_shape", {"got": describe_shape(logits.shape),
                                              "expected": describe_shape(expected_shape)})
    if not facts["ln_f_calls"]:
        return Finding("pytorch.ln_f_unused")
    h, embedding = _f64(facts["h"]), _f64(facts["embed"])
    if h.shape != (*ids.shape, embedding.shape[1]):
        return Finding("pytorch.logits_not_tied")
    ref = h @ embedding.T
    atol = _scaled_atol(ref)
    finding = compare_arrays(logits, ref, RTOL, atol)
    if finding is None or finding.key != "common.wrong_values":
        return finding
    bias, head = np.asarray(facts["bias"]), _f64(facts["head"])
    if bias.size and close(logits, ref + bias, RTOL, atol):
        return Finding("pytorch.head_bias")
    if head.shape == embedding.shape and close(logits, h @ head.T, RTOL, atol):
        return Finding("pytorch.not_tied")
    if embedding.shape[0] == embedding.shape[1] and close(logits, h @ embedding, RTOL, atol):
        return Finding("pytorch.transposed")
    return Finding("pytorch.logits_not_tied")


def judge_grad(case: Case, facts: dict, _ref) -> Finding | None:
    shared, lookup, projection = (_f64(facts[k]) for k in ("shared", "lookup", "projection"))
    if not np.any(lookup):
        return Finding("pytorch.lookup_not_embed")
    total = lookup + projection
    atol = _scaled_atol(total)
    if close(shared, total, RTOL, atol):
        return None
    if facts["separate_head_grad"] or close(shared, lookup, RTOL, atol):
        return Finding("pytorch.grad_one_path")
    err = float(np.max(np.abs(shared - total))) if shared.shape == total.shape else float("nan")
    return Finding("pytorch.grad_not_sum", {"max_err": f"{err:.3g}"})


# ---------------------------------------------------------------- tied_logits

# (leading shape of h, V, d, bias?)
LOGIT_SHAPES = (((2,), 4, 3, False), ((2,), 4, 3, True), ((3,), 5, 3, True), ((2, 5), 16, 8, False),
                ((2, 3, 4), 7, 6, True), ((4,), 6, 6, True), ((), 9, 4, True), ((8, 32), 300, 64, True))


def logits_cases() -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/tied_logits")
    found = []
    for n, (lead, v, d, bias) in enumerate(LOGIT_SHAPES):
        args = dict(h=rng.normal(0.0, d ** -0.25, (*lead, d)).astype(np.float32), E=_matrix(rng, v, d),
                    b=rng.normal(0.0, 1.0, v).astype(np.float32) if bias else None)
        label = f"h {describe_shape((*lead, d))}, E ({v}, {d}), b {'(' + str(v) + ',)' if bias else 'None'}"
        found.append(Case(label if n < 2 else f"hidden {label}", args, public=(n < 2)))
    return found


def logits_reference(case: Case) -> np.ndarray:
    a = case.args
    out = _f64(a["h"]) @ _f64(a["E"]).T
    return out if a["b"] is None else out + _f64(a["b"])


def _bias(case: Case):
    return 0.0 if case.args["b"] is None else _f64(case.args["b"])


def _no_transpose(case: Case, value) -> bool:
    E = _f64(case.args["E"])
    return E.shape[0] == E.shape[1] and close(value, _f64(case.args["h"]) @ E + _bias(case), RTOL, 1e-4)


def _bias_ignored(case: Case, value) -> bool:
    return case.args["b"] is not None and close(value, _f64(case.args["h"]) @ _f64(case.args["E"]).T, RTOL, 1e-4)


def _leading_lost(case: Case, value) -> bool:
    ref = logits_reference(case)
    value = np.asarray(value)
    return value.shape != ref.shape and value.size == ref.size and close(value.reshape(ref.shape), ref, RTOL, 1e-4)


# ---------------------------------------------------------------- the chapter

SHAPES_DONT_MULTIPLY = r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size"
TRANSPOSED_HEAD = ErrorPattern("pytorch.transposed", r"RuntimeError", SHAPES_DONT_MULTIPLY)

CHAPTER = Chapter(
    id=CHAPTER_ID,
    title="PyTorch and Hugging Face",
    probe_module="grader.chapters.pytorch_probe",
    errors=(ErrorPattern("pytorch.module_names", r"AttributeError", r"has no attribute '(embed|ln_f|lm_head)'"),),
    items=(
        Item(
            name="tie_weights", points=2, probe="tie_weights_tied", cases=tie_cases,
            reference=tie_reference, judge=judge_tie,
            errors=(ErrorPattern("pytorch.refused_matching", r"ValueError"),),
        ),
        Item(
            name="tie_weights.ValueError", symbol="tie_weights", points=1, probe="tie_weights_refused",
            cases=refused_cases, reference=lambda case: None, judge=judge_refused,
        ),
        Item(
            name="TinyLM.tied", symbol="TinyLM", points=2, probe="tinylm_structure",
            cases=structure_cases, reference=lambda case: None, judge=judge_structure,
            errors=(TRANSPOSED_HEAD,),
        ),
        Item(
            name="TinyLM.forward", symbol="TinyLM", points=2, probe="tinylm_forward",
            cases=forward_cases, reference=lambda case: None, judge=judge_forward,
            errors=(TRANSPOSED_HEAD,),
        ),
        Item(
            name="TinyLM.grad", symbol="TinyLM", points=2, probe="tinylm_grad",
            cases=grad_cases, reference=lambda case: None, judge=judge_grad,
            errors=(TRANSPOSED_HEAD,),
        ),
        Item(
            name="tied_logits", points=2, probe="tied_logits_call", cases=logits_cases,
            reference=logits_reference,
            judge=matches_reference((
                Symptom("pytorch.missing_transpose", _no_transpose),
                Symptom("pytorch.bias_ignored", _bias_ignored),
                Symptom("pytorch.leading_shape", _leading_lost),
            ), rtol=RTOL, atol=1e-4),
            errors=(
                ErrorPattern("pytorch.missing_transpose", r"RuntimeError", SHAPES_DONT_MULTIPLY),
                ErrorPattern("pytorch.none_bias", r"TypeError", r"NoneType"),
                ErrorPattern("pytorch.mm_2d", r"RuntimeError", r"must be a matrix|2D|2-D"),
            ),
        ),
    ),
)

"""Chapter 03, PyTorch: ``tie_weights``, ``TinyLM`` and ``tied_logits``.

The probes (``probe.py``) build the modules in the student's kernel and report
identities, data pointers, shapes, values and gradients; every comparison is in the
grader: what the identities say about a tie in ``identities.py``, the rest here.  The
cases are drawn in ``cases.py``.  One block per exercise, in the notebook's order, each
ending with its ``Item``.
"""
from __future__ import annotations

import re

import numpy as np

from grader.chapters.pytorch.cases import (
    CHAPTER_ID,
    DEFAULT_LAYERS,
    forward_cases,
    grad_cases,
    logits_cases,
    refused_cases,
    structure_cases,
    tie_cases,
)
from grader.chapters.pytorch.identities import distinct, same_object, untied_finding
from grader.comparisons import as_numbers, close, compare_arrays, describe_shape, matches_reference
from grader.outcome import Finding
from grader.registry import Case, Chapter, ErrorPattern, Item, Promise, Symptom

RTOL = 1e-4
# What torch says when a matrix product's shapes do not line up.
SHAPES_DONT_MULTIPLY = r"mat1 and mat2 shapes cannot be multiplied|size mismatch"
# What torch says when an elementwise operation cannot broadcast its operands: not a
# matrix product, so never the transpose diagnosis.
BROADCAST = ErrorPattern("pytorch.broadcast", r"RuntimeError",
                         r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at non-singleton")


def _scaled_atol(ref) -> float:
    """Float32 results checked against float64: the error grows with the values."""
    return 1e-5 * max(1.0, float(np.max(np.abs(ref), initial=0.0)))


def _f64(x) -> np.ndarray:
    return np.asarray(x, np.float64)


# ---------------------------------------------------------------- tie_weights(embedding, lm_head): ties in place

def tie_reference(case: Case) -> np.ndarray:
    a = case.args
    out = _f64(a["hidden"]) @ _f64(a["embedding"]).T
    return out if a["head_bias"] is None else out + _f64(a["head_bias"])


def judge_tie(case: Case, facts: dict, ref) -> Finding | None:
    a = case.args
    embedding = np.asarray(facts["embed"])
    if not same_object(facts):
        head, (v, d) = np.asarray(facts["head"]), a["embedding"].shape
        return untied_finding(facts, v, d, head.shape == (v, d) and np.array_equal(head, embedding),
                               head.shape == (d, v) and np.array_equal(head, embedding.T))
    if not np.array_equal(embedding, a["embedding"]):
        same_shape = embedding.shape == a["head"].shape
        return Finding("pytorch.wrong_direction" if same_shape and np.array_equal(embedding, a["head"])
                       else "pytorch.embedding_changed")
    if a["head_bias"] is not None and not facts["has_bias"]:
        return Finding("pytorch.bias_dropped")
    bias = np.asarray(facts["bias"])
    if a["head_bias"] is None:
        if facts["has_bias"]:
            return Finding("pytorch.bias_changed")
    elif not (distinct(facts["bias_ids"]) == 1 and bias.shape == a["head_bias"].shape
              and np.array_equal(bias, a["head_bias"])):
        return Finding("pytorch.bias_changed")
    if facts["forward_error"]:
        kind, _, message = facts["forward_error"].partition(": ")
        return Finding("common.exception", {"type": kind, "message": message})
    return compare_arrays(facts["logits"], ref, RTOL, _scaled_atol(ref))


TIE_WEIGHTS = Item(
    name="tie_weights", points=2, probe="tie_weights_tied", cases=tie_cases,
    reference=tie_reference, judge=judge_tie,
    errors=(ErrorPattern("pytorch.refused_matching", r"ValueError"),),
    promises=(
        Promise("tie_weights(embedding, lm_head) takes nn.Embedding(V, d) and nn.Linear(d, V)",
                "probe calls it positionally on modules built from the case; V from 1 to 1000, "
                "V < d, V = d, V > d"),
        Promise("with or without a bias", "cases with bias=True and bias=False"),
        Promise("ties in place: lm_head.weight is embedding.weight, the very same Parameter",
                "identities compared here; untied_finding names copy, .data alias, new Parameter, transpose",
                keys=("pytorch.copied", "pytorch.data_alias", "pytorch.new_parameter", "pytorch.transposed",
                      "pytorch.not_tied")),
        Promise("the embedding keeps its values",
                "judge_tie: embedding values equal the case's (wrong_direction, embedding_changed)",
                keys=("pytorch.wrong_direction", "pytorch.embedding_changed")),
        Promise("leave the head's bias alone",
                "judge_tie: same bias Parameter and values, none added (bias_dropped, bias_changed)",
                keys=("pytorch.bias_dropped", "pytorch.bias_changed")),
        Promise("the tied head computes h @ E.T + bias", "logits of the head against tie_reference"),
        Promise("no ValueError when the shapes match", "ErrorPattern pytorch.refused_matching",
                keys=("pytorch.refused_matching",)),
    ),
)


# -------------------------------------------------------------- tie_weights refuses a head of another shape: ValueError

def names_shape(message: str, shape) -> bool:
    """Whether ``message`` writes ``shape`` (two sizes), as (6, 4), [6, 4], torch.Size([6, 4]) or 6x4."""
    first, second = (int(n) for n in shape)
    return re.search(rf"(?<!\d){first}\s*(,|x|×|by)\s*{second}(?!\d)", message) is not None


def judge_refused(case: Case, facts: dict, _ref) -> Finding | None:
    a = case.args
    shapes = {"embed": describe_shape(a["embedding"].shape), "head": describe_shape(a["head"].shape)}
    if not facts["raised"]:
        return Finding("pytorch.no_shape_check", shapes)
    if "ValueError" not in facts["raised_types"]:  # a subclass of ValueError counts
        return Finding("pytorch.wrong_exception", {"type": facts["raised"]})
    unchanged = (facts["ids_before"] == facts["ids_after"] and np.array_equal(facts["embed"], a["embedding"])
                 and np.array_equal(facts["head"], a["head"]))
    if not unchanged:
        return Finding("pytorch.tied_before_check")
    message = str(facts["message"])
    if not message.strip():
        return Finding("pytorch.empty_message", shapes)
    if not (names_shape(message, a["embedding"].shape) and names_shape(message, a["head"].shape)):
        return Finding("pytorch.message_without_shapes", {**shapes, "message": message})
    return None


TIE_WEIGHTS_REFUSED = Item(
    name="tie_weights.ValueError", symbol="tie_weights", points=1, probe="tie_weights_refused",
    cases=refused_cases, reference=lambda case: None, judge=judge_refused,
    promises=(
        Promise("when lm_head.weight.shape differs from embedding.weight.shape, raise ValueError",
                "refused cases: wrong V, wrong d, transposed (d, V), square embedding, V = 1; "
                "no_shape_check, wrong_exception",
                keys=("pytorch.no_shape_check", "pytorch.wrong_exception")),
        Promise("the message names both shapes",
                "judge_refused: names_shape finds (V, d) and (out, in) in the raw message "
                "(empty_message, message_without_shapes)",
                keys=("pytorch.empty_message", "pytorch.message_without_shapes")),
        Promise("change nothing", "same Parameters and values in both modules afterwards "
                                  "(tied_before_check)", keys=("pytorch.tied_before_check",)),
    ),
)


# ------------------------------------------------ TinyLM(vocab_size, d_model, n_layers=2): what its three items share

# A head whose weight is the embedding's transpose fails in the forward pass of every item.
TRANSPOSED_HEAD = ErrorPattern("pytorch.transposed", r"RuntimeError", SHAPES_DONT_MULTIPLY)


def tinylm_item(name: str, probe: str, cases, judge, promises: tuple[Promise, ...]) -> Item:
    """An item of ``TinyLM`` (2 points): the probe builds it with the reference
    ``tie_weights`` in place of the notebook's (whose mistakes are that item's), and the
    judge reads the facts alone, with no reference value."""
    return Item(name=name, symbol="TinyLM", points=2, probe=probe, stands_on="tie_weights", cases=cases,
                reference=lambda case: None, judge=judge, errors=(TRANSPOSED_HEAD,), promises=promises)


# ------------------------------------------------------------ TinyLM: its modules, and one matrix for embed and lm_head

def _expected_kinds(v: int, d: int) -> dict:
    """The class and sizes the exercise names for each module, as the probe reports them."""
    return {
        "embed": ("nn.Embedding", {"num_embeddings": v, "embedding_dim": d}, f"nn.Embedding({v}, {d})"),
        "ln_f": ("nn.LayerNorm", {"normalized_shape": [d]}, f"nn.LayerNorm({d})"),
        "lm_head": ("nn.Linear", {"in_features": d, "out_features": v}, f"nn.Linear({d}, {v}, bias=False)"),
    }


def _scalar(size):
    """A size as the exercise writes it: nn.LayerNorm(8), not nn.LayerNorm([8])."""
    return size[0] if isinstance(size, list) and len(size) == 1 else size


def _module_finding(kinds: dict, v: int, d: int) -> Finding | None:
    """The first module that is not of the class and sizes the exercise names."""
    for name, (cls, sizes, expected) in _expected_kinds(v, d).items():
        got = kinds.get(name, {})
        if got.get("type") != cls.removeprefix("nn.") or any(got.get(k) != n for k, n in sizes.items()):
            shown = ", ".join(str(_scalar(got[k])) for k in sizes if k in got)
            return Finding("pytorch.module_kind", {"name": name, "expected": expected,
                                                   "got": f"{got.get('type')}({shown})" if shown else got.get("type")})
    return None


def _blocks_finding(state_keys: list, n_layers: int) -> Finding | None:
    """The blocks must be registered under blocks.0 … blocks.<n_layers - 1>, or the
    state_dict, .to() and .parameters() do not see them."""
    found = {key.split(".")[1] for key in state_keys if key.startswith("blocks.") and key.count(".") > 1}
    if not found:
        return Finding("pytorch.blocks_not_registered")
    if found != {str(i) for i in range(n_layers)}:
        return Finding("pytorch.block_count", {"got": len(found), "expected": n_layers})
    return None


def judge_structure(case: Case, facts: dict, _ref) -> Finding | None:
    v, d = case.args["vocab_size"], case.args["d_model"]
    if facts["head_bias"]:
        return Finding("pytorch.head_bias")
    finding = (_module_finding(facts["kinds"], v, d)
               or _blocks_finding(facts["state_keys"], case.args["n_layers"] or DEFAULT_LAYERS))
    if finding:
        return finding
    if not same_object(facts):
        if distinct(facts["forward_ids"]) == 1:  # untied when built, tied by its first call
            return Finding("pytorch.tie_in_forward")
        head, embedding = np.asarray(facts["head"]), np.asarray(facts["embed"])
        return untied_finding(facts, v, d, head.shape == embedding.shape and np.array_equal(head, embedding))
    if facts["n_listed"] - facts["n_unique"] != v * d:
        return Finding("pytorch.param_count", {"unique": facts["n_unique"], "listed": facts["n_listed"],
                                               "matrix": v * d})
    head, embedding = np.asarray(facts["step_head"]), np.asarray(facts["step_embed"])
    if distinct(facts["step_ids"]) != 1 or not (head.shape == embedding.shape and np.array_equal(head, embedding)):
        return Finding("pytorch.untied_by_step")
    if distinct(facts["f64_ids"]) != 1 or distinct(facts["f64_ptrs"]) != 1 or facts["f64_dtype"] != "torch.float64":
        return Finding("pytorch.untied_by_to")
    return None


TINYLM_TIED = tinylm_item(
    "TinyLM.tied", "tinylm_structure", structure_cases, judge_structure,
    promises=(
        Promise("TinyLM(vocab_size, d_model, n_layers=2)",
                "probe passes n_layers by keyword, or leaves it out (cases 0 and 3 expect 2 blocks)"),
        Promise("modules named embed, blocks, ln_f, lm_head",
                "ErrorPattern pytorch.module_names; kinds facts: nn.Embedding(V, d), nn.LayerNorm(d), "
                "nn.Linear(d, V) (module_kind)", keys=("pytorch.module_names", "pytorch.module_kind")),
        Promise("lm_head has no bias", "fact head_bias (head_bias)", keys=("pytorch.head_bias",)),
        Promise("n_layers blocks in an nn.ModuleList, registered",
                "state_dict keys blocks.0 … blocks.<n-1> sent raw (blocks_not_registered, block_count)",
                keys=("pytorch.blocks_not_registered", "pytorch.block_count")),
        Promise("lm_head tied to embed: one Parameter",
                "identities, data pointers, version bump, compared here (copied, data_alias, new_parameter, "
                "transposed, not_tied); tied at construction, not by the first forward (tie_in_forward)",
                keys=("pytorch.copied", "pytorch.data_alias", "pytorch.new_parameter", "pytorch.transposed",
                      "pytorch.not_tied", "pytorch.tie_in_forward")),
        Promise("the matrix is registered under two names only", "parameter counts (param_count)",
                keys=("pytorch.param_count",)),
        Promise("the tie survives an optimizer step and .to(torch.float64)",
                "facts after one SGD step and after .to (untied_by_step, untied_by_to)",
                keys=("pytorch.untied_by_step", "pytorch.untied_by_to")),
    ),
)


# ---------------------------------------------------------------- TinyLM.forward(input_ids) -> logits (B, T, V)

def judge_forward(case: Case, facts: dict, _ref) -> Finding | None:
    ids = np.asarray(case.args["input_ids"])
    v = case.args["vocab_size"]
    if facts["logits"] is None:  # not a tensor, or a complex one
        return Finding("common.not_an_array", {"type": facts["dtype"] or facts["type"]})
    if facts["dtype"] != "torch.float32":
        return Finding("common.wrong_dtype", {"got": facts["dtype"], "expected": "torch.float32"})
    logits = np.asarray(facts["logits"])
    expected_shape = (*ids.shape, v)
    if logits.shape != expected_shape:
        return Finding("common.wrong_shape", {"got": describe_shape(logits.shape),
                                              "expected": describe_shape(expected_shape)})
    if not all(facts["block_calls"]):
        return Finding("pytorch.blocks_unused", {"calls": ", ".join(map(str, facts["block_calls"]))})
    if not facts["ln_f_calls"]:
        return Finding("pytorch.ln_f_unused")
    h, embedding = _f64(facts["h"]), _f64(facts["embed"])
    if embedding.ndim != 2 or h.shape != (*ids.shape, embedding.shape[1]):
        return Finding("pytorch.logits_not_tied")
    bias = _f64(facts["bias"])  # a head bias is TinyLM.tied's to judge: here, lm_head is what it is
    ref = h @ embedding.T + (bias if bias.shape == (v,) else 0.0)
    atol = _scaled_atol(ref)
    finding = compare_arrays(logits, ref, RTOL, atol)
    if finding is None or finding.key != "common.wrong_values":
        return finding
    head = _f64(facts["head"])
    if head.shape == embedding.shape and close(logits, h @ head.T, RTOL, atol):
        return Finding("pytorch.not_tied")
    if embedding.shape[0] == embedding.shape[1] and close(logits, h @ embedding, RTOL, atol):
        return Finding("pytorch.transposed")
    return Finding("pytorch.logits_not_tied")


TINYLM_FORWARD = tinylm_item(
    "TinyLM.forward", "tinylm_forward", forward_cases, judge_forward,
    promises=(
        Promise("forward(input_ids): int64 ids (B, T) to float32 logits (B, T, V)",
                "judge_forward: a tensor, dtype torch.float32, shape (B, T, V); a parameter or buffer that is not "
                "float32 is common.dtype_slip, with the line of __init__ that made it (probe.py)",
                keys=("common.dtype_slip",)),
        Promise("sequences of 1 to 64 tokens, d_model a multiple of 4 from 4",
                "cases with T = 1, T = 64 and d = 4 among seven shapes (index_out_of_range)",
                keys=("pytorch.index_out_of_range",)),
        Promise("every block runs", "forward hooks count each block's calls (blocks_unused)",
                keys=("pytorch.blocks_unused",)),
        Promise("ln_f, then lm_head, and nothing after it",
                "hook on ln_f: logits equal lm_head(ln_f's output), the head re-tied by the probe "
                "when the model is not (ln_f_unused, not_tied, transposed, logits_not_tied)",
                keys=("pytorch.ln_f_unused", "pytorch.not_tied", "pytorch.transposed", "pytorch.logits_not_tied")),
        Promise("checks call model.eval() first", "probe calls model.eval()"),
    ),
)


# ---------------------------------------------------------------- TinyLM: the shared matrix's gradient, both paths

def lookup_path(facts: dict, shape) -> np.ndarray | None:
    """What the lookups send the matrix: each call's output gradient added into the rows
    it looked up (None when ``embed`` never looked anything up with a gradient)."""
    found = np.zeros(shape, np.float64)
    calls = [c for c in facts.get("lookups") or () if c.get("grad") is not None]
    for call in calls:
        ids, grad = as_numbers(call["ids"]), _f64(call["grad"])
        if ids is None:  # no ids recorded: no lookup to add up
            return None
        ids = ids.astype(np.int64).ravel()
        if grad.shape[-1:] != shape[-1:] or grad.size != ids.size * shape[-1] or np.any((ids < 0) | (ids >= shape[0])):
            return None
        np.add.at(found, ids, grad.reshape(-1, shape[-1]))
    return found if calls else None


def judge_grad(case: Case, facts: dict, _ref) -> Finding | None:
    """The raw gradient of the shared matrix, split by the grader: the lookup's part from
    what each lookup's output received, the rest is the projection's.  A path is named
    only when it is missing; a shared matrix frozen (``requires_grad_(False)``) is named as such."""
    frozen = facts.get("frozen") or []
    if "shared" not in facts or "embed.weight" in frozen:
        shown = ", ".join(map(str, frozen[:3])) + (f", … ({len(frozen)})" if len(frozen) > 3 else "")
        return Finding("pytorch.frozen_params", {"names": shown or "-"})
    shared = _f64(facts["shared"])
    lookup = lookup_path(facts, shared.shape)
    if lookup is None or not np.any(lookup):
        return Finding("pytorch.lookup_not_embed")
    atol = _scaled_atol(shared)
    if not close(shared - lookup, np.zeros_like(shared), RTOL, atol):
        return None  # the projection's part reaches the matrix too, however the head is written
    if distinct(facts["ids"]) == 2 and facts["head_grad"] is not None:
        return Finding("pytorch.grad_one_path")
    h, up = _f64(facts["h"]), _f64(case.args["upstream"])
    v, d = shared.shape
    if h.shape == (*up.shape[:-1], d) and not np.any(up.reshape(-1, v).T @ h.reshape(-1, d)):
        return None  # the head's input sends it nothing here
    return Finding("pytorch.projection_detached")


TINYLM_GRAD = tinylm_item(
    "TinyLM.grad", "tinylm_grad", grad_cases, judge_grad,
    promises=(
        Promise("the shared matrix's gradient is the sum of the lookup's and the projection's",
                "probe re-ties an untied model and sends the raw gradient of embed.weight with what each "
                "lookup's output received; judge_grad adds the lookup's part into its rows and judges the rest "
                "as the projection's, whatever spells the head (lm_head, F.linear, @ embed.weight.T): "
                "lookup_not_embed, projection_detached, grad_one_path; frozen_params when the shared matrix (or "
                "every parameter) does not require grad, before the grader's backward pass would raise",
                keys=("pytorch.lookup_not_embed", "pytorch.projection_detached", "pytorch.grad_one_path",
                      "pytorch.frozen_params")),
    ),
)


# ---------------------------------------------------------------- tied_logits(h, E, b=None) -> h @ E.T + b

def logits_reference(case: Case) -> np.ndarray:
    a = case.args
    out = _f64(a["h"]) @ _f64(a["E"]).T
    return out if a["b"] is None else out + _f64(a["b"])


def _bias(case: Case):
    return 0.0 if case.args["b"] is None else _f64(case.args["b"])


def _no_transpose(case: Case, value, ref) -> bool:
    E = _f64(case.args["E"])
    return E.shape[0] == E.shape[1] and close(value, _f64(case.args["h"]) @ E + _bias(case), RTOL, 1e-4)


def _bias_ignored(case: Case, value, ref) -> bool:
    return case.args["b"] is not None and close(value, _f64(case.args["h"]) @ _f64(case.args["E"]).T, RTOL, 1e-4)


def _leading_lost(case: Case, value, ref) -> bool:
    value = np.asarray(value)
    return value.shape != ref.shape and value.size == ref.size and close(value.reshape(ref.shape), ref, RTOL, 1e-4)


LOGIT_VALUES = matches_reference((
    Symptom("pytorch.missing_transpose", _no_transpose),
    Symptom("pytorch.bias_ignored", _bias_ignored),
    Symptom("pytorch.leading_shape", _leading_lost),
), rtol=RTOL, atol=1e-4)


def logits_gradients(case: Case) -> dict:
    """d(sum(upstream * logits)) with respect to h, E and b, in float64."""
    a = case.args
    h, E, up = _f64(a["h"]), _f64(a["E"]), _f64(a["upstream"])
    v, d = E.shape
    grads = {"h": up @ E, "E": up.reshape(-1, v).T @ h.reshape(-1, d)}
    if a["b"] is not None:
        grads["b"] = up.reshape(-1, v).sum(axis=0)
    return grads


def judge_logits(case: Case, facts: dict, ref) -> Finding | None:
    """The dtype (a bfloat16 or float64 slip is named as such, not as the values it
    rounds), the values (with the known mistakes named), then the gradients that a
    backward pass leaves on h, E and b: the result must stay on the autograd graph."""
    if not facts["is_tensor"]:
        return Finding("pytorch.not_a_tensor", {"type": facts["type"]})
    if facts["logits"] is None:  # a complex tensor
        return Finding("common.not_an_array", {"type": facts["dtype"]})
    if facts["dtype"] != "torch.float32":
        return Finding("common.wrong_dtype", {"got": facts["dtype"], "expected": "torch.float32"})
    finding = LOGIT_VALUES(case, facts["logits"], ref)
    if finding is not None:
        return finding
    expected = logits_gradients(case)
    if not facts["requires_grad"]:
        return Finding("pytorch.logits_detached", {"names": ", ".join(expected)})
    if facts["backward_error"]:
        kind, _, message = facts["backward_error"].partition(": ")
        return Finding("common.exception", {"type": kind, "message": message})
    grads = facts["grads"]
    missing = [name for name in expected if grads.get(name) is None]
    if missing:
        return Finding("pytorch.logits_detached", {"names": ", ".join(missing)})
    for name, want in expected.items():
        got = as_numbers(grads[name])
        if got is None or got.shape != want.shape or not close(got, want, RTOL, 1e-4 * max(1.0, np.abs(want).max())):
            err = float(np.max(np.abs(got - want))) if got is not None and got.shape == want.shape else float("nan")
            return Finding("pytorch.logits_grad", {"name": name, "max_err": f"{err:.3g}"})
    return None


TIED_LOGITS = Item(
    name="tied_logits", points=2, probe="tied_logits_call", cases=logits_cases,
    reference=logits_reference, judge=judge_logits,
    promises=(
        Promise("tied_logits(h, E, b=None)", "probe passes b by keyword, leaves it out, or passes b=None"),
        Promise("h of shape (..., d), any number of leading dimensions, possibly none",
                "cases with 0 to 4 leading dimensions (leading_shape, mm_2d)",
                keys=("pytorch.leading_shape", "pytorch.mm_2d")),
        Promise("returns h @ E.T + b, or h @ E.T without a bias",
                "values against logits_reference (missing_transpose, bias_ignored, none_bias)",
                keys=("pytorch.missing_transpose", "pytorch.bias_ignored", "pytorch.none_bias", "pytorch.broadcast")),
        Promise("of shape (..., V)", "compare_arrays shape check"),
        Promise("a float32 tensor", "facts is_tensor and dtype (not_a_tensor, common.wrong_dtype)",
                keys=("common.wrong_dtype", "pytorch.not_a_tensor")),
        Promise("stays on the autograd graph: gradients reach h, E and b",
                "probe runs backward with an upstream array; judge compares the raw gradients "
                "with logits_gradients (logits_detached, logits_grad, numpy_round_trip)",
                keys=("pytorch.logits_detached", "pytorch.logits_grad", "pytorch.numpy_round_trip")),
    ),
    errors=(
        ErrorPattern("pytorch.numpy_round_trip", r"RuntimeError", r"numpy\(\) on Tensor that requires grad"),
        ErrorPattern("pytorch.missing_transpose", r"RuntimeError", SHAPES_DONT_MULTIPLY),
        ErrorPattern("pytorch.none_bias", r"TypeError", r"NoneType"),
        ErrorPattern("pytorch.mm_2d", r"RuntimeError", r"must be a matrix|2D|2-D"),
    ),
)


# ---------------------------------------------------------------- the chapter

CHAPTER = Chapter(
    id=CHAPTER_ID,
    title="PyTorch and Hugging Face",
    probe_module="grader.chapters.pytorch.probe",
    errors=(BROADCAST,
            # The model's own tensor of another dtype, with the line that made it (probe.py).
            ErrorPattern("common.dtype_slip", r"DtypeSlipError",
                         r"^(?P<name>\S+) is torch\.(?P<got>\w+), made by: (?P<line>.*)$"),
            ErrorPattern("pytorch.module_names", r"AttributeError", r"has no attribute '(embed|blocks|ln_f|lm_head)'"),
            ErrorPattern("pytorch.index_out_of_range", r"IndexError", r"index out of range in self")),
    items=(TIE_WEIGHTS, TIE_WEIGHTS_REFUSED, TINYLM_TIED, TINYLM_FORWARD, TINYLM_GRAD, TIED_LOGITS),
)

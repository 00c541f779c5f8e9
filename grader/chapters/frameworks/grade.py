"""Chapter 07, one matrix in three frameworks: ``linen_to_torch`` and ``torch_to_nnx``.

Both functions convert the checkpoint of one small tied model (an embedding, a square
"mixer" Dense layer, and the tied output projection) between frameworks.  The probes
(``probe.py``) hand the student's function a checkpoint built from the
grader's arrays and report what the returned model holds and computes; every
comparison is here, against float64 references.  What the four items share comes
first, then one block per exercise, in the notebook's order, each ending with its ``Item``.
"""
from __future__ import annotations

import numpy as np

from grader.comparisons import close, compare_arrays, describe_shape
from grader.drawing import hidden_rng, token_ids
from grader.outcome import Finding
from grader.registry import Case, Chapter, ErrorPattern, Item, Promise

CHAPTER_ID = "07_three_frameworks"
RTOL, ATOL = 1e-5, 1e-5  # float32 logits of size O(10) against float64: see the book page
# (V, d, T) of the cases: the worked example, a square embedding (where a transposed
# embedding still runs), repeated ids, fewer tokens than dimensions and a single id,
# and a larger vocabulary.
SHAPES = ((6, 4, 3), (5, 5, 4), (50, 8, 9), (3, 8, 1), (300, 32, 16))


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


def logits_reference(case: Case) -> np.ndarray:
    a = case.args
    return reference_logits(a["embedding"], a["kernel"], a["bias"], a["token_ids"])


def worked_example() -> dict:
    """The notebook's checkpoint and ids, drawn as its worked example draws them."""
    rng = np.random.default_rng(0)
    return dict(embedding=rng.normal(0.0, 0.7, (6, 4)).astype(np.float32),
                kernel=rng.normal(0.0, 0.5, (4, 4)).astype(np.float32),
                bias=rng.normal(0.0, 0.1, 4).astype(np.float32), token_ids=[0, 2, 5])


# Labels of the torch_to_nnx cases, by (worked example?, lm_head.weight in the state_dict?)
ALIAS_LABELS = {(True, True): "frameworks.case_worked_alias", (False, True): "frameworks.case_hidden_alias",
                (False, False): "frameworks.case_hidden_no_alias"}


def _cases(item: str, shapes=SHAPES, alias=None, gradient=False) -> list[Case]:
    """One case per shape; ``alias`` says, per case, whether the state_dict keeps lm_head.weight;
    ``gradient``: the first case has a cotangent C (T, V) for the tie's gradient (one case
    shows a cut path; each costs a backward pass in the kernel).
    The last, the largest, is "after_due_date": on Gradescope what fails there waits."""
    rng = hidden_rng(f"{CHAPTER_ID}/{item}")
    found = []
    for n, (v, d, t) in enumerate(shapes):
        drawn = dict(weights(rng, v, d), token_ids=token_ids(rng, t, v))  # drawn even when unused: the
        args = worked_example() if n == 0 else drawn                       # hidden cases stay the same
        if gradient:  # a generator of its own: the hidden cases stay the same
            args["cotangent"] = None if n else hidden_rng(f"{CHAPTER_ID}/{item}/cotangent").normal(
                0.0, 1.0, (len(args["token_ids"]), len(args["embedding"]))).astype(np.float32)
        label = "case.worked_example" if n == 0 else "case.hidden"
        if alias is not None:
            args["alias"] = alias[n]
            label = ALIAS_LABELS[n == 0, alias[n]]
        found.append(Case(label, args, public=n == 0, shown={"shape": f"V={v}, d={d}, T={t}"},
                          visibility="after_due_date" if n == len(shapes) - 1 else ""))
    return found


# The structure is checked on the worked example and the largest shape.
STRUCTURE_SHAPES = (SHAPES[0], SHAPES[-1])


# ---------------------------------------------------------------- what a converted model holds and computes

def _names(names) -> str:
    return ", ".join(names) or "-"


def _not_float32(dtypes: dict) -> Finding | None:
    """float64 named as such (frameworks.float64); another dtype (bfloat16) as the dtype it is."""
    wrong = {name: kind for name, kind in dtypes.items() if kind not in ("float32", "torch.float32")}
    if any(kind.endswith("float64") for kind in wrong.values()):
        return Finding("frameworks.float64", {"message": _names(f"{name} {kind}" for name, kind in wrong.items())})
    if wrong:
        return Finding("common.wrong_dtype", {"got": str(next(iter(wrong.values()))), "expected": "float32"})
    return None


def _model_finding(facts: dict, function: str, expected: str, not_a_module: str) -> Finding | None:
    """The result must be a model, of the class the notebook gives."""
    if not facts["is_module"]:
        return Finding(not_a_module, {"type": facts["type"]})
    if not facts["expected_class"]:
        return Finding("frameworks.wrong_class", {"function": function, "type": facts["type"], "expected": expected})
    return None


def _bfloat16(array) -> np.ndarray:
    """``array`` rounded to bfloat16 (to nearest, ties to even) and back to float32."""
    bits = np.asarray(array, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def _loaded(held, want: np.ndarray) -> bool:
    """``held`` is the checkpoint's ``want``: exactly, or as bfloat16 rounds it (that
    dtype is the structure items' to judge, so that one mistake costs once)."""
    held = np.asarray(held)
    if held.shape != want.shape:
        return False
    held = held.astype(np.float32)
    return bool(np.array_equal(held, want) or np.array_equal(held, _bfloat16(want)))


def _embedding_finding(case: Case, name: str, held) -> Finding | None:
    """What is wrong with the matrix the model holds as its embedding, if anything."""
    E = case.args["embedding"]
    held = np.asarray(held)
    v, d = E.shape
    if held.shape == (d, v) and (v != d or _loaded(held, E.T)):
        return Finding("frameworks.embedding_transposed")
    if held.shape != (v, d):
        return Finding("common.wrong_param_shape", {"got": describe_shape(held.shape),
                                                    "expected": describe_shape((v, d))})
    if not _loaded(held, E):
        return Finding("frameworks.not_loaded", {"name": name})
    return None


def _kernel_finding(name: str, held, kernel: np.ndarray, other_layout: np.ndarray) -> Finding | None:
    """The mixer's matrix in the layout of its framework (``kernel``), not the other one."""
    if _loaded(held, kernel):
        return None
    if _loaded(held, other_layout):
        return Finding("frameworks.kernel_not_transposed")
    return Finding("frameworks.not_loaded", {"name": name})


def _values_finding(case: Case, held: dict, names: tuple[str, str, str], torch_layout: bool) -> Finding | None:
    """The embedding, the mixer's matrix and its bias as the model holds them, under the
    ``names`` of its framework; names the model does not have are left to the logits."""
    a = case.args
    embed, kernel, bias = names
    W = a["kernel"]  # Flax layout, (in, out)
    checks = (
        (embed, lambda value: _embedding_finding(case, embed, value)),
        (kernel, lambda value: _kernel_finding(kernel, value, *((W.T, W) if torch_layout else (W, W.T)))),
        (bias, lambda value: None if _loaded(value, a["bias"]) else Finding("frameworks.not_loaded", {"name": bias})),
    )
    for name, check in checks:
        if name in held:
            finding = check(held[name])
            if finding is not None:
                return finding
    return None


def _logits_finding(case: Case, facts: dict, ref) -> Finding | None:
    """The converted model's logits against the float64 reference."""
    if facts["forward_error"]:
        kind, _, message = facts["forward_error"].partition(": ")
        return Finding("common.exception", {"type": kind, "message": message})
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
    return finding


# The tie's gradient.  E is used twice, by the lookup and by the projection, so its
# gradient is the sum of the two paths.  The structure probes send, raw, the gradient
# that sum(logits * C) leaves in the converted model's embedding (C a fixed random
# cotangent); both paths are computed here, exactly, in float64, from the values the
# model holds (whether they are the checkpoint's is the value items' to judge, so that
# one mistake costs once).
GRAD_RTOL, GRAD_ATOL = 1e-4, 1e-4  # of the largest |entry| of the reference gradient
TIE_GRADIENT_KEYS = ("frameworks.tie_projection_missing", "frameworks.tie_lookup_missing",
                     "frameworks.tie_no_gradient", "frameworks.tie_gradient_wrong")


def tie_paths(case: Case, E, W, b) -> tuple[np.ndarray, np.ndarray]:
    """The lookup's path and the projection's, of sum(logits * C) into E, for a model
    holding E (V, d), the mixer's W (in, out) and b."""
    E, W, b = (np.asarray(a, np.float64) for a in (E, W, b))
    C, ids = np.asarray(case.args["cotangent"], np.float64), np.asarray(case.args["token_ids"], int)
    x = E[ids]
    t = np.tanh(x @ W + b)
    g = C @ E  # d/dh of h @ E.T, with h = x + tanh(x @ W + b)
    lookup = np.zeros_like(E)
    np.add.at(lookup, ids, g + (g * (1.0 - t * t)) @ W.T)
    return lookup, C.T @ (x + t)


def tie_gradient_finding(case: Case, facts: dict, held: tuple) -> Finding | None:
    """The embedding's gradient against the sum of its two paths, for the values the
    model holds (``held``: E, W (in, out), b); the path that is missing, when one is.
    A model whose forward pass fails is left to the value items."""
    if facts.get("forward_failed") or case.args["cotangent"] is None:
        return None
    if facts.get("grad_error"):
        kind, _, message = str(facts["grad_error"]).partition(": ")
        return Finding("common.exception", {"type": kind, "message": message})
    if facts.get("grad") is None:
        return Finding("frameworks.tie_no_gradient")
    try:
        lookup, projection = tie_paths(case, *held)
    except (ValueError, IndexError):  # held values the class's computation cannot use: the value items judge them
        return None
    atol = GRAD_ATOL * max(1.0, float(np.max(np.abs(lookup + projection))))
    if close(facts["grad"], lookup + projection, GRAD_RTOL, atol):
        return None
    if close(facts["grad"], lookup, GRAD_RTOL, atol):
        return Finding("frameworks.tie_projection_missing")
    if close(facts["grad"], projection, GRAD_RTOL, atol):
        return Finding("frameworks.tie_lookup_missing")
    return Finding("frameworks.tie_gradient_wrong")


# ---------------------------------------------------------------- linen_to_torch(variables) -> a tied TorchTiedLM

def torch_structure_cases() -> list[Case]:
    return _cases("linen_to_torch.tied", STRUCTURE_SHAPES, gradient=True)


TORCH_KEYS = ("embed.weight", "mixer.weight", "mixer.bias", "lm_head.weight")


def judge_torch_structure(case: Case, facts: dict, _ref) -> Finding | None:
    """Tied, float32, TorchTiedLM's names: the form of the model, not its values."""
    finding = _model_finding(facts, "linen_to_torch", "TorchTiedLM", "frameworks.not_torch_module")
    if finding:
        return finding
    (embed_id, head_id), (embed_ptr, head_ptr) = facts["ids"], facts["ptrs"]
    if head_id != embed_id:  # compared here, from the identities the kernel sent
        head, embed = (np.asarray(facts["params"].get(k, ())) for k in ("lm_head.weight", "embed.weight"))
        if head_ptr == embed_ptr:
            return Finding("frameworks.torch_alias")
        if head.shape == embed.shape and np.array_equal(head, embed):
            return Finding("frameworks.torch_copy")
        return Finding("frameworks.torch_head_stale")
    if sorted(facts["state_keys"]) != sorted(TORCH_KEYS):
        return Finding("frameworks.torch_keys", {"got": _names(facts["state_keys"])})
    held = facts["params"]
    return _tied_not_float32(facts["dtypes"]) or tie_gradient_finding(
        case, facts, (held["embed.weight"], np.asarray(held["mixer.weight"]).T, held["mixer.bias"]))


def _tied_not_float32(dtypes: dict) -> Finding | None:
    """``_not_float32`` on the item that judges the tie too: its float64 message leads with
    the dtype and says the tie is right, so that nobody looks for a broken tie."""
    finding = _not_float32(dtypes)
    if finding is not None and finding.key == "frameworks.float64":
        return Finding("frameworks.tied_float64", finding.params)
    return finding


LINEN_TO_TORCH_TIED = Item(
    name="linen_to_torch.tied", symbol="linen_to_torch", points=2, probe="torch_structure",
    cases=torch_structure_cases, reference=lambda case: None, judge=judge_torch_structure,
    promises=(
        Promise("linen_to_torch(variables) takes {'params': ...} as LinenTiedLM.init returns it",
                "probe builds that tree from the case's float32 arrays (KeyError: key_name)",
                keys=("frameworks.key_name",)),
        Promise("returns a TorchTiedLM(V, d)", "facts is_module, expected_class (not_torch_module, "
                                               "wrong_class) and its state_dict keys (torch_keys)",
                keys=("frameworks.not_torch_module", "frameworks.wrong_class", "frameworks.torch_keys")),
        Promise("stays tied: lm_head.weight is embed.weight, one Parameter",
                "identities and data pointers, compared here (torch_alias, torch_copy, torch_head_stale)",
                keys=("frameworks.torch_alias", "frameworks.torch_copy", "frameworks.torch_head_stale")),
        Promise("every parameter float32", "dtypes of named_parameters(remove_duplicate=False) (tied_float64, "
                "its message leading with the dtype, as this item judges the tie and the dtype)",
                keys=("frameworks.tied_float64", "common.wrong_dtype")),
        Promise("the tie carries the gradient: embed.weight's is the lookup's path plus the projection's",
                "the raw gradient of sum(logits * C) in embed.weight (worked example) against both paths, exact",
                keys=TIE_GRADIENT_KEYS),
    ),
)


# ---------------------------------------------------------------- linen_to_torch: the checkpoint's values and logits

def torch_cases() -> list[Case]:
    return _cases("linen_to_torch")


TORCH_NAMES = ("embed.weight", "mixer.weight", "mixer.bias")


def judge_torch_values(case: Case, facts: dict, ref) -> Finding | None:
    """The checkpoint's values in the right Parameters; the logits too, where the model is
    tied and float32: a broken tie, a dtype or a class is linen_to_torch.tied's to judge."""
    if not facts["is_module"]:
        return Finding("frameworks.not_torch_module", {"type": facts["type"]})
    finding = _values_finding(case, facts["params"], TORCH_NAMES, torch_layout=True)
    tied = len(set(facts["ids"])) == 1  # the embedding's Parameter is the head's
    if finding or not tied or _not_float32(facts["dtypes"]):
        return finding
    return _logits_finding(case, facts, ref)


LINEN_TO_TORCH = Item(
    name="linen_to_torch", points=3, probe="torch_values", cases=torch_cases,
    reference=logits_reference, judge=judge_torch_values,
    promises=(
        Promise("V and d read from the embedding's shape",
                "cases V < d, V = d, V > d (V from 3 to 300, d from 4 to 32); a size torch names that "
                "is not the case's (sizes_hard_coded)", keys=("frameworks.sizes_hard_coded",)),
        Promise("holds the checkpoint: embed.weight = E, mixer.weight = kernel.T, mixer.bias = bias",
                "held values by name (not_loaded, embedding_transposed, kernel_not_transposed, "
                "wrong_param_shape)",
                keys=("frameworks.not_loaded", "frameworks.embedding_transposed", "frameworks.kernel_not_transposed",
                      "common.wrong_param_shape", "frameworks.shape_mismatch", "frameworks.state_dict_keys")),
        Promise("computes the same logits", "logits against the float64 reference, when the model "
                                            "is tied and float32 (the .tied item judges those)",
                keys=("frameworks.float64",)),
    ),
)


# ----------------------------------------------------------- torch_to_nnx(state_dict) -> an NNXTiedLM with three Params

def nnx_structure_cases() -> list[Case]:
    # With the alias, as model.state_dict() gives it: whether the converter copes with a
    # file without it is torch_to_nnx's to judge, so that one mistake costs once.
    return _cases("torch_to_nnx.params", STRUCTURE_SHAPES, alias=(True, True), gradient=True)


NNX_PATHS = ("embed/embedding", "mixer/kernel", "mixer/bias")


def judge_nnx_structure(case: Case, facts: dict, _ref) -> Finding | None:
    """NNXTiedLM with exactly its three Params, float32: the form, not the values."""
    finding = _model_finding(facts, "torch_to_nnx", "NNXTiedLM", "frameworks.not_nnx_module")
    if finding:
        return finding
    paths = facts["paths"]
    if not set(NNX_PATHS) <= set(paths):
        return Finding("frameworks.nnx_paths", {"got": _names(paths)})
    extra = [p for p in paths if p not in NNX_PATHS]
    if extra:
        return Finding("frameworks.nnx_extra_param", {"names": _names(extra)})
    finding = _not_float32(dict(zip(paths, facts["dtypes"])))
    # A module left abstract has no gradient: torch_to_nnx judges it (nnx_unfilled_params).
    if finding or facts["abstract"]:
        return finding
    held = dict(zip(paths, facts["values"]))
    return tie_gradient_finding(case, facts, tuple(held[p] for p in NNX_PATHS))


TORCH_TO_NNX_PARAMS = Item(
    name="torch_to_nnx.params", symbol="torch_to_nnx", points=2, probe="nnx_structure",
    cases=nnx_structure_cases, reference=lambda case: None, judge=judge_nnx_structure,
    promises=(
        Promise("torch_to_nnx(state_dict) takes a TorchTiedLM state_dict",
                "probe builds it from the case's arrays, with lm_head.weight as state_dict() gives it"),
        Promise("returns an NNXTiedLM", "facts is_module, expected_class (not_nnx_module, wrong_class)",
                keys=("frameworks.not_nnx_module", "frameworks.wrong_class")),
        Promise("exactly three nnx.Params: embed/embedding, mixer/kernel, mixer/bias",
                "Param paths sent raw (nnx_paths, nnx_extra_param)",
                keys=("frameworks.nnx_paths", "frameworks.nnx_extra_param")),
        Promise("float32 arrays", "Param dtypes (float64)", keys=("frameworks.float64", "common.wrong_dtype")),
        Promise("tied as NNXTiedLM ties (embed.attend): the embedding's gradient is the lookup's path plus the "
                "projection's", "the raw gradient of sum(logits * C) (nnx.grad, worked example) in embed/embedding "
                "against both paths, exact", keys=TIE_GRADIENT_KEYS),
    ),
)


# ------------------------------------------ torch_to_nnx: the checkpoint's values and logits, with or without the alias

def nnx_cases() -> list[Case]:
    # The worked example keeps the alias, as model.state_dict() does; the others mix
    # files with and without it, as safetensors' save_model writes them.
    return _cases("torch_to_nnx", alias=(True, False, True, False, False))


def judge_nnx_values(case: Case, facts: dict, ref) -> Finding | None:
    """Every Param filled with the checkpoint's values, and the logits (a class, an extra
    Param or a dtype is torch_to_nnx.params's to judge)."""
    if not facts["is_module"]:
        return Finding("frameworks.not_nnx_module", {"type": facts["type"]})
    if facts["abstract"]:
        return Finding("frameworks.nnx_unfilled_params", {"names": _names(facts["abstract"])})
    held = dict(zip(facts["paths"], facts["values"]))
    finding = _values_finding(case, held, NNX_PATHS, torch_layout=False) or _logits_finding(case, facts, ref)
    if finding is not None and finding.key == "common.wrong_values" and "bfloat16" in facts["dtypes"]:
        return Finding("common.wrong_dtype", {"got": "bfloat16", "expected": "float32"})  # logits it rounded
    return finding


TORCH_TO_NNX = Item(
    name="torch_to_nnx", points=3, probe="nnx_values", cases=nnx_cases,
    reference=logits_reference, judge=judge_nnx_values,
    promises=(
        Promise("either with lm_head.weight (state_dict()) or without it (safetensors' save_model)",
                "cases with and without the alias (alias_key)", keys=("frameworks.alias_key",)),
        Promise("holding the same values: embedding (V, d), kernel (in, out), bias",
                "held values by path (nnx_unfilled_params, not_loaded, embedding_transposed, "
                "kernel_not_transposed, nnx_key_name)",
                keys=("frameworks.nnx_unfilled_params", "frameworks.not_loaded", "frameworks.embedding_transposed",
                      "frameworks.kernel_not_transposed", "frameworks.nnx_key_name", "common.wrong_param_shape",
                      "frameworks.nnx_unfilled", "frameworks.shape_mismatch")),
        Promise("computes the same logits", "logits against the float64 reference, whatever the "
                                            "class or dtypes (the .params item judges those)",
                keys=("frameworks.float64",)),
    ),
)


# ---------------------------------------------------------------- the chapter

def sizes_not_the_checkpoints(case: Case, sizes: dict) -> bool:
    """Some size torch names is neither of the case's (V, d): the model's own."""
    return not {int(n) for n in sizes.values()} <= set(np.shape(case.args["embedding"]))


CHAPTER = Chapter(
    id=CHAPTER_ID,
    title="One matrix, three frameworks",
    probe_module="grader.chapters.frameworks.probe",
    errors=(
        ErrorPattern("frameworks.alias_key", r"KeyError", r"lm_head"),
        ErrorPattern("frameworks.key_name", r"KeyError"),
        ErrorPattern("frameworks.state_dict_keys", r"RuntimeError", r"Missing key\(s\)|Unexpected key\(s\)"),
        ErrorPattern("frameworks.nnx_key_name", r"ValueError", r"not available in state"),
        ErrorPattern("frameworks.nnx_unfilled", r"TypeError|AttributeError", r"ShapeDtypeStruct"),
        ErrorPattern("frameworks.float64", r"RuntimeError", r"same dtype|Double|Found dtype"),
        # A size in torch's complaint that is neither V nor d of the checkpoint: the model
        # was built with sizes of its own (often the worked example's), not the checkpoint's.
        ErrorPattern("frameworks.sizes_hard_coded", r"RuntimeError",
                     r"size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\)"
                     r"|current model is torch\.Size\(\[(?P<c>\d+), (?P<e>\d+)\]\)",
                     fits=sizes_not_the_checkpoints),
        ErrorPattern("frameworks.shape_mismatch", r"RuntimeError|TypeError",
                     r"size mismatch|must match the size|shapes cannot be multiplied|dot_general requires contracting"),
    ),
    items=(LINEN_TO_TORCH_TIED, LINEN_TO_TORCH, TORCH_TO_NNX_PARAMS, TORCH_TO_NNX),
)

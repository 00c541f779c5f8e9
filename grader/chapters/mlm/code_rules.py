"""What chapter 05's code may not do, and what it may cost.

The text forbids the built-ins that would do the exercise (``F.layer_norm``, ``F.gelu``,
attention modules) and Python loops over heads or positions.  A forbidden built-in is
found in the source of the function and of the notebook's functions it calls, with its
line (``grader.chapters.source_checks``), or in the raw list of ATen operations the call
dispatched.  A loop is found by its cost: the operations one call dispatches, counted at
a base size and with one dimension grown at a time, may not grow with it; the source
only names the loop's line.
"""
from __future__ import annotations

import grader.chapters.source_checks as source_checks
from grader.registry import Case, ErrorPattern, Finding

# ---------------------------------------------------------------- the built-ins the text forbids

LAYER_NORM, GELU, ATTENTION = "mlm.forbidden_layer_norm", "mlm.forbidden_gelu", "mlm.forbidden_attention"
# Attribute names (through any module or alias) of the built-ins the text forbids, and
# the finding each one gets.
FORBIDDEN_NAMES = {
    **dict.fromkeys(("layer_norm", "native_layer_norm", "LayerNorm"), LAYER_NORM),
    **dict.fromkeys(("gelu", "GELU"), GELU),
    **dict.fromkeys(("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward",
                     "_native_multi_head_attention", "TransformerEncoderLayer", "TransformerEncoder",
                     "_transformer_encoder_layer_fwd"), ATTENTION),
}
# ATen operations they dispatch, whatever name reached them (F.layer_norm and
# torch.ops.aten.layer_norm both run aten.native_layer_norm).
FORBIDDEN_OPS = {
    "aten.native_layer_norm": LAYER_NORM, "aten.layer_norm": LAYER_NORM, "aten.gelu": GELU,
    "aten._native_multi_head_attention": ATTENTION, "aten._transformer_encoder_layer_fwd": ATTENTION,
}
# In the kernel, a forbidden built-in raises naming itself (probe.py).
FORBIDDEN = (
    ErrorPattern("mlm.forbidden_attention", r"ForbiddenFunctionError", r"attention|transformer"),
    ErrorPattern("mlm.forbidden_layer_norm", r"ForbiddenFunctionError", r"layer_?norm"),
    ErrorPattern("mlm.forbidden_gelu", r"ForbiddenFunctionError", r"gelu"),
)


def _bound_to_forbidden(globals_: dict) -> dict[str, str]:
    """Global names bound to a forbidden built-in of torch (``g`` after ``... import gelu as g``)."""
    found = {}
    for name, what in (globals_ or {}).items():
        if isinstance(what, dict) and str(what.get("module", "")).startswith("torch") \
                and what.get("name") in FORBIDDEN_NAMES and what.get("type") != "module":
            found[name] = what["name"]
    return found


def _loop_allowances(code: dict, root: str, blocks: str | None) -> dict[str, set[str]]:
    """Per function, the names whose loops are allowed: in the forward pass its blocks
    parameter, and in a helper (of the notebook, or nested) the parameters that receive
    the blocks."""
    allowed = {name: set() for name in code}
    if blocks is None or root not in code:
        return allowed
    allowed[root] = {blocks}
    params = {name: source_checks.parameters(facts.get("source")) for name, facts in code.items()}
    for _ in range(len(code) + 1):
        for name, facts in code.items():
            source = facts.get("source")
            nested = source_checks.defined_functions(source)
            for callee, received in source_checks.calls_with(source, {**params, **nested}, allowed[name]).items():
                allowed[name if callee in nested else callee] |= received
    return allowed


def code_finding(value: dict) -> Finding | None:
    """A forbidden built-in in the code, named with its line; else a forbidden
    operation in what the call dispatched."""
    code = value.get("code") or {}
    for name, facts in code.items():
        for use in source_checks.forbidden_uses(facts.get("source"), name, FORBIDDEN_NAMES,
                                                _bound_to_forbidden(facts.get("globals"))):
            key, spelling = use.what.split("|", 1)
            return Finding(key, {"message": spelling, "line": use.where})
    for op in value.get("ops") or ():
        key = FORBIDDEN_OPS.get(op) or (ATTENTION if str(op).startswith("aten._scaled_dot_product") else None)
        if key:
            return Finding(key, {"message": op})
    return None


# ---------------------------------------------------------------- what a call may cost

# "No Python loop over heads or positions" is judged by what a loop costs: the number of
# ATen operations one call dispatches, counted in the kernel at a base size and with one
# dimension grown at a time.  Whole-tensor code dispatches as many at every size; a loop
# over heads, positions or masked rows dispatches at least one more per extra one,
# however it is spelled (for, a comprehension, map, filter, reduce, recursion).  A loop
# over a fixed handful (q, k, v; a block's six matrices; the blocks, whose number stays
# the same) costs the same at every size and passes.  The source is read only to name
# the line of the loop.
DIMENSIONS = {"heads": "mlm.dimension_heads", "positions": "mlm.dimension_positions",
              "batch": "mlm.dimension_batch", "masked": "mlm.dimension_masked"}


def _loop_line(item: str, value: dict, loops_over_blocks: bool):
    """The first loop of the code that is not over a fixed handful (or the blocks), to name its line."""
    code = value.get("code") or {}
    root_source = (code.get(item) or {}).get("source")
    blocks = (source_checks.parameters(root_source)[4:5] or [None])[0] if loops_over_blocks else None
    allowed = _loop_allowances(code, item, blocks)
    for name, facts in code.items():
        found = source_checks.loops(facts.get("source"), name, allowed[name])
        if found:
            return found[0]
    return None


def cost_finding(item: str, case: Case, value: dict, loops_over_blocks: bool) -> Finding | None:
    """The first dimension whose growth makes the call dispatch more operations: as
    many more as the dimension grew, or more (one operation or more per extra head,
    position or masked row)."""
    counts, dims = value.get("counts"), case.args["dims"]
    if not isinstance(counts, list) or len(counts) != len(dims) + 1 or not all(type(c) is int for c in counts):
        return Finding("common.malformed_record")
    for (dim, small, big), count in zip(dims, counts[1:]):
        if count - counts[0] >= big - small:
            params = {"dimension_key": DIMENSIONS[dim], "small": small, "big": big,
                      "count_small": counts[0], "count_big": count}
            loop = _loop_line(item, value, loops_over_blocks)
            if loop is None:
                return Finding("mlm.cost_grows", params)
            key = "mlm.python_loop_forward" if loops_over_blocks else "mlm.python_loop"
            return Finding(key, {**params, "function": loop.function, "line": loop.where})
    return None

"""Plain NumPy: the rule of an exercise that asks for NumPy alone, no framework.

The probe sends, raw, the source of the student's function and of the notebook's
functions it calls, with what their global names are bound to
(``grader.kernel.runtime.code_facts``).  A framework imported or used there, or a global
bound to one, fails the item, named with its line (``source_checks.module_uses``).  A
chapter adopts the rule with a message key of its own (``key``).
"""
from __future__ import annotations

import grader.chapters.source_checks as source_checks
from grader.comparisons import CONTAINERS
from grader.registry import Finding, Promise

# What "plain NumPy" rules out: the frameworks, and scipy (its ready-made softmax).
FRAMEWORKS = {"torch", "jax", "jaxlib", "flax", "tensorflow", "scipy", "sklearn"}


def plain_numpy_promise(key: str) -> Promise:
    """The promise of an exercise in plain NumPy, whose check gives ``key``."""
    return Promise("in plain NumPy (no framework)", "source check of the function and its notebook helpers: "
                   "an import or a global bound to torch, jax, flax, tensorflow, scipy or sklearn is "
                   f"{key}, with its line", keys=(key,))


def public_module(module: str) -> str:
    """The module as a student imports it: ``scipy.special`` for the
    ``scipy.special._logsumexp`` that defines ``softmax`` (private parts dropped)."""
    parts = module.split(".")
    return ".".join(parts[:next((i for i, p in enumerate(parts) if i and p.startswith("_")), len(parts))])


def framework_finding(code: dict, key: str) -> Finding | None:
    """A framework imported or used in the student's function or its notebook helpers
    (``key``), named with its line (or with the global name bound to it when no source
    is readable)."""
    for name, facts in code.items():
        bound = {g: public_module(str(what.get("module", ""))) for g, what in (facts.get("globals") or {}).items()
                 if isinstance(what, dict) and str(what.get("module", "")).split(".")[0] in FRAMEWORKS}
        uses = source_checks.module_uses(facts.get("source"), name, FRAMEWORKS, bound)
        if uses:
            return Finding(key, {"module": uses[0].what, "line": uses[0].where})
        if bound:
            return Finding(key, {"module": next(iter(bound.values()))})
    return None


def numpy_only(judge, key: str, unwrap: bool = True, one_array: bool = False):
    """The item's judge, after the check that its code is plain NumPy (else ``key``,
    ``framework_finding``); ``unwrap``: the
    judge gets the function's result, not the whole fact; ``one_array``: the exercise
    asks for one array (or number), so a tuple, list or dict is common.not_one_array,
    judged from the result's raw type."""
    def checked(case, value, ref):
        if not isinstance(value, dict) or "code" not in value or ("out" not in value and unwrap):
            return Finding("common.not_judged", {"reason": "the probe's record has no result"})
        finding = framework_finding(value.get("code") or {}, key)
        if finding is not None:
            return finding
        if one_array and value.get("type") in CONTAINERS:
            return Finding("common.not_one_array", {"got": value["type"]})
        return judge(case, value["out"] if unwrap else value, ref)
    return checked

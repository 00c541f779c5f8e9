"""Grader-side half: turn the facts a probe recorded into verdicts.

Every comparison happens here, in the grader's own process, against references
computed here too; the student's kernel only ever supplies raw values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from . import disk_cache
from .probe_runtime import decode, encode
from .registry import Case, Chapter, ErrorPattern, Finding, Item, Symptom, chapter

# Outcomes of an item.  PASS earns the points; everything else earns none.
PASS, FAIL, TIMEOUT, OOM, NOT_REACHED = "pass", "fail", "timeout", "oom", "not_reached"

COMMON_ERRORS = (
    ErrorPattern("common.not_implemented", r"NotImplementedError"),
    ErrorPattern("common.missing", r"NameError", r"is not defined in the notebook"),
)


@dataclass(frozen=True)
class Verdict:
    item: str
    points: int
    max_points: int
    status: str
    finding: Finding | None = None
    case: str = ""  # label of the case that failed
    extra: dict = field(default_factory=dict)


@cache
def cases(chapter_id: str, item_name: str) -> tuple[Case, ...]:
    return tuple(chapter(chapter_id).item(item_name).cases())


@cache
def expected(chapter_id: str, item_name: str) -> tuple:
    """Reference values for every case of an item: from the disk cache, else computed.

    They pass through the same encoding as the student's facts, so a judge sees both
    sides in one form, whether the references were computed now or read back.
    """
    item_cases = cases(chapter_id, item_name)
    stored = disk_cache.load(chapter_id, item_name, len(item_cases))
    if stored is not None:
        return stored
    item = chapter(chapter_id).item(item_name)
    encoded = [encode(item.reference(case)) for case in item_cases]
    disk_cache.store(chapter_id, item_name, encoded)
    return tuple(decode(value) for value in encoded)


def warm_references(ch: Chapter) -> None:
    for item in ch.items:
        expected(ch.id, item.name)


def classify_error(error: dict, patterns: tuple[ErrorPattern, ...], cell: int | None = None) -> Finding:
    """The finding for an exception; ``cell`` names the notebook cell that raised it."""
    if COMMON_ERRORS[0].matches(error):  # the stub's hint says more than its line
        return Finding("common.not_implemented", {"message": error["message"]})
    for pattern in patterns:
        if pattern.matches(error):
            return Finding(pattern.key, dict(error))
    if cell is not None:
        return Finding("common.cell_error", {"cell": cell, **error})
    return Finding("common.exception", dict(error))


def judge_item(ch: Chapter, item: Item, facts: list[dict]) -> Verdict:
    """Verdict of one item from its facts, one per case, in case order."""
    patterns = COMMON_ERRORS[1:] + item.errors + ch.errors
    refs = expected(ch.id, item.name)
    for case, fact, ref in zip(cases(ch.id, item.name), facts, refs):
        if "error" in fact:
            finding = classify_error(fact["error"], patterns)
        else:
            finding = item.judge(case, decode(fact["value"]), ref)
        if finding is not None:
            return Verdict(item.name, 0, item.points, FAIL, finding, case.label)
    return Verdict(item.name, item.points, item.points, PASS)


def unreached(ch: Chapter, done: dict[str, Verdict], status: str, finding: Finding) -> list[Verdict]:
    """Verdicts in chapter order: judged items as they are, the others with ``status``."""
    return [
        done.get(item.name) or Verdict(item.name, 0, item.points, status, finding)
        for item in ch.items
    ]


# ---------------------------------------------------------------- judges

def describe_shape(shape) -> str:
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"


def close(value, ref, rtol: float, atol: float) -> bool:
    value, ref = np.asarray(value), np.asarray(ref)
    return value.shape == ref.shape and bool(np.allclose(value, ref, rtol=rtol, atol=atol))


def compare_arrays(value, ref, rtol: float, atol: float) -> Finding | None:
    """The shared comparison: shape first, then values within the tolerance."""
    value = np.asarray(value)
    ref = np.asarray(ref)
    if value.dtype == object or not np.issubdtype(value.dtype, np.number):
        return Finding("common.not_an_array", {"type": str(value.dtype)})
    if value.shape != ref.shape:
        return Finding("common.wrong_shape", {"got": describe_shape(value.shape), "expected": describe_shape(ref.shape)})
    if not np.all(np.isfinite(value)):
        return Finding("common.not_finite")
    if not np.allclose(value, ref, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(value.astype(np.float64) - ref)))
        return Finding("common.wrong_values", {"max_err": f"{err:.3g}", "rtol": rtol, "atol": atol})
    return None


def matches_reference(symptoms: tuple[Symptom, ...] = (), rtol: float = 1e-5, atol: float = 1e-6):
    """Judge for an item whose value must equal the reference within a tolerance.

    When it does not, the first symptom that shows names the mistake; otherwise the
    finding is the generic shape or value mismatch.
    """

    def judge(case: Case, value, ref) -> Finding | None:
        finding = compare_arrays(value, ref, rtol, atol)
        if finding is None or finding.key == "common.not_an_array":
            return finding
        for symptom in symptoms:
            if symptom.test(case, value):
                return Finding(symptom.key, finding.params)
        return finding

    return judge

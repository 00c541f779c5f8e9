"""What a chapter's judges are made of: a value compared with its reference.

A judge (``registry.Item.judge``) gets one case, the value the student's code gave for
it and the reference, and returns a ``Finding`` or None.  Most are built from these:
``compare_arrays`` (a real array of the reference's shape, finite, within the
tolerance), ``matches_reference`` (the same, naming a known mistake when a symptom
shows) and ``one_array`` (a function asked for one array that returned a container).
The chapters build their judges from them and ``grader.pipeline.judge.items`` runs them.
"""
from __future__ import annotations

import numpy as np

from grader.outcome import Finding
from grader.registry import Case, Symptom

# What a function returns instead of the one array it is asked for, by its raw type
# (the probe ``typed_call`` sends it: a tuple of arrays travels as a list).
CONTAINERS = ("tuple", "list", "dict")


def one_array(judge_values, key: str = "common.not_one_array"):
    """The judge of an item whose function returns one array: a tuple, list or dict is
    ``key``, naming what came back; else ``judge_values`` on the result."""
    def judge(case: Case, value, ref) -> Finding | None:
        if not isinstance(value, dict) or set(value) != {"type", "out"}:
            return Finding("common.malformed_record")
        if value["type"] in CONTAINERS:
            return Finding(key, {"got": value["type"]})
        return judge_values(case, value["out"], ref)
    return judge


def describe_shape(shape) -> str:
    return str(tuple(int(n) for n in shape))


def as_numbers(value) -> np.ndarray | None:
    """``value`` as a real, numeric NumPy array, or None (ragged lists, strings, None,
    objects, complex numbers, structured or bfloat16-as-void arrays)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        return None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        return None
    return arr


def kind_of(value) -> str:
    """How a non-numeric result is named to the student: a type or a dtype."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return "ragged list"
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2:
        return "bfloat16"
    if arr.dtype.kind in "US":
        return "str"
    return str(arr.dtype) if arr.dtype != object else type(value).__name__


def close(value, ref, rtol: float, atol: float) -> bool:
    value, ref = as_numbers(value), np.asarray(ref)
    return value is not None and value.shape == ref.shape and bool(np.allclose(value, ref, rtol=rtol, atol=atol))


def compare_arrays(value, ref, rtol: float, atol: float, dtype: str = "") -> Finding | None:
    """The shared comparison: a real numeric array, of ``dtype`` when the exercise
    promises one, of the reference's shape, finite, within the tolerance."""
    arr = as_numbers(value)
    if arr is None:
        return Finding("common.not_an_array", {"type": kind_of(value)})
    if dtype and arr.dtype != np.dtype(dtype):
        return Finding("common.wrong_dtype", {"got": str(arr.dtype), "expected": dtype})
    ref = np.asarray(ref)
    if arr.shape != ref.shape:
        return Finding("common.wrong_shape", {"got": describe_shape(arr.shape), "expected": describe_shape(ref.shape)})
    if not np.all(np.isfinite(arr)):
        return Finding("common.not_finite")
    if not np.allclose(arr, ref, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(arr.astype(np.float64) - ref)))
        return Finding("common.wrong_values", {"max_err": f"{err:.3g}", "rtol": rtol, "atol": atol})
    return None


def matches_reference(symptoms: tuple[Symptom, ...] = (), rtol: float = 1e-5, atol: float = 1e-6,
                      dtype: str = ""):
    """Judge for an item whose value must equal the reference within a tolerance (and
    have ``dtype``, when the exercise promises one).

    When it does not, the first symptom that shows names the mistake; otherwise the
    finding is the generic shape or value mismatch.
    """

    def judge(case: Case, value, ref) -> Finding | None:
        finding = compare_arrays(value, ref, rtol, atol, dtype)
        if finding is None or finding.key in ("common.not_an_array", "common.wrong_dtype"):
            return finding
        for symptom in symptoms:
            if symptom.test(case, value, ref):
                return Finding(symptom.key, finding.params)
        return finding

    return judge

"""Small numerics the chapters share to recognise symptoms and compute references:
a stable softmax, a parameter's spread and extremes, a tied matrix's self-logits."""
from __future__ import annotations

import numpy as np


def sample_std(values) -> float:
    """The standard deviation of a parameter the kernel sent raw (NaN when it sent none)."""
    return float(np.std(np.asarray(values, np.float64))) if values is not None else float("nan")


def extremes(values):
    """The eight smallest and eight largest values: equal for a copy or a transpose."""
    if values is None:
        return None
    flat = np.sort(np.asarray(values, np.float64).ravel())
    return np.concatenate([flat[:8], flat[-8:]])


def self_logits_negative(logits, ids) -> bool:
    """With a tied matrix ``logits[t, ids[t]]`` is a squared norm and cannot be negative."""
    ids = np.asarray(ids, int)
    return bool(np.any(np.asarray(logits)[np.arange(len(ids)), ids] < 0))


def softmax(z, axis: int = -1) -> np.ndarray:
    """The softmax along ``axis``, shifted by the maximum so that no exponential overflows."""
    z = np.asarray(z, np.float64)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

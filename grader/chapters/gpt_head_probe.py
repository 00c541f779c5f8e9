"""Kernel-side probes of chapter 04 (the LM head in NumPy).  Facts only, no judging.

Each fact carries, raw, the source of the student's function and what its global
names are bound to (``code_facts``): the grader checks there that the code is plain
NumPy, as the exercise asks.
"""
import numpy as np

from grader.probe_runtime import call, code_facts, lookup


def numpy_call(ns, fn, args):
    """``fn(*args)``, the name of its type (a tuple of arrays travels as a list), and the code that ran."""
    out = call(ns, fn, args)
    return {"out": out, "type": type(out).__name__, "code": code_facts(ns, fn)}


def sample_draws(ns, logits, temperature, seed, n, repeat):
    """``n`` calls of ``sample_next`` on one generator, then ``repeat`` more on a fresh
    generator with the same seed (a sampler that uses the generator it is given
    repeats itself); with the type of every draw, and the code."""
    fn = lookup(ns, "sample_next")
    rng = np.random.default_rng(seed)
    draws = [fn(np.array(logits), temperature, rng) for _ in range(n)]
    rng = np.random.default_rng(seed)
    again = [fn(np.array(logits), temperature, rng) for _ in range(repeat)]
    return {"draws": _numbers(draws), "again": _numbers(again),
            "types": sorted({type(d).__name__ for d in draws + again}), "code": code_facts(ns, "sample_next")}


def _numbers(values):
    """The draws as one array of numbers, or None when they are not (ragged, objects)."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError):
        return None
    return array if array.dtype.kind in "biuf" else None

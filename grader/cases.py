"""Helpers shared by the chapters to build cases and recognise symptoms."""
from __future__ import annotations

import zlib

import numpy as np

HIDDEN_SEED = 20170301  # fixed: hidden cases are the same on every run and machine


def hidden_rng(name: str) -> np.random.Generator:
    """A generator of its own for each item, so that adding one item moves no other."""
    return np.random.default_rng([HIDDEN_SEED, zlib.crc32(name.encode())])


def token_ids(rng: np.random.Generator, length: int, vocab_size: int) -> list[int]:
    """Random ids; with ``length`` near ``vocab_size`` some repeat and some are absent."""
    return [int(i) for i in rng.integers(0, vocab_size, size=length)]


def float_args(seed, token_ids, vocab_size, d_model) -> list:
    """Arguments as a test harness sends them: every number a float."""
    return [float(seed), np.asarray(token_ids, np.float32), float(vocab_size), float(d_model)]


def self_logits_negative(logits, ids) -> bool:
    """With a tied matrix ``logits[t, ids[t]]`` is a squared norm and cannot be negative."""
    ids = np.asarray(ids, int)
    return bool(np.any(np.asarray(logits)[np.arange(len(ids)), ids] < 0))

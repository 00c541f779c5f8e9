"""Hidden cases drawn from the teacher's secret, and the helpers that draw a case's ids and arguments."""
from __future__ import annotations

import hashlib
import zlib

import numpy as np

HIDDEN_SEED = 20170301  # without a teacher's secret, hidden cases are the same everywhere
_secret: list[int] = []  # words of the teacher's secret, mixed into every hidden seed


def use_secret(secret: bytes) -> None:
    """Seed the hidden cases with a teacher's secret (``grader ... --secret FILE`` or
    ``TIED_SECRET``): a student who has this repository cannot compute them in advance.
    Call it before any case is built: cases and references are cached."""
    digest = hashlib.sha256(secret).digest() if secret else b""
    _secret[:] = [int.from_bytes(digest[i:i + 4], "big") for i in range(0, len(digest), 4)]


def secret_id() -> str:
    """A name for the secret in use ("" without one), for the reference cache's key."""
    return hashlib.sha256(repr(_secret).encode()).hexdigest()[:16] if _secret else ""


def hidden_rng(name: str) -> np.random.Generator:
    """A generator of its own for each item, so that adding one item moves no other."""
    return np.random.default_rng([HIDDEN_SEED, zlib.crc32(name.encode()), *_secret])


def token_ids(rng: np.random.Generator, length: int, vocab_size: int) -> list[int]:
    """Random ids; with ``length`` near ``vocab_size`` some repeat and some are absent."""
    return [int(i) for i in rng.integers(0, vocab_size, size=length)]


def float_args(seed, token_ids, vocab_size, d_model) -> list:
    """Arguments as a test harness sends them: every number a float."""
    return [float(seed), np.asarray(token_ids, np.float32), float(vocab_size), float(d_model)]

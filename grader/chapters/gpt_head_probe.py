"""Kernel-side probes of chapter 04 (the LM head in NumPy).  Facts only, no judging."""


def sample_draws(ns, logits, temperature, seed, n, repeat):
    """``n`` calls of ``sample_next`` on one generator, then ``repeat`` more on a fresh
    generator with the same seed (a sampler that uses the generator it is given
    repeats itself)."""
    import numpy as np

    fn = lookup(ns, "sample_next")
    rng = np.random.default_rng(seed)
    draws = [fn(np.array(logits), temperature, rng) for _ in range(n)]
    rng = np.random.default_rng(seed)
    again = [fn(np.array(logits), temperature, rng) for _ in range(repeat)]
    return {"draws": np.asarray(draws), "again": np.asarray(again)}

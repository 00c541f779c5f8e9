"""Kernel-side helpers for the probes of the JAX chapters (Flax Linen and NNX).

Part of the library a probe may import (``grader.pipeline.prepare.probe_bundle.LIBRARY``): it runs in
the student's kernel, so it imports only the standard library, NumPy and JAX, and
JAX only inside the functions (a NumPy chapter's kernel never loads it).
"""


def mean_cross_entropy(logits, targets):
    """The loss of the gradient items, written here so that no cell can change it."""
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, jnp.asarray(targets, jnp.int32)[:, None], axis=-1))


def path_name(path):
    """A parameter's path in a tree (JAX's key entries, or NNX's plain keys) as ``a/b/c``."""
    return "/".join(str(getattr(key, "key", key)) for key in path)

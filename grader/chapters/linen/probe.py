"""Kernel-side probes of chapter 01 (Flax Linen).  Facts only, no judging."""
from functools import cache

import numpy as np

from grader.kernel.jax_tools import mean_cross_entropy, path_name
from grader.kernel.runtime import lookup, raw_values, typed_call_standing_in

INIT_STD = 0.02  # the embedding's initialiser: nn.initializers.normal(stddev=0.02)


@cache
def book_tiedio():
    """The exercise's ``TiedIO``, as the solution writes it."""
    import flax.linen as nn

    class TiedIO(nn.Module):
        vocab_size: int
        d_model: int

        @nn.compact
        def __call__(self, token_ids):
            embedding = self.param(
                "embedding", nn.initializers.normal(stddev=INIT_STD), (self.vocab_size, self.d_model)
            )
            return embedding[token_ids] @ embedding.T

    return TiedIO


def call_alone(ns, fn, args):
    """``tied_io_embed``, called with the book's ``TiedIO`` (``typed_call_standing_in``)."""
    return typed_call_standing_in(ns, fn, args, {"TiedIO": book_tiedio()})


def _param_tree(variables):
    import jax

    leaves = jax.tree_util.tree_leaves_with_path(variables)
    return {
        "paths": [path_name(path) for path, _ in leaves],
        "shapes": [list(np.shape(leaf)) for _, leaf in leaves],
        "values": [raw_values(leaf) for _, leaf in leaves],  # the grader takes their statistics
    }


def _logits_and_gradient(apply, matrix, targets, shape):
    """``apply(matrix)``, the logits, and the raw gradient of their mean cross-entropy with
    respect to ``matrix`` (None when the logits are not ``shape``: the loss is not defined
    on them, and the judge reads the logits first).

    One pass of the student's forward gives both (``jax.vjp``, the logits as its aux),
    not one for the logits and another inside ``jax.grad``: the Linen machinery of each
    pass is most of a gradient item's time.  Where that pass fails, the forward runs
    alone, as it did first before: its own error, or logits of the wrong shape, is the
    fact; else the gradient's error is."""
    import jax
    import jax.numpy as jnp

    def loss_and_logits(m):
        logits = apply(m)
        defined = tuple(getattr(logits, "shape", ())) == shape
        return (mean_cross_entropy(logits, targets) if defined else 0.0), logits

    try:
        loss, pull_back, logits = jax.vjp(loss_and_logits, matrix, has_aux=True)
    except Exception:
        logits = apply(matrix)
        if tuple(getattr(logits, "shape", ())) == shape:
            raise
    kind = type(logits).__name__  # raw: a tuple of rows is sent as a list like any other
    if tuple(getattr(logits, "shape", ())) != shape:
        return {"logits": logits, "type": kind, "grad": None}
    return {"logits": logits, "type": kind, "grad": pull_back(jnp.ones_like(loss))[0]}


def tiedio_structure(ns, vocab_size, d_model, seed):
    """The parameter tree that ``TiedIO.init`` creates, and the first leaf of another key's."""
    import jax
    import jax.numpy as jnp

    module = lookup(ns, "TiedIO")(vocab_size=vocab_size, d_model=d_model)
    variables = module.init(jax.random.PRNGKey(seed), jnp.zeros((2,), jnp.int32))
    again = jax.tree_util.tree_leaves(module.init(jax.random.PRNGKey(seed + 1), jnp.zeros((2,), jnp.int32)))
    return {**_param_tree(variables), "again": [raw_values(leaf) for leaf in again[:1]]}  # two keys, two matrices


def tiedio_forward(ns, vocab_size, d_model, token_ids, embedding):
    """``TiedIO`` applied with a matrix chosen by the grader: the logits and the name of
    their own type (a tuple of rows is sent as a list, and only its type says so)."""
    import jax.numpy as jnp

    module = lookup(ns, "TiedIO")(vocab_size=vocab_size, d_model=d_model)
    logits = module.apply({"params": {"embedding": jnp.asarray(embedding)}}, jnp.asarray(token_ids, jnp.int32))
    return {"type": type(logits).__name__, "out": logits}


def tiedio_gradient(ns, vocab_size, d_model, token_ids, targets, embedding):
    """The logits of ``TiedIO`` on a matrix chosen by the grader, and the raw gradient of
    their mean cross-entropy with respect to that one matrix (None when the logits are
    not (T, V): the loss is not defined on them, and the judge reads the logits first)."""
    import jax.numpy as jnp

    module = lookup(ns, "TiedIO")(vocab_size=vocab_size, d_model=d_model)
    ids, matrix = jnp.asarray(token_ids, jnp.int32), jnp.asarray(embedding)
    return _logits_and_gradient(lambda m: module.apply({"params": {"embedding": m}}, ids), matrix, targets,
                                (len(token_ids), vocab_size))


def shared_structure(ns, vocab_size, d_model, seed):
    """The parameter tree that ``SharedEmbedLM.init`` creates."""
    import jax
    import jax.numpy as jnp

    module = lookup(ns, "SharedEmbedLM")(vocab_size=vocab_size, d_model=d_model)
    return _param_tree(module.init(jax.random.PRNGKey(seed), jnp.zeros((2,), jnp.int32)))


def shared_forward(ns, vocab_size, d_model, token_ids, embedding, kernel, bias):
    """``SharedEmbedLM`` applied with the table, kernel and bias the grader chose, and
    nothing else: a head with a matrix of its own finds no parameter."""
    import jax.numpy as jnp

    module = lookup(ns, "SharedEmbedLM")(vocab_size=vocab_size, d_model=d_model)
    params = {"embed": {"embedding": jnp.asarray(embedding)},
              "mixer": {"kernel": jnp.asarray(kernel), "bias": jnp.asarray(bias)}}
    return module.apply({"params": params}, jnp.asarray(token_ids, jnp.int32))


def shared_gradient(ns, vocab_size, d_model, token_ids, targets, embedding, kernel, bias):
    """The logits of ``SharedEmbedLM`` on the grader's parameters, and the raw gradient of
    their mean cross-entropy with respect to the table alone (None when the logits are
    not (T, V))."""
    import jax.numpy as jnp

    module = lookup(ns, "SharedEmbedLM")(vocab_size=vocab_size, d_model=d_model)
    ids, table = jnp.asarray(token_ids, jnp.int32), jnp.asarray(embedding)
    mixer = {"kernel": jnp.asarray(kernel), "bias": jnp.asarray(bias)}
    apply = lambda e: module.apply({"params": {"embed": {"embedding": e}, "mixer": mixer}}, ids)
    return _logits_and_gradient(apply, table, targets, (len(token_ids), vocab_size))

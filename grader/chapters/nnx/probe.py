"""Kernel-side probes of chapter 02 (Flax NNX).  Facts only, no judging."""
import linecache
import warnings
from functools import cache

import numpy as np

from grader.kernel.jax_tools import mean_cross_entropy, path_name
from grader.kernel.runtime import clip, lookup, raw_values, typed_call_standing_in

# Warnings that announce an API on its way out; the judge decides which matter.
_DEPRECATIONS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


@cache
def book_tiedembed():
    """The exercise's ``TiedEmbed``, as the solution writes it."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    class TiedEmbed(nnx.Module):
        def __init__(self, vocab_size, d_model, rngs):
            draw = jax.random.normal(rngs.params(), (vocab_size, d_model))
            self.embedding = nnx.Param(draw / jnp.sqrt(d_model))

        def __call__(self, token_ids):
            matrix = self.embedding[...]
            return matrix[token_ids] @ matrix.T

    return TiedEmbed


def call_alone(ns, fn, args):
    """``tied_io_embed``, called with the book's ``TiedEmbed`` (``typed_call_standing_in``)."""
    return typed_call_standing_in(ns, fn, args, {"TiedEmbed": book_tiedembed()})


def _build(ns, vocab_size, d_model, seed):
    from flax import nnx

    return lookup(ns, "TiedEmbed")(vocab_size, d_model, rngs=nnx.Rngs(seed))


def _state_entries(model):
    """Every entry of ``nnx.state(model)``: its path, kind, and whether it is an nnx.Param."""
    from flax import nnx

    entries = []
    for path, leaf in nnx.to_flat_state(nnx.state(model)):
        entries.append({
            "path": path_name(path),
            "kind": type(leaf).__name__,
            "param": isinstance(leaf, nnx.Param),
            "leaf": leaf,
        })
    return entries


def tiedembed_structure(ns, vocab_size, d_model, seed):
    """What ``nnx.state`` finds in a freshly built ``TiedEmbed``, and the first parameter
    of one built with the next seed (two seeds must give two matrices)."""
    entries = _state_entries(_build(ns, vocab_size, d_model, seed))
    params = [e for e in entries if e["param"]]
    again = [e for e in _state_entries(_build(ns, vocab_size, d_model, seed + 1)) if e["param"]][:1]
    return {
        "again": [raw_values(e["leaf"][...]) for e in again],
        "paths": [e["path"] for e in params],
        "shapes": [list(np.shape(e["leaf"][...])) for e in params],
        "values": [raw_values(e["leaf"][...]) for e in params],  # the grader takes their statistics
        "others": [
            {"path": e["path"], "kind": e["kind"], "shape": list(np.shape(e["leaf"]))}
            for e in entries if not e["param"]
        ],
    }


def _write_matrix(model, vocab_size, d_model, embedding):
    """Write the grader's matrix where the module keeps its own, so that the forward pass
    and the gradient are judged whatever the parameter's name or holder: at
    ``self.embedding`` (an nnx.Variable, or a plain array), else into the only (V, d)
    nnx.Param of the module (an nnx.Embed's, say).  What was found, for the judge."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    matrix = jnp.asarray(embedding)
    held = getattr(model, "embedding", None)
    entries = _state_entries(model)
    found = {"kind": type(held).__name__ if hasattr(model, "embedding") else "",
             "params": [e["path"] for e in entries if e["param"]], "path": None}
    if isinstance(held, nnx.Variable):
        held[...] = matrix
        found["path"] = "embedding"
    elif isinstance(held, (jax.Array, np.ndarray)) and np.shape(held) == (vocab_size, d_model):
        model.embedding = matrix
        found["path"] = "embedding"
    else:
        fits = [e for e in entries if e["param"] and np.shape(e["leaf"][...]) == (vocab_size, d_model)]
        if len(fits) == 1:
            fits[0]["leaf"][...] = matrix
            found["path"] = fits[0]["path"]
    return found


def tiedembed_forward(ns, vocab_size, d_model, token_ids, embedding):
    """``TiedEmbed`` called after the grader wrote its own matrix where the module keeps it."""
    import jax.numpy as jnp

    model = _build(ns, vocab_size, d_model, 0)
    found = _write_matrix(model, vocab_size, d_model, embedding)
    logits = model(jnp.asarray(token_ids, jnp.int32)) if found["path"] else None
    return {**found, "logits": logits, "type": type(logits).__name__}  # raw: a tuple of rows goes as a list


def tiedembed_gradient(ns, vocab_size, d_model, token_ids, targets, embedding):
    """The logits of ``TiedEmbed`` on the grader's matrix, and the raw gradient that
    ``nnx.grad`` of their mean cross-entropy gives that matrix (None when ``nnx.grad``
    gives it none, or when the logits are not (T, V) and the loss is not defined)."""
    import jax.numpy as jnp
    from flax import nnx

    model = _build(ns, vocab_size, d_model, 0)
    found = _write_matrix(model, vocab_size, d_model, embedding)
    if not found["path"]:
        return {**found, "logits": None, "grad": None}
    ids = jnp.asarray(token_ids, jnp.int32)
    logits = model(ids)
    found["type"] = type(logits).__name__
    if tuple(getattr(logits, "shape", ())) != (len(token_ids), vocab_size):
        return {**found, "logits": logits, "grad": None}
    grads = nnx.grad(lambda m: mean_cross_entropy(m(ids), targets))(model)
    by_path = {path_name(path): leaf for path, leaf in nnx.to_flat_state(grads)}
    grad = by_path.get(found["path"])
    return {**found, "logits": logits, "grad": None if grad is None else grad[...]}


def tiedembed_warnings(ns, vocab_size, d_model, token_ids):
    """The warnings that building and calling ``TiedEmbed`` raise, with the line that raised
    each.  A call that raises is ``TiedEmbed.__call__``'s to judge (a missing ``.T``): the
    warnings raised until then are this item's facts."""
    import jax.numpy as jnp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _build(ns, vocab_size, d_model, 0)
        try:
            model(jnp.asarray(token_ids, jnp.int32))
        except NotImplementedError:
            raise  # the stub: nothing written yet
        except Exception:
            pass
    return [
        {
            "category": w.category.__name__,
            "message": clip(str(w.message).splitlines()[0]) if str(w.message) else "",
            "filename": str(w.filename),
            "line": clip(linecache.getline(str(w.filename), w.lineno).strip()),
        }
        for w in caught
        if w.category.__name__ in _DEPRECATIONS
    ]

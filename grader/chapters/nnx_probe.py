"""Kernel-side probes of chapter 02 (Flax NNX).  Facts only, no judging."""

# Warnings that announce an API on its way out; the judge decides which matter.
_DEPRECATIONS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


def _build(ns, vocab_size, d_model, seed):
    from flax import nnx

    return lookup(ns, "TiedEmbed")(vocab_size, d_model, rngs=nnx.Rngs(seed))


def _state_entries(model):
    """Every entry of ``nnx.state(model)``: its path, kind, and whether it is an nnx.Param."""
    from flax import nnx

    entries = []
    for path, leaf in nnx.to_flat_state(nnx.state(model)):
        entries.append({
            "path": "/".join(str(p) for p in path),
            "kind": type(leaf).__name__,
            "param": isinstance(leaf, nnx.Param),
            "leaf": leaf,
        })
    return entries


def _fingerprint(array):
    """The eight smallest and eight largest values: equal for a copy or a transpose."""
    import numpy as np

    flat = np.sort(np.asarray(array, dtype=np.float64).ravel())
    return np.concatenate([flat[:8], flat[-8:]])


def tiedembed_structure(ns, vocab_size, d_model, seed):
    """What ``nnx.state`` finds in a freshly built ``TiedEmbed``."""
    import numpy as np

    entries = _state_entries(_build(ns, vocab_size, d_model, seed))
    params = [e for e in entries if e["param"]]
    return {
        "paths": [e["path"] for e in params],
        "shapes": [list(np.shape(e["leaf"][...])) for e in params],
        "stds": [float(np.std(np.asarray(e["leaf"][...], dtype=np.float64))) for e in params],
        "fingerprints": [_fingerprint(e["leaf"][...]) for e in params],
        "others": [
            {"path": e["path"], "kind": e["kind"], "shape": list(np.shape(e["leaf"]))}
            for e in entries if not e["param"]
        ],
    }


def tiedembed_forward(ns, vocab_size, d_model, token_ids, embedding):
    """``TiedEmbed`` called after the grader wrote its own matrix into ``embedding``."""
    import jax.numpy as jnp
    from flax import nnx

    model = _build(ns, vocab_size, d_model, 0)
    held = model.embedding
    params = [e["path"] for e in _state_entries(model) if e["param"]]
    if not isinstance(held, nnx.Variable):
        return {"kind": type(held).__name__, "params": params, "logits": None}
    held[...] = jnp.asarray(embedding)
    logits = model(jnp.asarray(token_ids, jnp.int32))
    return {"kind": type(held).__name__, "params": params, "logits": logits}


def tiedembed_warnings(ns, vocab_size, d_model, token_ids):
    """The warnings that building and calling ``TiedEmbed`` raise, with the line that raised each."""
    import linecache
    import warnings

    import jax.numpy as jnp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _build(ns, vocab_size, d_model, 0)
        model(jnp.asarray(token_ids, jnp.int32))
    return [
        {
            "category": w.category.__name__,
            "message": str(w.message).splitlines()[0][:300] if str(w.message) else "",
            "filename": str(w.filename),
            "line": linecache.getline(str(w.filename), w.lineno).strip()[:300],
        }
        for w in caught
        if w.category.__name__ in _DEPRECATIONS
    ]

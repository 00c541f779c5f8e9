"""Kernel-side probes of chapter 07 (one matrix, three frameworks).  Facts only, no judging.

Each probe builds a checkpoint from the grader's float32 arrays, in the form the
student's converter receives (Linen variables, or a torch state_dict), calls the
converter, and reports what the returned model holds and computes.
"""


def _np(value):
    """A tensor or array as a NumPy array of the same dtype, detached from autograd."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _linen_to_torch(ns, embedding, kernel, bias):
    """``linen_to_torch`` on what ``LinenTiedLM.init`` returns, holding the grader's arrays."""
    import jax.numpy as jnp

    variables = {"params": {"embed": {"embedding": jnp.asarray(embedding)},
                            "mixer": {"kernel": jnp.asarray(kernel), "bias": jnp.asarray(bias)}}}
    return lookup(ns, "linen_to_torch")(variables)


def _torch_to_nnx(ns, embedding, kernel, bias, alias):
    """``torch_to_nnx`` on a torch state_dict: with ``alias`` as ``TorchTiedLM.state_dict()``
    returns it (the tied matrix under both names), without as safetensors' ``save_model``
    writes it (one name per tensor)."""
    import torch

    E = torch.tensor(embedding)
    state_dict = {"embed.weight": E, "mixer.weight": torch.tensor(kernel.T), "mixer.bias": torch.tensor(bias)}
    if alias:
        state_dict["lm_head.weight"] = E
    return lookup(ns, "torch_to_nnx")(state_dict)


def _not_a(kind, model):
    return {"is_module": False, "type": type(model).__name__} if not isinstance(model, kind) else None


def torch_structure(ns, embedding, kernel, bias, token_ids):
    """How the returned torch model holds its matrix: identities, pointers, values, dtypes."""
    import torch

    model = _linen_to_torch(ns, embedding, kernel, bias)
    other = _not_a(torch.nn.Module, model)
    if other:
        return other
    e, w = model.embed.weight, model.lm_head.weight
    return {
        "is_module": True,
        "type": type(model).__name__,
        "same_object": w is e,
        "same_ptr": w.data_ptr() == e.data_ptr(),
        "embed": _np(e),
        "head": _np(w),
        "dtypes": {name: str(p.dtype) for name, p in model.named_parameters(remove_duplicate=False)},
    }


def torch_logits(ns, embedding, kernel, bias, token_ids):
    """The returned torch model's logits on the grader's ids."""
    import torch

    model = _linen_to_torch(ns, embedding, kernel, bias)
    other = _not_a(torch.nn.Module, model)
    if other:
        return other
    with torch.no_grad():
        logits = model(torch.as_tensor(np.asarray(token_ids), dtype=torch.long))
    return {"is_module": True, "type": type(model).__name__, "logits": _np(logits),
            "head_is_embed": model.lm_head.weight is model.embed.weight}


def nnx_structure(ns, embedding, kernel, bias, token_ids, alias):
    """Every ``nnx.Param`` of the returned module: path, dtype, values, and whether it is still abstract."""
    import jax
    from flax import nnx

    model = _torch_to_nnx(ns, embedding, kernel, bias, alias)
    other = _not_a(nnx.Module, model)
    if other:
        return other
    facts = {"is_module": True, "type": type(model).__name__, "paths": [], "dtypes": [], "values": [],
             "abstract": []}
    for path, variable in nnx.to_flat_state(nnx.state(model, nnx.Param)):
        name = "/".join(str(p) for p in path)
        value = variable.get_value()
        facts["paths"].append(name)
        if isinstance(value, jax.ShapeDtypeStruct):  # left as nnx.eval_shape made it
            facts["abstract"].append(name)
            value = np.zeros(value.shape, value.dtype)
        facts["dtypes"].append(str(_np(value).dtype))
        facts["values"].append(_np(value))
    return facts


def nnx_logits(ns, embedding, kernel, bias, token_ids, alias):
    """The returned NNX module's logits on the grader's ids."""
    import jax.numpy as jnp
    from flax import nnx

    model = _torch_to_nnx(ns, embedding, kernel, bias, alias)
    other = _not_a(nnx.Module, model)
    if other:
        return other
    return {"is_module": True, "type": type(model).__name__,
            "logits": np.asarray(model(jnp.asarray(token_ids, jnp.int32)))}

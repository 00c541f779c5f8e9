"""Kernel-side probes of chapter 07 (one matrix, three frameworks).  Facts only, no judging.

Each probe builds a checkpoint from the grader's float32 arrays, in the form the
student's converter receives (Linen variables, or a torch state_dict), calls the
converter, and reports what the returned model holds and computes.
"""
import numpy as np

from grader.kernel.jax_tools import path_name
from grader.kernel.runtime import error_text, lookup
from grader.kernel.torch_tools import to_numpy


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


def _model_facts(ns, model, module_kind, class_name):
    """Whether the result is a module at all, and of the class the notebook gives."""
    return {"is_module": isinstance(model, module_kind), "type": type(model).__name__,
            "expected_class": isinstance(model, lookup(ns, class_name))}


def _run(model, ids):
    """The model's logits on ``ids``, or the error its forward pass raised, as facts."""
    try:
        return {"logits": to_numpy(model(ids)), "forward_error": ""}
    except Exception as exc:  # a model that cannot run is a fact, judged in the grader
        return {"logits": None, "forward_error": error_text(exc)}


def _torch_facts(ns, model):
    """What the returned torch model holds: every parameter by name (aliases included)."""
    import torch

    facts = _model_facts(ns, model, torch.nn.Module, "TorchTiedLM")
    if not facts["is_module"]:
        return facts
    named = list(model.named_parameters(remove_duplicate=False))
    return {**facts,
            "params": {name: to_numpy(p) for name, p in named},
            "dtypes": {name: str(p.dtype) for name, p in named},
            "state_keys": [str(k) for k in model.state_dict()]}


def _fitting_logits(model, ids, cotangent):
    """The model's logits on ``ids``, or None where its forward raises or they do not have
    the cotangent's shape: then no gradient is taken, and the value item runs the forward
    again and judges its error or its shape."""
    try:
        logits = model(ids)
    except Exception:
        return None
    return logits if tuple(getattr(logits, "shape", ())) == np.shape(cotangent) else None


def _torch_gradient(model, ids, cotangent):
    """The raw gradient that ``sum(logits * cotangent)`` leaves in ``embed.weight`` (None
    when none reaches it), or the error its backward pass raised."""
    import torch

    model.zero_grad(set_to_none=True)
    logits = _fitting_logits(model, ids, cotangent)
    if logits is None:
        return {"grad": None, "forward_failed": True}
    try:
        (logits * torch.as_tensor(np.asarray(cotangent, np.float32))).sum().backward()
    except Exception as exc:  # a model autograd cannot follow is a fact, judged in the grader
        return {"grad": None, "grad_error": error_text(exc)}
    grad = model.embed.weight.grad
    return {"grad": None if grad is None else to_numpy(grad), "grad_error": ""}


def torch_structure(ns, embedding, kernel, bias, token_ids, cotangent):
    """How the returned torch model holds its matrix: identities, pointers, names, dtypes,
    and the gradient its embedding gets through both uses."""
    import torch

    model = _linen_to_torch(ns, embedding, kernel, bias)
    facts = _torch_facts(ns, model)
    if facts["is_module"]:
        e, w = model.embed.weight, model.lm_head.weight
        facts.update(ids=[id(e), id(w)], ptrs=[e.data_ptr(), w.data_ptr()])
        if cotangent is not None:
            facts.update(_torch_gradient(model, torch.as_tensor(np.asarray(token_ids), dtype=torch.long), cotangent))
    return facts


def torch_values(ns, embedding, kernel, bias, token_ids):
    """The values the returned torch model holds, whether it is tied, and its logits."""
    import torch

    model = _linen_to_torch(ns, embedding, kernel, bias)
    facts = _torch_facts(ns, model)
    if facts["is_module"]:
        facts["ids"] = [id(model.embed.weight), id(model.lm_head.weight)]
        with torch.no_grad():
            facts.update(_run(model, torch.as_tensor(np.asarray(token_ids), dtype=torch.long)))
    return facts


def _nnx_facts(ns, model):
    """Every ``nnx.Param`` of the returned module: path, dtype, values, and which are still
    abstract (left as ``nnx.eval_shape`` made them)."""
    import jax
    from flax import nnx

    facts = _model_facts(ns, model, nnx.Module, "NNXTiedLM")
    if not facts["is_module"]:
        return facts
    facts.update(paths=[], dtypes=[], values=[], abstract=[])
    for path, variable in nnx.to_flat_state(nnx.state(model, nnx.Param)):
        name = path_name(path)
        value = variable.get_value()
        facts["paths"].append(name)
        if isinstance(value, jax.ShapeDtypeStruct):
            facts["abstract"].append(name)
            value = np.zeros(value.shape, value.dtype)
        value = np.asarray(value)
        facts["dtypes"].append(str(value.dtype))
        facts["values"].append(value.astype(np.float64) if value.dtype.kind == "V" or str(value.dtype) == "bfloat16"
                               else value)
    return facts


def _nnx_gradient(model, ids, cotangent):
    """The raw gradient that ``sum(logits * cotangent)`` gives ``embed.embedding``, or the
    error ``nnx.grad`` raised."""
    import jax.numpy as jnp
    from flax import nnx

    logits = _fitting_logits(model, ids, cotangent)
    if logits is None:
        return {"grad": None, "forward_failed": True}
    try:
        grads = nnx.grad(lambda m: jnp.sum(m(ids) * jnp.asarray(cotangent, jnp.float32)))(model)
        grad = grads["embed"]["embedding"]
        return {"grad": np.asarray(grad.get_value() if hasattr(grad, "get_value") else grad), "grad_error": ""}
    except Exception as exc:  # a model nnx.grad cannot follow is a fact, judged in the grader
        return {"grad": None, "grad_error": error_text(exc)}


def nnx_structure(ns, embedding, kernel, bias, token_ids, alias, cotangent):
    """The returned NNX module's class and Params (paths, dtypes), and the gradient its
    embedding gets through both uses."""
    import jax.numpy as jnp

    model = _torch_to_nnx(ns, embedding, kernel, bias, alias)
    facts = _nnx_facts(ns, model)
    if facts["is_module"] and not facts["abstract"] and cotangent is not None:
        facts.update(_nnx_gradient(model, jnp.asarray(token_ids, jnp.int32), cotangent))
    return facts


def nnx_values(ns, embedding, kernel, bias, token_ids, alias):
    """The values the returned NNX module holds, and its logits."""
    import jax.numpy as jnp

    model = _torch_to_nnx(ns, embedding, kernel, bias, alias)
    facts = _nnx_facts(ns, model)
    if facts["is_module"] and not facts["abstract"]:
        facts.update(_run(model, jnp.asarray(token_ids, jnp.int32)))
    return facts

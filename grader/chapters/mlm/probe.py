"""Kernel-side probes of chapter 05 (masked LM in PyTorch).  Facts only, no judging.

While the student's function runs, the built-ins the exercise forbids raise
``ForbiddenFunctionError`` naming themselves; they are put back in a ``finally``
block whatever happens.  Names in the notebook that are bound to them directly
(``from torch.nn.functional import gelu``) are swapped for the same while.  What
reaches them another way (``torch.ops.aten.gelu``) is in the raw list of the
operations the call dispatched, and the source of the function goes out raw: the
grader decides on both.  On the cost case the probes call the function at two sizes
of each dimension and send how many operations each call dispatched: a Python loop
over heads or positions shows as a count that grows.

``mlm_forward_tied`` is judged on its own: while it runs, the names ``layer_norm``,
``gelu_tanh`` and ``multi_head_attention`` of the notebook are the book's own ones
below, so that a mistake in a helper costs that helper's points only.
"""
import math

import numpy as np

from grader.kernel.runtime import code_facts, lookup
from grader.kernel.torch_tools import single_threaded

ITEMS = ("layer_norm", "gelu_tanh", "multi_head_attention", "mlm_forward_tied")


class ForbiddenFunctionError(RuntimeError):
    """A forbidden built-in was called; the message is its name."""


def _forbidden_targets():
    """(owner, attribute, name shown to the student) for every forbidden entry point."""
    import torch
    import torch.nn.functional as F

    wanted = (
        (F, "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention"),
        (torch._C._nn, "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention"),
        (F, "multi_head_attention_forward", "torch.nn.functional.multi_head_attention_forward"),
        (torch.nn.MultiheadAttention, "forward", "torch.nn.MultiheadAttention"),
        (torch, "_native_multi_head_attention", "torch.nn.MultiheadAttention"),
        (torch, "_transformer_encoder_layer_fwd", "torch.nn.TransformerEncoderLayer"),
        (F, "layer_norm", "torch.nn.functional.layer_norm"),
        (torch, "layer_norm", "torch.layer_norm"),
        (torch, "native_layer_norm", "torch.native_layer_norm"),
        (torch.nn.LayerNorm, "forward", "torch.nn.LayerNorm"),
        (F, "gelu", "torch.nn.functional.gelu"),
        (torch._C._nn, "gelu", "torch.nn.functional.gelu"),
    )
    return [(owner, attr, label) for owner, attr, label in wanted if hasattr(owner, attr)]


def _raiser(label):
    def forbidden(*args, **kwargs):
        raise ForbiddenFunctionError(label)

    return forbidden


def _recorder():
    """A dispatch mode that records the name of every ATen operation run under it, and
    how many it ran."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = set()
            self.count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(str(getattr(func, "overloadpacket", func)))
            self.count += 1
            return func(*args, **(kwargs or {}))

    return Recorder()


@single_threaded
def _guarded_call(ns, name, args, kwargs=None, helpers=None, then=None):
    """``ns[name](*args, **kwargs)`` with the forbidden built-ins raising and, when
    given, ``helpers`` standing in for the notebook's names of the same while; the
    result as NumPy, its type and dtype (raw: NumPy has no bfloat16), the operations it
    dispatched and the code it ran, and what ``then(result)`` adds (run after the call, its operations not counted)."""
    fn = lookup(ns, name)  # a NameError before anything is patched
    code = code_facts(ns, name, skip=ITEMS)
    targets = _forbidden_targets()
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in targets]
    by_id = {id(original): label for (_, _, original), (_, _, label) in zip(saved, targets)}
    space = getattr(fn, "__globals__", ns)
    missing = object()
    swapped = {}
    recorder = _recorder()
    try:
        for owner, attr, label in targets:
            setattr(owner, attr, _raiser(label))
        for key, value in list(space.items()):
            if id(value) in by_id:
                swapped[key] = value
                space[key] = _raiser(by_id[id(value)])
        for key, helper in (helpers or {}).items():
            swapped.setdefault(key, space.get(key, missing))
            space[key] = helper
        with recorder:
            result = fn(*args, **(kwargs or {}))
        extra = then(result) if then else {}
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)
        for key, value in swapped.items():
            if value is missing:
                space.pop(key, None)
            else:
                space[key] = value
    return {"out": _numpy(result), "type": type(result).__name__, "dtype": str(getattr(result, "dtype", None)),
            "ops": sorted(recorder.ops),
            "count": recorder.count, "code": code, **extra}


def _numpy(value):
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_floating_point() and value.dtype not in (torch.float32, torch.float64):
            value = value.float()
        return value.numpy()
    return value


def _tensor(array):
    import torch

    array = np.asarray(array)
    if array.dtype.kind in "iu":
        return torch.as_tensor(array.astype(np.int64))
    return torch.as_tensor(array.astype(np.float32))


# ---------------------------------------------------------------- the book's helpers

def book_layer_norm(x, eps=1e-5):
    centred = x - x.mean(dim=-1, keepdim=True)
    return centred / (centred * centred).mean(dim=-1, keepdim=True).add(eps).sqrt()


def book_gelu_tanh(x):
    import torch

    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def book_multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads):
    import torch

    n, t, d = x.shape
    split = lambda h: h.reshape(n, t, num_heads, d // num_heads).transpose(1, 2)  # (N, H, T, d_head)
    scores = split(x @ w_q) @ split(x @ w_k).transpose(-2, -1) / math.sqrt(d // num_heads)
    out = torch.softmax(scores, dim=-1) @ split(x @ w_v)
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


# ---------------------------------------------------------------- probes

def _costed(probe):
    """``probe``, which on a cost case (``variants``: the arguments at a base size and
    with one dimension grown at a time) calls it on each and sends the raw number of
    operations each call dispatched; the grader compares them (``mlm.cost_finding``)."""
    def run(ns, variants=None, dims=None, **args):
        if variants is None:
            return probe(ns, **args)
        records = [probe(ns, **variant) for variant in variants]
        return {"out": None, "type": "cost", "counts": [r["count"] for r in records],
                "ops": sorted(set().union(*(r["ops"] for r in records))), "code": records[0]["code"]}

    run.__name__ = run.__qualname__ = probe.__name__
    return run


@_costed
def layer_norm(ns, x, eps=None):
    if eps is None:
        return _guarded_call(ns, "layer_norm", [_tensor(x)])
    return _guarded_call(ns, "layer_norm", [_tensor(x)], {"eps": float(eps)})


@_costed
def gelu_tanh(ns, x):
    return _guarded_call(ns, "gelu_tanh", [_tensor(x)])


ATTENTION_INPUTS = ("x", "w_q", "w_k", "w_v", "w_o")


def _input_gradients(inputs: dict, cotangent):
    """After the call: the raw gradient that ``sum(out * cotangent)`` leaves in each
    input (None where nothing reaches it)."""
    def backward(result):
        try:
            (result * _tensor(cotangent)).sum().backward()
        except (RuntimeError, TypeError, ValueError) as error:
            return {"grads": dict.fromkeys(inputs), "grad_error": f"{type(error).__name__}: {error}"}
        return {"grads": {name: None if t.grad is None else t.grad.detach().numpy().copy()
                          for name, t in inputs.items()}}

    return backward


@_costed
def multi_head_attention(ns, x, w_q, w_k, w_v, w_o, num_heads, cotangent=None):
    tensors = [_tensor(a) for a in (x, w_q, w_k, w_v, w_o)]
    then = None
    if cotangent is not None:  # the gradient case: what reaches x and each weight
        then = _input_gradients({n: t.requires_grad_() for n, t in zip(ATTENTION_INPUTS, tensors)}, cotangent)
    return _guarded_call(ns, "multi_head_attention", tensors + [int(num_heads)], then=then)


def _table_gradient(table, cotangent):
    """After the call: the raw gradient that ``sum(logits * cotangent)`` leaves in the
    shared table (None when nothing reaches it), or why there is none."""
    def backward(result):
        try:
            (result * _tensor(cotangent)).sum().backward()
        except (RuntimeError, TypeError, ValueError) as error:
            return {"grad": None, "grad_error": f"{type(error).__name__}: {error}"}
        return {"grad": None if table.grad is None else table.grad.detach().numpy().copy()}

    return backward


@_costed
def mlm_forward_tied(ns, input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads, cotangent=None):
    tensors = [_tensor(a) for a in (input_ids, mask_indicator, w_emb, pos_embed, blocks_weights)]
    helpers = {"layer_norm": book_layer_norm, "gelu_tanh": book_gelu_tanh,
               "multi_head_attention": book_multi_head_attention}
    then = None
    if cotangent is not None:  # the gradient case: the table's raw gradient, both uses together
        then = _table_gradient(tensors[2].requires_grad_(), cotangent)
    return _guarded_call(ns, "mlm_forward_tied", tensors + [int(num_heads)], helpers=helpers, then=then)

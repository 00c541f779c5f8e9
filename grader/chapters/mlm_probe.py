"""Kernel-side probes of chapter 05 (masked LM in PyTorch).  Facts only, no judging.

While the student's function runs, the built-ins the exercise forbids raise
``ForbiddenFunctionError`` naming themselves; they are put back in a ``finally``
block whatever happens.  Names in the notebook that are bound to them directly
(``from torch.nn.functional import gelu``) are swapped for the same while.
"""


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


def _guarded_call(ns, name, *args):
    """``ns[name](*args)`` with the forbidden built-ins raising; the result as NumPy."""
    lookup(ns, name)  # a NameError before anything is patched
    targets = _forbidden_targets()
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in targets]
    by_id = {id(original): label for (_, _, original), (_, _, label) in zip(saved, targets)}
    swapped = {}
    try:
        for owner, attr, label in targets:
            setattr(owner, attr, _raiser(label))
        for key, value in list(ns.items()):
            if id(value) in by_id:
                swapped[key] = value
                ns[key] = _raiser(by_id[id(value)])
        result = ns[name](*args)
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)
        for key, value in swapped.items():
            ns[key] = value
    return _numpy(result)


def _numpy(value):
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_floating_point() and value.dtype not in (torch.float32, torch.float64):
            value = value.float()
        return value.numpy()
    return value


def _tensor(array):
    import numpy as np
    import torch

    array = np.asarray(array)
    if array.dtype.kind in "iu":
        return torch.as_tensor(array.astype(np.int64))
    return torch.as_tensor(array.astype(np.float32))


def layer_norm(ns, x, eps=None):
    if eps is None:
        return _guarded_call(ns, "layer_norm", _tensor(x))
    return _guarded_call(ns, "layer_norm", _tensor(x), float(eps))


def gelu_tanh(ns, x):
    return _guarded_call(ns, "gelu_tanh", _tensor(x))


def multi_head_attention(ns, x, w_q, w_k, w_v, w_o, num_heads):
    tensors = [_tensor(a) for a in (x, w_q, w_k, w_v, w_o)]
    return _guarded_call(ns, "multi_head_attention", *tensors, int(num_heads))


def mlm_forward_tied(ns, input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads):
    tensors = [_tensor(a) for a in (input_ids, mask_indicator, w_emb, pos_embed, blocks_weights)]
    return _guarded_call(ns, "mlm_forward_tied", *tensors, int(num_heads))

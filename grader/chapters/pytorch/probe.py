"""Kernel-side probes of chapter 03 (PyTorch).  Facts only, no judging.

Every probe builds its modules from the numbers the grader sends, calls the
student's code, and returns what it finds as plain arrays, numbers and booleans.
"""

import numpy as np

from grader.kernel.runtime import clip, error_text, lookup, standing_in
from grader.kernel.torch_tools import single_threaded, to_numpy


def _values(tensor):
    """A tensor's values as a NumPy array (float64 for any floating dtype, bfloat16 included,
    which NumPy cannot hold), or None for complex ones; its dtype travels separately."""
    if tensor.is_complex():
        return None
    return to_numpy(tensor.detach().double() if tensor.is_floating_point() else tensor)


def _modules(vocab_size, d_model, in_features, out_features, bias, embedding, head, head_bias):
    """An ``nn.Embedding`` and an ``nn.Linear`` holding the values the grader chose."""
    import torch
    from torch import nn

    emb = nn.Embedding(int(vocab_size), int(d_model))
    lin = nn.Linear(int(in_features), int(out_features), bias=bool(bias))
    with torch.no_grad():
        if embedding is not None:
            emb.weight.copy_(torch.from_numpy(np.asarray(embedding, np.float32)))
        if head is not None:
            lin.weight.copy_(torch.from_numpy(np.asarray(head, np.float32)))
        if bias and head_bias is not None:
            lin.bias.copy_(torch.from_numpy(np.asarray(head_bias, np.float32)))
    return emb, lin


def _version_bump(first, second):
    """How far ``second``'s version counter moves when ``first`` is changed in place: it
    moves when they share the counter, as ``nn.Parameter(first)`` (a new Parameter around
    the same tensor) does and a ``.data`` alias does not."""
    import torch

    before = second._version
    with torch.no_grad():
        first.add_(0)  # an in-place no-op: it only bumps the version counter
    return second._version - before


def _tie_facts(e, w):
    """How the head's weight ``w`` relates to the embedding's ``e``, as raw numbers:
    identities, data pointers, the version bump, layouts."""
    import torch

    is_tensor = isinstance(w, torch.Tensor)
    return {
        "embed_id": id(e),
        "head_id": id(w),
        "embed_ptr": e.data_ptr(),
        "head_ptr": w.data_ptr() if is_tensor else -1,
        "version_bump": _version_bump(e, w) if is_tensor else 0,
        "head_shape": list(w.shape) if is_tensor else [],
        "head_stride": list(w.stride()) if is_tensor else [],
        "embed_shape": list(e.shape),
        "embed_stride": list(e.stride()),
    }


@single_threaded
def tie_weights_tied(ns, embedding, head, head_bias, hidden):
    """``tie_weights`` on shapes that can be tied: what the two modules hold afterwards."""
    import torch

    vocab_size, d_model = np.shape(embedding)
    emb, lin = _modules(vocab_size, d_model, d_model, vocab_size, head_bias is not None,
                        embedding, head, head_bias)
    bias_before = lin.bias
    lookup(ns, "tie_weights")(emb, lin)
    w, e = lin.weight, emb.weight
    bias = getattr(lin, "bias", None)
    facts = {
        **_tie_facts(e, w),
        "embed": to_numpy(e),
        "head": to_numpy(w) if isinstance(w, torch.Tensor) else np.zeros((0,)),
        "has_bias": bias is not None,
        "bias_ids": [id(bias_before), id(bias)],
        "bias": to_numpy(bias) if isinstance(bias, torch.Tensor) else np.zeros((0,)),
    }
    try:
        with torch.no_grad():
            facts["logits"] = to_numpy(lin(torch.from_numpy(np.asarray(hidden, np.float32))))
        facts["forward_error"] = ""
    except Exception as exc:  # a head that cannot run is a fact, judged in the grader
        facts["logits"] = np.zeros((0,))
        facts["forward_error"] = error_text(exc)
    return facts


@single_threaded
def tie_weights_refused(ns, embedding, head):
    """``tie_weights`` on shapes that cannot be tied: what it raised, and what it changed."""
    vocab_size, d_model = np.shape(embedding)
    out_features, in_features = np.shape(head)
    emb, lin = _modules(vocab_size, d_model, in_features, out_features, False, embedding, head, None)
    embed_before, head_before = emb.weight, lin.weight
    facts = {"raised": "", "raised_types": [], "message": ""}
    try:
        lookup(ns, "tie_weights")(emb, lin)
    except NotImplementedError:
        raise
    except Exception as exc:  # the exception is the fact this probe collects
        facts.update(raised=type(exc).__name__, raised_types=[t.__name__ for t in type(exc).__mro__],
                     message=clip(exc))
    facts["ids_before"] = [id(embed_before), id(head_before)]
    facts["ids_after"] = [id(emb.weight), id(lin.weight)]
    facts["embed"] = to_numpy(emb.weight)
    facts["head"] = to_numpy(lin.weight)
    return facts


class DtypeSlipError(TypeError):
    """A floating parameter or buffer of the student's model that is not float32: its
    name, its dtype and the line of ``__init__`` that made it (for the grader's pattern)."""


# What a line that makes a tensor of another dtype says.
DTYPE_WORDS = ("float64", "double", "bfloat16", "float16", "half", "dtype")


def _creating_line(model, name):
    """The line of the model's ``__init__`` that made ``name``: the first that names a
    dtype, else the one that assigns its top-level attribute; "" when there is no source."""
    import inspect

    try:
        lines = [line.strip() for line in inspect.getsource(type(model).__init__).splitlines()]
    except (OSError, TypeError):
        return ""
    top = name.split(".")[0]
    code = [line for line in lines if line and not line.startswith("#")]
    return next((line for line in code if any(word in line for word in DTYPE_WORDS)),
                next((line for line in code if line.startswith(f"self.{top} ") or line.startswith(f"self.{top}=")), ""))


def _float32_only(model):
    """Raise ``DtypeSlipError`` for the first floating tensor of the model that is not
    float32: every item it reaches names it, not the line of a given class where two
    dtypes meet."""
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_floating_point() and str(tensor.dtype) != "torch.float32":
            raise DtypeSlipError(f"{name} is {tensor.dtype}, made by: {clip(_creating_line(model, name))}")


def book_tie_weights(embedding, lm_head):
    """The exercise's ``tie_weights``, as the solution writes it."""
    if lm_head.weight.shape != embedding.weight.shape:
        raise ValueError(f"cannot tie: lm_head.weight has shape {tuple(lm_head.weight.shape)}, "
                         f"embedding.weight has shape {tuple(embedding.weight.shape)}")
    lm_head.weight = embedding.weight


def _tinylm(ns, vocab_size, d_model, n_layers, seed):
    """The student's model as the exercise's signature allows: ``n_layers`` by keyword,
    or left to its default when the case gives None; float32 throughout.  A ``TinyLM``
    that ties with the notebook's ``tie_weights`` gets the book's one: a mistake
    there is that item's."""
    import torch

    torch.manual_seed(int(seed))
    layers = {} if n_layers is None else {"n_layers": int(n_layers)}
    with standing_in(ns, {"tie_weights": book_tie_weights}):
        model = lookup(ns, "TinyLM")(int(vocab_size), int(d_model), **layers)
    model.eval()  # no dropout: every probe below must be deterministic
    _float32_only(model)
    return model


def _retied(model):
    """The model with ``lm_head`` given the embedding's Parameter where the student's does
    not hold it, so that forward and the gradient are judged on their own: the tie is
    TinyLM.tied's to judge.  Only a (V, d) ``nn.Linear`` head is re-tied."""
    import torch

    head, embed = model.lm_head, model.embed
    if (head.weight is not embed.weight and isinstance(head, torch.nn.Linear)
            and (head.out_features, head.in_features) == tuple(embed.weight.shape)):
        head.weight = embed.weight
    return model


def _kind(module):
    """A module's class and the sizes the exercise names, as plain values."""
    sizes = {name: getattr(module, name, None) for name in
             ("num_embeddings", "embedding_dim", "in_features", "out_features", "normalized_shape")}
    return {"type": type(module).__name__,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in sizes.items() if isinstance(v, (int, tuple))}}


@single_threaded
def tinylm_structure(ns, vocab_size, d_model, n_layers, seed, input_ids):
    """How ``TinyLM`` holds its matrix and its modules: at construction, after an SGD
    step, after ``.to``; and the names its ``state_dict`` registers."""
    import torch

    model = _tinylm(ns, vocab_size, d_model, n_layers, seed)
    e, w = model.embed.weight, model.lm_head.weight
    facts = {
        **_tie_facts(e, w),
        "embed": to_numpy(e).copy(),  # copies: the SGD step below changes the tensors in place
        "head": to_numpy(w).copy() if isinstance(w, torch.Tensor) else np.zeros((0,)),
        "head_bias": getattr(model.lm_head, "bias", None) is not None,
        "n_unique": sum(p.numel() for p in model.parameters()),
        "n_listed": sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)),
        "state_keys": [str(k) for k in model.state_dict()],
        "kinds": {name: _kind(getattr(model, name)) for name in ("embed", "ln_f", "lm_head")},
    }
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    model.zero_grad(set_to_none=True)
    out = model(ids)
    facts["forward_ids"] = [id(model.embed.weight), id(model.lm_head.weight)]  # a tie made in forward
    if not (isinstance(out, torch.Tensor) and not out.requires_grad):  # frozen: TinyLM.grad names it
        out.float().pow(2).mean().backward()
    with torch.no_grad():  # one plain SGD step, as torch.optim.SGD takes it (without importing it)
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-0.5)
    e, w = model.embed.weight, model.lm_head.weight
    facts.update(step_ids=[id(e), id(w)], step_embed=to_numpy(e).copy(), step_head=to_numpy(w).copy())
    model.to(torch.float64)
    e, w = model.embed.weight, model.lm_head.weight
    facts.update(f64_ids=[id(e), id(w)], f64_ptrs=[e.data_ptr(), w.data_ptr()])
    facts["f64_dtype"] = str(model.embed.weight.dtype)
    return facts


@single_threaded
def tinylm_forward(ns, vocab_size, d_model, n_layers, seed, input_ids):
    """The logits of the (re-tied) model, the output of ``ln_f`` that fed them, how often
    each block ran, and the matrices the logits may come from."""
    import torch

    model = _retied(_tinylm(ns, vocab_size, d_model, n_layers, seed))
    blocks = list(model.blocks) if isinstance(model.blocks, (list, tuple, torch.nn.ModuleList)) else [model.blocks]
    seen, calls = [], [0] * len(blocks)
    hooks = [model.ln_f.register_forward_hook(lambda module, args, out: seen.append(out.detach().clone()))]
    for n, block in enumerate(blocks):
        hooks.append(block.register_forward_hook(lambda module, args, out, n=n: calls.__setitem__(n, calls[n] + 1)))
    try:
        with torch.no_grad():
            logits = model(torch.as_tensor(np.asarray(input_ids), dtype=torch.long))
    finally:
        for hook in hooks:
            hook.remove()
    bias = getattr(model.lm_head, "bias", None)
    is_tensor = isinstance(logits, torch.Tensor)
    return {
        "type": type(logits).__name__,
        "dtype": str(logits.dtype) if is_tensor else "",
        "logits": _values(logits) if is_tensor else None,
        "h": to_numpy(seen[-1]) if seen else np.zeros((0,)),
        "ln_f_calls": len(seen),
        "block_calls": calls,
        "embed": to_numpy(model.embed.weight),
        "head": to_numpy(model.lm_head.weight),
        "bias": to_numpy(bias) if bias is not None else np.zeros((0,)),
    }


@single_threaded
def tinylm_grad(ns, vocab_size, d_model, n_layers, seed, input_ids, upstream):
    """The raw gradient of the matrix in the (re-tied) model, and what the grader needs
    to split it into its paths, whatever spells the head (``self.lm_head(h)``,
    ``F.linear(h, self.embed.weight)``, ``h @ self.embed.weight.T``): the ids each call
    of ``embed`` looked up with the gradient its output received (the lookup's part),
    and what ``ln_f`` handed on (the projection's part is ``upstream.T @ it``)."""
    import torch

    model = _retied(_tinylm(ns, vocab_size, d_model, n_layers, seed))
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    weights = torch.from_numpy(np.asarray(upstream, np.float32))
    looked_up, seen = [], []

    def on_embed(module, args, out):
        if isinstance(out, torch.Tensor) and out.requires_grad and args and isinstance(args[0], torch.Tensor):
            out.retain_grad()
            looked_up.append((args[0].detach().clone(), out))

    hooks = [model.embed.register_forward_hook(on_embed),
             model.ln_f.register_forward_hook(lambda module, args, out: seen.append(out.detach().clone()))]
    model.zero_grad(set_to_none=True)
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    try:
        out = model(ids)
        if len(frozen) == len(list(model.parameters())) and not (isinstance(out, torch.Tensor) and out.requires_grad):
            return {"frozen": frozen}  # nothing to walk back: every parameter was frozen
        (out.float() * weights).sum().backward()
    finally:
        for hook in hooks:
            hook.remove()
    zeros = np.zeros(tuple(model.embed.weight.shape), np.float32)
    head = model.lm_head.weight
    return {
        "frozen": frozen,
        "shared": to_numpy(model.embed.weight.grad) if model.embed.weight.grad is not None else zeros,
        "lookups": [{"ids": to_numpy(i), "grad": to_numpy(out.grad) if out.grad is not None else None}
                    for i, out in looked_up],
        "ids": [id(model.embed.weight), id(head)],
        "head_grad": None if head.grad is None else to_numpy(head.grad),
        "h": to_numpy(seen[-1]) if seen else np.zeros((0,)),
    }


@single_threaded
def tied_logits_call(ns, h, E, b, upstream, pass_b):
    """``tied_logits`` on tensors made from the grader's arrays, which require grad:
    what it returns, and the gradients a backward pass with ``upstream`` leaves on
    ``h``, ``E`` and ``b``.  ``b`` goes by keyword, and not at all unless ``pass_b``."""
    import torch

    def tensor(x):
        return None if x is None else torch.tensor(np.asarray(x, np.float32), requires_grad=True)

    inputs = {"h": tensor(h), "E": tensor(E), "b": tensor(b)}
    bias = {"b": inputs["b"]} if pass_b else {}
    out = lookup(ns, "tied_logits")(inputs["h"], inputs["E"], **bias)
    is_tensor = isinstance(out, torch.Tensor)
    facts = {"type": type(out).__name__, "is_tensor": is_tensor, "dtype": str(out.dtype) if is_tensor else "",
             "logits": _values(out) if is_tensor else None,
             "requires_grad": bool(is_tensor and out.requires_grad), "backward_error": ""}
    if facts["requires_grad"] and tuple(out.shape) == np.shape(upstream):
        try:
            out.backward(torch.as_tensor(np.asarray(upstream), dtype=out.dtype))
        except Exception as exc:  # a graph that cannot be walked back is a fact too
            facts["backward_error"] = error_text(exc)
    facts["grads"] = {name: to_numpy(x.grad) if x is not None and x.grad is not None else None
                      for name, x in inputs.items()}
    return facts

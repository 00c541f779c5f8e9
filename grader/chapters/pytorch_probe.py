"""Kernel-side probes of chapter 03 (PyTorch).  Facts only, no judging.

Every probe builds its modules from the numbers the grader sends, calls the
student's code, and returns what it finds as plain arrays, numbers and booleans.
"""


def _single_threaded(probe):
    """Run a probe on one intra-op thread, then restore the kernel's setting.

    The models are tiny, and graders run several kernels side by side: with one
    thread per kernel the probes take a tenth of the time they take oversubscribed.
    """
    import functools

    @functools.wraps(probe)
    def run(*args, **kwargs):
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return probe(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    return run


def _np(tensor):
    """A tensor (or anything array-like) as a NumPy array, detached from autograd."""
    import torch

    if isinstance(tensor, torch.Tensor):
        return tensor.detach().cpu().numpy()
    return np.asarray(tensor)


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


@_single_threaded
def tie_weights_tied(ns, embedding, head, head_bias, hidden):
    """``tie_weights`` on shapes that can be tied: what the two modules hold afterwards."""
    import torch

    vocab_size, d_model = np.shape(embedding)
    emb, lin = _modules(vocab_size, d_model, d_model, vocab_size, head_bias is not None,
                        embedding, head, head_bias)
    lookup(ns, "tie_weights")(emb, lin)
    w, e = lin.weight, emb.weight
    facts = {
        "same_object": w is e,
        "same_ptr": isinstance(w, torch.Tensor) and w.data_ptr() == e.data_ptr(),
        "head_shape": list(w.shape) if isinstance(w, torch.Tensor) else [],
        "head_stride": list(w.stride()) if isinstance(w, torch.Tensor) else [],
        "embed_stride": list(e.stride()),
        "embed": _np(e),
        "head": _np(w) if isinstance(w, torch.Tensor) else np.zeros((0,)),
        "has_bias": lin.bias is not None,
    }
    try:
        with torch.no_grad():
            facts["logits"] = _np(lin(torch.from_numpy(np.asarray(hidden, np.float32))))
        facts["forward_error"] = ""
    except Exception as exc:  # a head that cannot run is a fact, judged in the grader
        facts["logits"] = np.zeros((0,))
        facts["forward_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return facts


@_single_threaded
def tie_weights_refused(ns, vocab_size, d_model, in_features, out_features):
    """``tie_weights`` on shapes that cannot be tied: what it raised, and what it changed."""
    emb, lin = _modules(vocab_size, d_model, in_features, out_features, False, None, None, None)
    before = lin.weight
    facts = {"raised": "", "is_value_error": False, "message": "",
             "embed_shape": list(emb.weight.shape), "head_shape": list(before.shape)}
    try:
        lookup(ns, "tie_weights")(emb, lin)
    except NotImplementedError:
        raise
    except Exception as exc:  # the exception is the fact this probe collects
        facts.update(raised=type(exc).__name__, is_value_error=isinstance(exc, ValueError),
                     message=str(exc)[:300])
    facts["tied_anyway"] = lin.weight is emb.weight
    facts["head_replaced"] = lin.weight is not before
    return facts


def _tinylm(ns, vocab_size, d_model, n_layers, seed):
    import torch

    torch.manual_seed(int(seed))
    model = lookup(ns, "TinyLM")(int(vocab_size), int(d_model), int(n_layers))
    model.eval()  # no dropout: every probe below must be deterministic
    return model


@_single_threaded
def tinylm_structure(ns, vocab_size, d_model, n_layers, seed, input_ids):
    """How ``TinyLM`` holds its matrix: at construction, after an SGD step, after ``.to``."""
    import torch

    model = _tinylm(ns, vocab_size, d_model, n_layers, seed)
    e, w = model.embed.weight, model.lm_head.weight
    facts = {
        "same_object": w is e,
        "same_ptr": w.data_ptr() == e.data_ptr(),
        "embed_shape": list(e.shape),
        "head_shape": list(w.shape),
        "head_stride": list(w.stride()),
        "embed_stride": list(e.stride()),
        "values_equal": bool(w.shape == e.shape and torch.equal(w.detach(), e.detach())),
        "head_bias": getattr(model.lm_head, "bias", None) is not None,
        "n_unique": sum(p.numel() for p in model.parameters()),
        "n_listed": sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)),
    }
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    model.zero_grad(set_to_none=True)
    model(ids).float().pow(2).mean().backward()
    with torch.no_grad():  # one plain SGD step, as torch.optim.SGD takes it (without importing it)
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-0.5)
    facts["step_same_object"] = model.lm_head.weight is model.embed.weight
    facts["step_equal"] = bool(model.lm_head.weight.shape == model.embed.weight.shape
                               and torch.equal(model.lm_head.weight.detach(), model.embed.weight.detach()))
    model.to(torch.float64)
    facts["f64_same_object"] = model.lm_head.weight is model.embed.weight
    facts["f64_same_ptr"] = model.lm_head.weight.data_ptr() == model.embed.weight.data_ptr()
    facts["f64_dtype"] = str(model.embed.weight.dtype)
    return facts


@_single_threaded
def tinylm_forward(ns, vocab_size, d_model, n_layers, seed, input_ids):
    """The logits, the output of ``ln_f`` that fed them, and the matrices they may come from."""
    import torch

    model = _tinylm(ns, vocab_size, d_model, n_layers, seed)
    seen = []
    hook = model.ln_f.register_forward_hook(lambda module, args, out: seen.append(out.detach().clone()))
    try:
        with torch.no_grad():
            logits = model(torch.as_tensor(np.asarray(input_ids), dtype=torch.long))
    finally:
        hook.remove()
    bias = getattr(model.lm_head, "bias", None)
    return {
        "logits": _np(logits),
        "h": _np(seen[-1]) if seen else np.zeros((0,)),
        "ln_f_calls": len(seen),
        "embed": _np(model.embed.weight),
        "head": _np(model.lm_head.weight),
        "bias": _np(bias) if bias is not None else np.zeros((0,)),
    }


@_single_threaded
def tinylm_grad(ns, vocab_size, d_model, n_layers, seed, input_ids, upstream):
    """The matrix's gradient, and the same gradient split into its two paths.

    The split comes from a twin of the model whose head gets a Parameter of its own,
    with the same values: the twin's embedding then receives only the lookup's part,
    and its head only the projection's part.
    """
    import copy

    import torch
    from torch import nn

    model = _tinylm(ns, vocab_size, d_model, n_layers, seed)
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    weights = torch.from_numpy(np.asarray(upstream, np.float32))

    def backward(m):
        m.zero_grad(set_to_none=True)
        (m(ids).float() * weights).sum().backward()

    twin = copy.deepcopy(model)
    backward(model)
    twin.lm_head.weight = nn.Parameter(twin.embed.weight.detach().clone())
    backward(twin)
    zeros = np.zeros(tuple(model.embed.weight.shape), np.float32)

    def grad(p):
        return _np(p.grad) if p.grad is not None else zeros

    head = model.lm_head.weight
    return {
        "shared": grad(model.embed.weight),
        "lookup": grad(twin.embed.weight),
        "projection": grad(twin.lm_head.weight),
        "separate_head_grad": head is not model.embed.weight and head.grad is not None,
    }


@_single_threaded
def tied_logits_call(ns, h, E, b):
    """``tied_logits`` on tensors made from the grader's arrays."""
    import torch

    def tensor(x):
        return None if x is None else torch.from_numpy(np.asarray(x, np.float32))

    return _np(lookup(ns, "tied_logits")(tensor(h), tensor(E), tensor(b)))

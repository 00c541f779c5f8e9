"""Chapter 04's references: PyTorch in float64 (``cross_entropy``, ``layer_norm``,
``softmax`` and autograd), so that none of them is the hand-written NumPy the exercise
asks for.  (PyTorch rather than JAX: eager JAX compiles every operation for every new
shape, which made these references ten times slower.)
"""
from __future__ import annotations

import numpy as np

from grader.registry import Case

LN_EPS = 1e-5


def _torch():
    import torch

    return torch


def reference_ce(case: Case) -> np.ndarray:
    torch = _torch()
    logits, targets = case.args["args"]
    logits = torch.tensor(np.asarray(logits), dtype=torch.float64)
    targets = torch.tensor(np.asarray(targets), dtype=torch.long)
    return np.asarray(torch.nn.functional.cross_entropy(logits, targets).item())


def reference_forward(case: Case) -> np.ndarray:
    torch = _torch()
    tokens, e = case.args["args"]
    x = torch.tensor(np.asarray(e[tokens], np.float64))
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=LN_EPS).numpy() @ e.T


def reference_grads(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Autodiff of the untied loss ``CE(A[tokens] @ B.T)`` at A = B = E: the gradient
    with respect to A is the lookup path, the one with respect to B the projection path."""
    torch = _torch()
    tokens, targets, e = case.args["args"]
    a = torch.tensor(e, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(e, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(a[torch.tensor(tokens)] @ b.T, torch.tensor(targets))
    loss.backward()
    return a.grad.numpy(), b.grad.numpy()


def reference_probs(case: Case) -> np.ndarray:
    torch = _torch()
    logits, tau = case.args["logits"], float(case.args["temperature"])
    if tau == 0.0:
        return np.eye(len(logits))[int(np.argmax(logits))]
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / tau, 0).numpy()

"""Kernel-side helpers for the probes of the PyTorch chapters (03 and 07), in the
library that ``grader.probe_kernel`` bundles.  PyTorch is imported inside the
functions, as in the probes: loading a bundle imports nothing heavy."""
import numpy as np


def to_numpy(value):
    """A tensor (or anything array-like) as a NumPy array of the same dtype, detached from
    autograd; a bfloat16 tensor, which NumPy cannot hold, as float64 (its dtype travels apart)."""
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return (value.double() if value.dtype == torch.bfloat16 else value).numpy()
    return np.asarray(value)

"""Kernel-side helpers for the probes of the PyTorch chapters (03 and 07), in the
library that ``grader.pipeline.prepare.probe_bundle`` bundles.  PyTorch is imported inside the
functions, as in the probes: loading a bundle imports nothing heavy."""
import functools

import numpy as np


def to_numpy(value):
    """A tensor (or anything array-like) as a NumPy array of the same dtype, detached from
    autograd; a bfloat16 tensor, which NumPy cannot hold, as float64 (its dtype travels apart)."""
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return (value.double() if value.dtype == torch.bfloat16 else value).numpy()
    return np.asarray(value)


def single_threaded(probe):
    """Run a probe on one intra-op thread, then restore the kernel's setting.

    The models and cases are small, and graders run several kernels side by side: with one
    thread per kernel the probes take a tenth of the time they take oversubscribed.
    """
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

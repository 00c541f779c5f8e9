"""Every pitfall the chapters teach, as a wrong solution and the diagnosis it must get.

One module per chapter defines ``PITFALLS``.  ``regions`` replaces solution regions of
the chapter's solution notebook, each named by the function, method or class it sits in
(``"sample_next"``, ``"TiedIO.__call__"``): inserting a function moves no pitfall, and a
name that owns no region, or several, stops the collection; ``expect`` maps graded
items to the message key (or set of acceptable keys) the grader must name, or "pass".
Most pitfalls are judged in the test process (``tests/inprocess.py``); those with
``kernel=True`` also go through ``grader grade``, a real kernel per notebook.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, replace

from notebooks import check_region_names


@dataclass(frozen=True)
class Pitfall:
    chapter: str
    name: str
    regions: dict
    expect: dict
    kernel: bool = False

    @property
    def id(self) -> str:
        return f"{self.chapter}-{self.name}"


# The sample that also goes through a real kernel: one or two per chapter, chosen for
# what only a kernel shows (the student's line in an IPython traceback, a probe that
# imports the framework in a fresh process).
THROUGH_KERNEL = {
    "01_linen-typo", "01_linen-missing_transpose", "02_nnx-two_params_and_grad_swapped",
    "03_pytorch-clone", "04_gpt_head-total_grad+always_argmax", "05_mlm-unbiased_variance",
    "07_three_frameworks-kernel_not_transposed", "01_linen-numpy_round_trip_and_float64",
    "04_gpt_head-float_draws+autograd", "05_mlm-blocks_by_index+loop_over_heads",
}


def _collect() -> list[Pitfall]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        found += importlib.import_module(f"{__name__}.{info.name}").PITFALLS
    for p in found:
        check_region_names(p.chapter, p.regions)
    return [replace(p, kernel=p.kernel or p.id in THROUGH_KERNEL) for p in found]


PITFALLS = _collect()

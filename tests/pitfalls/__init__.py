"""Every pitfall the chapters teach, as a wrong solution and the diagnosis it must get.

One module per chapter defines ``PITFALLS``.  ``regions`` replaces solution regions of
the chapter's solution notebook (0-based, in notebook order); ``expect`` maps graded
items to the message key (or set of acceptable keys) the grader must name, or "pass".
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Pitfall:
    chapter: str
    name: str
    regions: dict
    expect: dict

    @property
    def id(self) -> str:
        return f"{self.chapter}-{self.name}"


def _collect() -> list[Pitfall]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        found += importlib.import_module(f"{__name__}.{info.name}").PITFALLS
    return found


PITFALLS = _collect()

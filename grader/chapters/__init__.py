"""One module per chapter, each declaring ``CHAPTER`` (see ``grader.registry``).

``<name>/grade.py`` runs in the grader's process (cases, references, judges);
``<name>/probe.py`` is sent as source into the student's kernel and only
gathers facts.  A chapter's folder may hold more of its grader side, each module one
kind of thing (``mlm/reference.py``, ``mlm/cases.py``), which its ``grade.py`` imports.
A module at the top, without ``CHAPTER``, holds what chapters share (``tied_matrix``:
chapters 01 and 02; ``source_checks``) or a rule any chapter may adopt (``plain_numpy``).

This package is also where the rest of the grader looks a chapter up (``chapter``,
``chapters``): the chapter modules import ``grader.registry``'s types, never the
reverse.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from grader.registry import Chapter, is_probe


@cache
def chapter_modules() -> dict[str, str]:
    """The module that declares each chapter, by chapter id: every module under
    ``grader.chapters`` with a ``CHAPTER`` (probe modules aside; the others hold what
    several chapters share)."""
    found = {}
    for info in pkgutil.walk_packages(__path__, f"{__name__}."):
        if not info.ispkg and not is_probe(info.name):
            ch = getattr(importlib.import_module(info.name), "CHAPTER", None)
            if ch is not None:
                found[ch.id] = info.name
    return dict(sorted(found.items()))


@cache
def chapters() -> dict[str, Chapter]:
    """Every chapter, by chapter id (``chapter_modules``)."""
    return {chapter_id: importlib.import_module(module).CHAPTER for chapter_id, module in chapter_modules().items()}


def chapter(chapter_id: str) -> Chapter:
    return chapters()[chapter_id]


def chapter_of_item(name: str, prefer: str | None = None) -> Chapter:
    """The chapter that grades ``name`` (an item or its target); of two that do (such as
    ``tied_io_embed``), ``prefer`` where it is one of them, else the first."""
    owners = [ch for ch in chapters().values() if any(item.name == name or item.target == name for item in ch.items)]
    if not owners:
        raise KeyError(name)
    return next((ch for ch in owners if ch.id == prefer), owners[0])

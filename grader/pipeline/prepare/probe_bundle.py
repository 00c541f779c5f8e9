"""Building the probe program: the same program runs in a kernel and in-process.

A chapter's probe module (``grader/chapters/<name>/probe.py``) is an ordinary module:
it imports what it uses by name, from the standard library, NumPy, the chapter's
framework and the kernel-side library (``LIBRARY``), and nothing else of the grader.
``bundle`` gathers the probe module and the library modules it imports (read from
their files, checked here), ``probe_source`` wraps them in ``grader/kernel/loader.py``,
which makes modules of them wherever the program runs.
"""
from __future__ import annotations

import ast
import copy
import importlib.util
import json
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import cache
from pathlib import Path

from grader.disk_cache import cases
from grader.kernel.runtime import PROBE_FILE, decode_items, encode, run_items
from grader.registry import Chapter

RUNTIME = "grader.kernel.runtime"
# The kernel-side library: what a probe module may import from the grader.  Each of
# these imports only the standard library, NumPy, a framework and each other.
LIBRARY = (RUNTIME, "grader.kernel.jax_tools", "grader.kernel.torch_tools")
LOADER = "grader.kernel.loader"


class BundleError(ValueError):
    """A probe module imports something of the grader that cannot go into the kernel."""


def _text(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BundleError(f"{module}: no such module")
    return Path(spec.origin).read_text(encoding="utf-8")


def library_imports(module: str, source: str) -> list[str]:
    """The library modules that ``source`` imports, in order; a relative import, an
    ``import grader.x`` line (the kernel would look for it on disk) or a grader module
    outside the library is refused."""
    found = []
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "grader"]
            if names:
                raise BundleError(f"{module}: write 'from {names[0]} import ...', not 'import {names[0]}'")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise BundleError(f"{module}: a relative import (line {node.lineno}); name the module in full")
            if (node.module or "").split(".")[0] != "grader":
                continue
            if node.module not in LIBRARY:
                raise BundleError(f"{module} imports {node.module}: a probe may import only {', '.join(LIBRARY)} "
                                  "of the grader")
            found.append(node.module)
    return found


@cache
def bundle(chapter_probe_module: str) -> tuple[tuple[str, str], ...]:
    """``(module, source)`` of the runtime, the library modules the chapter's probe
    module imports and the probe module itself, each after the modules it imports."""
    order: dict[str, str] = {}
    visiting: list[str] = []

    def visit(module: str) -> None:
        if module in order:
            return
        if module in visiting:
            raise BundleError(f"the library imports itself in a circle: {' -> '.join(visiting + [module])}")
        visiting.append(module)
        source = _text(module)
        for needed in library_imports(module, source):
            visit(needed)
        visiting.pop()
        order[module] = source

    visit(RUNTIME)  # the runtime runs the cases, whatever the probes import
    visit(chapter_probe_module)
    return tuple(order.items())


@cache
def probe_source(chapter_probe_module: str) -> str:
    """One self-contained program: the loader, the bundle as text, and what it defines:
    ``PROBES`` (the probes by name) and ``spec_runner`` (the kernel's entry point)."""
    return (
        f"{_text(LOADER)}\n\n"
        f"MODULES = load_modules({bundle(chapter_probe_module)!r}, {PROBE_FILE!r})\n"
        f"PROBES = probes(MODULES, {chapter_probe_module!r})\n"
        f"spec_runner = MODULES[{RUNTIME!r}].spec_runner\n"
    )


def spec_items(ch: Chapter, only: str | None = None) -> list[dict]:
    """Every item's probe and cases, encoded as they travel to the kernel."""
    return [
        {
            "name": item.name,
            "probe": item.probe,
            "cases": [{"label": c.label, "args": encode(c.args)} for c in cases(ch.id, item.name)],
        }
        for item in ch.items
        if only is None or only in (item.name, item.target)
    ]


def write_spec(ch: Chapter, spec_path: Path) -> None:
    spec_path.write_text(json.dumps({"items": spec_items(ch)}), encoding="utf-8")


@cache
def _probes(chapter_probe_module: str) -> dict:
    """The probes of a bundle, loaded once in this process."""
    program: dict = {"__name__": "_tied_probe"}
    exec(compile(probe_source(chapter_probe_module), PROBE_FILE, "exec"), program)
    return program["PROBES"]


@cache
def _items(ch: Chapter, only: str | None) -> list[dict]:
    """The items' cases as the kernel decodes them, decoded once in this process."""
    return decode_items(spec_items(ch, only))


def run_in_process(ch: Chapter, namespace: dict, only: str | None = None,
                   guard: Callable[[str], AbstractContextManager] = lambda name: nullcontext(),
                   skip: frozenset[str] = frozenset()) -> dict[str, list]:
    """The probes over ``namespace`` in this process (the in-notebook check), each
    item inside ``guard(item's name)`` (``check()`` puts a time limit there), but for the
    items named in ``skip`` (their verdict is known: ``check()``'s remembered timeouts).  Each run
    gets its own copy of the cases' arrays, as a kernel does: a function that writes into
    its input changes no later case."""
    facts: dict[str, list] = {}
    probes = _probes(ch.probe_module)
    for item in copy.deepcopy([i for i in _items(ch, only) if i["name"] not in skip]):
        with guard(item["name"]):
            run_items([item], probes, namespace,
                      lambda name, found: facts.__setitem__(name, json.loads(json.dumps(found))))
    return facts

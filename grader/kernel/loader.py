"""Kernel-side: make modules of a probe bundle (built by ``grader.pipeline.prepare.probe_bundle``).

The grader sends this file's source, followed by the bundle (the kernel-side library
and the chapter's probe module, as text), into the student's kernel.  Each module of
the bundle is made from its text and kept here, never in ``sys.modules`` and never
read from a file: a ``from grader.kernel.runtime import lookup`` line in a probe takes
the bundle's own module, whatever the notebook put in ``sys.modules`` or on disk.
Every other import (the standard library, NumPy, the chapter's framework) is Python's.

The in-notebook ``check()`` runs the same program in its own process.
"""
import builtins
import sys
import types


def load_modules(sources, filename):
    """The modules made of ``sources``, ``(name, text)`` pairs each after the library
    modules it imports, by name; ``filename`` names their code in tracebacks.  Compiled
    and run with the ``compile`` and ``exec`` that the worker's prelude kept before the
    student's first cell, where there is one."""
    saved = sys.modules.get("_tied_saved")
    compile_, exec_ = (saved.compile, saved.exec) if saved else (compile, exec)
    own = globals().get("__builtins__", builtins)  # in a kernel, the built-ins the prelude kept
    names = dict(vars(own) if isinstance(own, types.ModuleType) else own)
    python_import = names["__import__"]
    modules = {}

    def bundle_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and fromlist and name in modules:
            return modules[name]
        return python_import(name, globals, locals, fromlist, level)

    names["__import__"] = bundle_import
    for name, source in sources:
        module = types.ModuleType(name)
        module.__builtins__ = names
        exec_(compile_(source, filename, "exec"), vars(module))
        modules[name] = module
    return modules


def probes(modules, chapter_module):
    """The probes an item may name: the runtime's generic ones and the chapter module's functions."""
    found = dict(modules["grader.kernel.runtime"].PROBES)
    found.update((name, value) for name, value in vars(modules[chapter_module]).items()
                 if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == chapter_module)
    return found

"""What grading one chapter needs installed, and nothing more (a platform's image).

The book's own tools (jupyter-book, transformers, ruff, mypy, hypothesis) are not
needed to grade.  Grading runs nbval and a kernel, and the chapter's frameworks: those
its solution notebook, its chapter module (the references) and its probes import.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

# Every chapter: the worker (nbval, pytest, a kernel), the grader's process (psutil,
# nbformat and its schema check, Babel for the numbers in Spanish and Korean messages)
# and NumPy.
BASE = ("nbval", "pytest", "nbformat", "ipykernel", "jupyter_client", "psutil", "numpy", "jsonschema<4.25", "babel")
# A framework module -> its distributions (torch comes from PyTorch's CPU wheel index).
FRAMEWORKS = {"jax": ("jax", "jaxlib"), "flax": ("flax",), "torch": ("torch",), "safetensors": ("safetensors",)}


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def chapter_frameworks(chapter: str, source: Path) -> list[str]:
    """The frameworks grading ``chapter`` imports (``FRAMEWORKS``' keys, sorted): its
    chapter module's, its probe module's and its solution notebook's."""
    from grader.chapters import chapter as get
    from grader.chapters import chapter_modules

    found: set[str] = set()
    for module in (get(chapter).probe_module, chapter_modules()[chapter]):
        found |= _imports((source / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    notebook = json.loads((source / "solutions" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            try:
                found |= _imports("".join(cell["source"]))
            except SyntaxError:  # a cell of IPython magics
                pass
    return sorted(found & set(FRAMEWORKS))


def requirements(chapter: str, source: Path) -> tuple[list[str], list[str]]:
    """(distributions from PyPI, distributions from PyTorch's CPU index) for ``chapter``."""
    frameworks = chapter_frameworks(chapter, source)
    pypi = [*BASE, *(d for f in frameworks if f != "torch" for d in FRAMEWORKS[f])]
    return pypi, ["torch"] if "torch" in frameworks else []

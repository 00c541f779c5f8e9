"""The package's shape: no module of ``grader`` imports itself back through others.

An import circle hides which module is the lower layer (``result`` and ``selfcheck``
once imported each other, through an import inside a function).  Every import counts,
at the top of a module or inside a function, except those under ``if TYPE_CHECKING:``,
which are annotations only and never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

from grader.registry import is_probe

PACKAGE = Path(__file__).resolve().parent.parent / "grader"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that ``name`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if type_checking_only(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:  # ``from . import judge`` imports the module grader.pipeline.judge.items
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle, as the modules along it, or ``[]``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_cycle_finder_finds_a_circle_and_only_a_circle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_relative_absolute_and_function_level_imports():
    edges = graph()
    assert "grader.registry" in edges["grader.pipeline.judge.items"]  # ``from .registry import ...``
    assert "grader.kernel.runtime" in edges["grader.chapters.linen.probe"]  # absolute
    assert "grader.selfcheck.check" in edges["grader"]  # inside ``check``


def test_no_import_circle_in_the_grader():
    found = cycle(graph())
    assert not found, "import circle: " + " -> ".join(found)


def reached(edges: dict[str, set[str]], start: set[str]) -> set[str]:
    """The modules that ``start`` imports, directly or through others."""
    found, stack = set(), list(start)
    while stack:
        for nxt in edges[stack.pop()] - found:
            found.add(nxt)
            stack.append(nxt)
    return found


def test_a_chapter_module_without_a_chapter_is_shared_or_part_of_one():
    """``registry.chapters`` skips a module that declares no ``CHAPTER``: that is
    right only for a module that chapter modules import, directly or through another.
    One at the top of ``grader/chapters/`` holds what chapters share, or a rule any
    chapter may adopt (``plain_numpy``); one in a chapter's folder (``mlm/reference.py``)
    is a part of that chapter, which its ``grade.py`` imports."""
    edges = graph()
    declared = {name for name, path in modules().items() if name.startswith("grader.chapters.")
                and not is_probe(name) and "CHAPTER =" in path.read_text(encoding="utf-8")}
    for name, path in modules().items():
        if (name.startswith("grader.chapters.") and path.name != "__init__.py" and not is_probe(name)
                and name not in declared):
            folder = name.rpartition(".")[0]
            users = declared if folder == "grader.chapters" else {f"{folder}.grade"}
            assert name in reached(edges, users), f"{name}: no CHAPTER, and no chapter imports it"

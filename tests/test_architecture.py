"""The package's shape: layers that import downwards only, and no import circle.

The grader is layered, lowest first (``LAYERS``): the kernel side, which runs in the
student's kernel and imports nothing else of the grader; the core types and helpers;
the chapters; the reference cache; the pipeline's steps (prepare, supervise, judge) and
the runner; the outputs; the in-notebook ``check()``; the entry points.  A module
imports modules of its own part and of lower layers, never of a higher one nor of
another part of its own layer, so no two parts can import each other.  An import
circle hides which module is the lower layer (``result`` and ``selfcheck`` once
imported each other, through an import inside a function).  Every import counts, at
the top of a module or inside a function, except those under ``if TYPE_CHECKING:``,
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
    return set(imports_at(name, path, known))


def imports_at(name: str, path: Path, known: set[str]) -> dict[str, int]:
    """The modules of the package that ``name`` imports, each with the line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if type_checking_only(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:  # ``from grader import chapters`` imports the module grader.chapters
                names.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        for module in names:
            if module in known and module != name:
                line = getattr(node, "lineno", 0)
                found[module] = min(found.get(module, line), line)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def graph_at() -> dict[str, dict[str, int]]:
    """``graph``, each import with its line."""
    found = modules()
    return {name: imports_at(name, path, set(found)) for name, path in found.items()}


# The parts of the grader, by layer, lowest first.  A part is a package (with everything
# under it) or, for ``core`` and the entry points, a list of modules.
LAYERS: tuple[dict[str, tuple[str, ...]], ...] = (
    {"kernel": ("grader.kernel",)},  # runs in the student's kernel
    {"core": ("grader.outcome", "grader.registry", "grader.comparisons", "grader.drawing", "grader.atomic",
              "grader.stopping", "grader.i18n", "grader.result", "grader.cells", "grader.expected_outputs")},
    {"chapters": ("grader.chapters",)},
    {"reference cache": ("grader.disk_cache",)},
    {"prepare": ("grader.pipeline.prepare",)},
    {"supervise": ("grader.pipeline.supervise",)},
    {"judge": ("grader.pipeline.judge",)},
    {"pipeline": ("grader.pipeline",)},  # the runner, the submission, the batch
    {"outputs": ("grader.outputs",), "authoring": ("grader.authoring",)},
    {"selfcheck": ("grader.selfcheck",)},
    {"entry points": ("grader", "grader.cli", "grader.__main__")},
)


def part_of(module: str, packages: set[str]) -> tuple[int, str] | None:
    """The layer and the part that ``module`` belongs to: the longest package of a part
    that holds it, else the part that lists it; None when no part does."""
    best: tuple[int, int, str] | None = None
    for level, layer in enumerate(LAYERS):
        for part, names in layer.items():
            for name in names:
                holds = module == name or (name in packages and name != "grader" and module.startswith(name + "."))
                if holds and (best is None or len(name) > best[0]):
                    best = (len(name), level, part)
    return None if best is None else best[1:]


def against_layers(edges: dict[str, dict[str, int]], packages: set[str],
                   files: dict[str, Path]) -> list[str]:
    """Each import that goes up a layer or across to another part of its own layer,
    as ``file:line: module imports module (part -> part)``."""
    found = []
    for name, targets in sorted(edges.items()):
        source = part_of(name, packages)
        for target, line in sorted(targets.items()):
            goal = part_of(target, packages)
            if source is None or goal is None or goal[1] == source[1] or goal[0] < source[0]:
                continue
            where = files[name].relative_to(PACKAGE.parent) if name in files else name
            found.append(f"{where}:{line}: {name} imports {target} ({source[1]} -> {goal[1]}, a layer "
                         f"{'above' if goal[0] > source[0] else 'beside'})")
    return found


def packages() -> set[str]:
    return {name for name, path in modules().items() if path.name == "__init__.py"}


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


def test_every_module_is_in_a_layer():
    unplaced = [name for name in modules() if part_of(name, packages()) is None]
    assert not unplaced, f"add these to a part of LAYERS in {Path(__file__).name}: {unplaced}"


def test_the_layer_check_finds_an_import_upwards_and_across():
    files = {"grader.registry": PACKAGE / "registry.py"}
    kinds = {"grader.chapters", "grader.outputs", "grader.authoring", "grader.pipeline"}
    assert against_layers({"grader.registry": {"grader.chapters": 12}}, kinds, files) == [
        "grader/registry.py:12: grader.registry imports grader.chapters (core -> chapters, a layer above)"]
    assert against_layers({"grader.outputs.x": {"grader.authoring.y": 3}}, kinds, {}) == [
        "grader.outputs.x:3: grader.outputs.x imports grader.authoring.y (outputs -> authoring, a layer beside)"]
    assert against_layers({"grader.chapters.a": {"grader.registry": 1, "grader.chapters.b": 2},
                           "grader.pipeline.runner": {"grader.pipeline.batch": 4}}, kinds, files) == []


def test_every_import_goes_down_the_layers():
    found = against_layers(graph_at(), packages(), modules())
    assert not found, "imports against the layers (LAYERS in tests/test_architecture.py):\n" + "\n".join(found)


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
    """``grader.chapters.chapters`` skips a module that declares no ``CHAPTER``: that is
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

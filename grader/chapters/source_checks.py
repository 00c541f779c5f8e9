"""Grader-side checks of a student's source text: the constructs an exercise forbids.

A probe sends, raw, the source of the student's function and of the notebook's own
functions it calls, with what each global name they use is bound to (see
``code_facts`` in the probes).  Here that text is parsed with ``ast`` and every
forbidden construct is named with its line: a Python loop where the exercise asks for
whole-tensor operations, a forbidden built-in under any spelling (``F.gelu``,
``torch.ops.aten.gelu``, ``getattr(torch.ops.aten, "gelu")``, a name bound to it by
``from torch.nn.functional import gelu as g``), a framework where plain NumPy is asked.

What no source shows (a built-in reached through a string built at run time, a loop in
code that ``inspect`` cannot read) is left to the runtime record of the operations the
call dispatched, which the chapters check too.
"""
from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from functools import lru_cache

LOOPS = {
    ast.For: "for", ast.AsyncFor: "for", ast.While: "while", ast.ListComp: "comprehension",
    ast.SetComp: "comprehension", ast.DictComp: "comprehension", ast.GeneratorExp: "comprehension",
}
# Functions that loop for their caller (``map(f, rows)``, ``functools.reduce``,
# ``itertools.starmap``), by the name they are called with, through any module.
LOOP_FUNCTIONS = {"map", "filter", "reduce", "starmap", "accumulate", "filterfalse", "takewhile", "dropwhile",
                  "compress", "islice", "chain", "product", "zip_longest", "groupby", "tee", "cycle", "repeat"}


@dataclass(frozen=True)
class Construct:
    """One forbidden construct: what it is, and where (``function:line``, 1 = the def line)."""

    what: str
    function: str
    line: int
    text: str

    @property
    def where(self) -> str:
        """The student's line as ``ui.your_line`` shows it, in no language: ``fn:3: text``."""
        return f"{self.function}:{self.line}: {self.text}"


@lru_cache(maxsize=256)
def parse(source) -> ast.Module | None:
    """The syntax tree of a function's source (indented or not), or None."""
    if not isinstance(source, str):
        return None
    try:
        return ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the text comes from the student's kernel
        return None


MAX_LINE = 160  # characters of a quoted line


def _line(source: str, node: ast.AST) -> tuple[int, str]:
    lines = textwrap.dedent(source).splitlines()
    n = getattr(node, "lineno", 1)
    text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
    return n, (text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _called_name(node: ast.AST) -> str:
    """The name a call is made with: ``reduce`` for ``functools.reduce(...)``, else ``""``."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _loop_kind(node: ast.AST, recursive: set[str]) -> str | None:
    """What loop ``node`` is (``for``, ``comprehension``, ``map``, ``recursion``…), or None."""
    if type(node) in LOOPS:
        return LOOPS[type(node)]
    name = _called_name(node)
    if name in LOOP_FUNCTIONS:
        return name
    return "recursion" if name and name in recursive else None


def _iterables(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.iter]
    if isinstance(node, ast.While):
        return [node.test]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return [gen.iter for gen in node.generators]
    assert isinstance(node, ast.Call)  # map(f, rows), reduce(f, rows), a recursive call
    return list(node.args[1:] if _called_name(node) in LOOP_FUNCTIONS and len(node.args) > 1 else node.args)


def _recursive(tree: ast.AST) -> set[str]:
    """The functions of ``tree`` that call themselves."""
    return {fn.name for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(_called_name(n) == fn.name for n in ast.walk(fn) if n is not fn)}


def _fixed_collection(expr: ast.AST) -> bool:
    """A literal handful (``(w_q, w_k, w_v)``), or zip/enumerate/reversed of such: a loop
    over a few named things, never over heads, positions or a tensor's rows."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return True
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
            and expr.func.id in ("zip", "enumerate", "reversed") and bool(expr.args)
            and all(_fixed_collection(a) for a in expr.args))


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target]
    return []


def _value(node: ast.AST) -> ast.AST | None:
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return node.iter
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return node.value
    return None


def derived(tree: ast.AST, seeds: set[str]) -> set[str]:
    """``seeds`` and every name assigned from an expression that mentions one of them
    (``count = blocks_weights.shape[0]``), not through a loop's variable: what a loop
    over the blocks computes (``x``, then the logits) is not the blocks."""
    found = set(seeds)
    while True:
        more = set(found)
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                continue
            value = _value(node)
            if value is not None and _names(value) & more:
                for target in _targets(node):
                    more |= _names(target)
        if more == found:
            return found
        found = more


def loops(source, function: str, allowed: frozenset[str] | set[str] = frozenset()) -> list[Construct]:
    """Every Python loop in ``source`` (``for``, ``while``, a comprehension, ``map``,
    ``filter``, ``functools.reduce``, ``itertools``, a function calling itself), except
    loops over a fixed handful of things and loops whose iterable (or condition)
    mentions a name derived from ``allowed`` (the blocks, in a forward pass that loops
    over them).  The chapters judge loops by their cost; this names the line."""
    tree = parse(source)
    if tree is None:
        return []
    ok = derived(tree, set(allowed)) if allowed else set()
    recursive = _recursive(tree)
    found = []
    for node in ast.walk(tree):
        kind = _loop_kind(node, recursive)
        if kind is None:
            continue
        iters = _iterables(node)
        if iters and all(_fixed_collection(it) or _names(it) & ok for it in iters):
            continue
        line, text = _line(source, node)
        found.append(Construct(kind, function, line, text))
    return sorted(found, key=lambda c: c.line)


def _dotted(node: ast.AST) -> str:
    """``torch.nn.functional.gelu`` for that attribute chain (``?`` for a call or subscript)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def forbidden_uses(source, function: str, forbidden: dict[str, str],
                   bound: dict[str, str] | None = None) -> list[Construct]:
    """Uses of a forbidden built-in in ``source``: an attribute whose name is a key of
    ``forbidden`` (whatever the module it is reached through), ``getattr(obj, "<name>")``,
    an import of it, or a global name that ``bound`` says is bound to one.

    ``forbidden`` maps a name (``gelu``) to what the chapter calls it (a message key);
    ``bound`` maps a global name to the forbidden name it is bound to.  Each
    construct's ``what`` is ``<what the chapter calls it>|<spelling in the source>``.
    """
    tree = parse(source)
    if tree is None:
        return []
    bound = bound or {}
    found: dict[tuple[int, str], Construct] = {}

    def add(node, kind, spelling):
        line, text = _line(source, node)
        found.setdefault((line, kind), Construct(f"{kind}|{spelling}", function, line, text))

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in forbidden:
            add(node, forbidden[node.attr], _dotted(node))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in forbidden):
            add(node, forbidden[node.args[1].value], f"getattr(…, {node.args[1].value!r})")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in forbidden:
                    add(node, forbidden[alias.name], f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Name) and node.id in bound:
            add(node, forbidden[bound[node.id]], f"{node.id} = {bound[node.id]}")
    return sorted(found.values(), key=lambda c: c.line)


def module_uses(source, function: str, roots: set[str], bound: dict[str, str] | None = None) -> list[Construct]:
    """Imports of a module under ``roots`` (``torch``, ``scipy.special``) in ``source``,
    and uses of the global names that ``bound`` ties to such a module; ``what`` is the
    module's name."""
    tree = parse(source)
    if tree is None:
        return []
    bound = bound or {}
    found: dict[int, Construct] = {}

    def add(node, module):
        line, text = _line(source, node)
        found.setdefault(line, Construct(module, function, line, text))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in roots:
                    add(node, alias.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in roots:
            add(node, node.module)
        elif isinstance(node, ast.Name) and node.id in bound:
            add(node, bound[node.id])
    return sorted(found.values(), key=lambda c: c.line)


def calls_with(source, callee_params: dict[str, list[str]], names: set[str]) -> dict[str, set[str]]:
    """For each function of ``callee_params`` (name -> parameter names) that ``source``
    calls with an argument mentioning ``names`` (or a name derived from them), the
    parameters that receive such an argument."""
    tree = parse(source)
    if tree is None or not names:
        return {}
    names = derived(tree, names)
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callee_params:
            params = callee_params[node.func.id]
            for i, arg in enumerate(node.args):
                if i < len(params) and _names(arg) & names:
                    found.setdefault(node.func.id, set()).add(params[i])
            for kw in node.keywords:
                if kw.arg in params and _names(kw.value) & names:
                    found.setdefault(node.func.id, set()).add(kw.arg)
    return found


def defined_functions(source) -> dict[str, list[str]]:
    """Every function defined in ``source`` (the outer one and those nested in it), with
    its positional parameters."""
    tree = parse(source)
    if tree is None:
        return {}
    return {n.name: [a.arg for a in n.args.posonlyargs + n.args.args] for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def parameters(source) -> list[str]:
    """The positional parameters of the function defined first in ``source``."""
    tree = parse(source)
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None) if tree else None
    return [a.arg for a in fn.args.posonlyargs + fn.args.args] if fn else []

"""A cell that does not compile, or that raised before binding a name, named in the
verdicts of what it defines.

A notebook whose cell does not compile stops there in ``grader check``'s kernel, and
every item that cell defines would read "define it"; so would every item whose name
(a class, or an import it uses) comes from a cell that raised on the way.  These
verdicts name the cell instead (its syntax error; or that it raised, the notebook's
first error being the cause), for ``grader check`` (``with_broken_cells``, on the
verdicts of the whole notebook) and for the in-notebook ``check()``
(``grader.selfcheck.kernel_notebook``, on the names the kernel lacks).
"""
from __future__ import annotations

import ast
import codeop
import re

from grader import expected_outputs as eo
from grader.cells import code_cells
from grader.cells import named as named_cell
from grader.outcome import NOTEBOOK_ITEM, Finding, Verdict

UNDEFINED = re.compile(r"name '([^']+)' is not defined")
RERUN_FILE = "<cell-rerun>"  # a notebook cell to where_raised (grader.kernel.runtime.CELL_FILE)


def defines(source: str, name: str) -> bool:
    """Does a cell's code bind ``name`` at its top level (class, def, assignment)?"""
    word = re.escape(name)
    return re.search(rf"^(?:class|def)\s+{word}\b|^{word}\s*(?::[^=\n]*)?=(?!=)", source, re.MULTILINE) is not None


def bound_names(source: str) -> list[tuple[str, str, str]]:
    """What a cell's top level binds, in order: (name, the module an import takes it
    from or "", the statement's line). Only statements that always run: a name bound
    in an ``if`` or a ``try`` may be missing for good reasons."""
    try:
        tree = ast.parse(python_source(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in tree.body:
        line = (ast.get_source_segment(python_source(source), node) or "").split("\n", 1)[0]
        if isinstance(node, ast.Import):
            found += [((a.asname or a.name.split(".")[0]), a.name, line) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(a.asname or a.name, node.module, line) for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, "", line))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(t.id, "", line) for t in targets if isinstance(t, ast.Name)]
    return found


def binding_cell(name: str, cells: list) -> int | None:
    """The code cell (numbered from 1) whose top level binds ``name``, or None (no cell,
    or several: which one the kernel ran last is not known here)."""
    code = [c for c in cells if c.get("cell_type") == "code"]
    found = [n for n, c in enumerate(code, 1) if any(b[0] == name for b in bound_names(eo.source_text(c)))]
    return found[0] if len(found) == 1 else None


def python_source(source: str) -> str:
    """A cell's code as IPython runs it (``%magic`` and ``!shell`` lines made Python)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    return TransformerManager().transform_cell(source)


def syntax_errors(cells: list) -> dict[int, dict]:
    """The code cells (numbered from 1) that do not compile, each with the error record
    IPython's traceback gives ``grader check``: its type and message, no line.  They
    are compiled as IPython compiles a cell (``codeop``'s flags: an unclosed bracket at
    the end is "incomplete input"), top-level ``await`` allowed."""
    errors = {}
    code = [c for c in cells if c.get("cell_type") == "code"]
    flags = codeop.Compile().flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
    for number, cell in enumerate(code, 1):
        try:
            compile(python_source(eo.source_text(cell)), RERUN_FILE, "exec", flags)
        except SyntaxError as exc:
            errors[number] = {"type": type(exc).__name__, "message": str(exc.msg), "line": ""}
        except ValueError:  # a null byte: the kernel's own message will say
            continue
    return errors


def undefined_name(finding: Finding | None) -> str | None:
    """The name a 'not found' finding (or a NameError, in a cell or in the item's call)
    is about, or None."""
    if finding is None or finding.key not in ("common.missing", "common.missing_close", "common.cell_error",
                                              "common.exception"):
        return None
    found = UNDEFINED.search(str(finding.params.get("message", "")))
    if not found or not (finding.key in ("common.missing", "common.missing_close")
                         or finding.params.get("type") == "NameError"):
        return None
    return found.group(1)


def in_failed_cell(name: str, cells: list) -> Finding | None:
    """``name`` is bound by a cell of the notebook that ran but raised before binding it
    (the kernel lacks it): the finding naming that cell, after the notebook's first error,
    which is the cause. Not for a name the notebook binds nowhere (the item's "define it")."""
    number = binding_cell(name, cells)
    if number is None:
        return None
    return named_cell(Finding("common.defined_in_failed_cell", {"name": name, "cell": number}), code_cells(cells))


def in_broken_cell(name: str, cells: list) -> Finding | None:
    """``name`` is defined by a cell that does not compile: the finding naming that cell."""
    code = [c for c in cells if c.get("cell_type") == "code"]
    for number, error in syntax_errors(cells).items():
        if defines(eo.source_text(code[number - 1]), name):
            return named_cell(Finding("common.does_not_compile", {"name": name, **error, "line": "",
                                                                  "cell": number}), code_cells(cells))
    return None


def with_broken_cells(verdicts: list[Verdict], cells: list) -> list[Verdict]:
    """``grader check``'s verdicts, each item whose name is in a cell that does not
    compile, or in one that raised before defining it (``grader check`` runs every
    cell), saying so (as ``check()`` does) rather than 'define it'."""
    out = []
    for v in verdicts:
        name = undefined_name(v.finding) if v.item != NOTEBOOK_ITEM else None
        finding = (in_broken_cell(name, cells) or in_failed_cell(name, cells)) if name else None
        out.append(v if finding is None else Verdict(v.item, 0, v.max_points, v.status, finding))
    return out

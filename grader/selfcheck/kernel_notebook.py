"""The ``notebook`` item and the names not run yet, inside the student's kernel (``check()``).

``grader check`` runs the notebook from the top in a fresh kernel: its ``notebook``
item fails at the first cell that raises, or at the first worked example that prints
something other than the solution did (nbval's comparison, with its sanitizers).
``check()`` cannot run every cell again (that would redo the student's work, and
what a cell changes stays changed), nor read what the page shows.  So it runs each
worked example again, in a copy of the kernel's namespace, and compares what it
prints now in the same way; a cell that raises elsewhere shows in the items of what
it defines.  The worked examples are taken from the notebook file the kernel serves
(JupyterLab names it in ``__session__``), as last saved, or else from the exercise.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import linecache
import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from grader import expected_outputs as eo
from grader.cells import code_cells, first_line
from grader.cells import named as named_cell
from grader.kernel.runtime import error_fact
from grader.outcome import NOTEBOOK_ITEM, TIMEOUT, Finding, Verdict
from grader.pipeline.judge.broken_cells import (
    RERUN_FILE,
    binding_cell,
    defines,
    in_broken_cell,
    in_failed_cell,
    python_source,
    syntax_errors,
    undefined_name,
)
from grader.pipeline.judge.notebook import notebook_item_verdict
from grader.pipeline.submission import BadSubmission, read_bytes
from grader.selfcheck.kernel_runs import INTERRUPTED, failed_runs

TIMED_OUT = "CheckTimedOut"  # the type of what check()'s time limit raises
# A cell stopped by hand in this kernel, and one whose outcome it cannot see: their findings.
SEEN_IN_KERNEL = {INTERRUPTED: (TIMEOUT, "common.cell_interrupted")}


def session_notebook(namespace: dict) -> tuple[Path, dict] | None:
    """The notebook this kernel serves (its path and content, as last saved), or None."""
    session = namespace.get("__session__")
    if not isinstance(session, str) or not session.endswith(".ipynb"):
        return None
    for path in (Path(session), Path(Path(session).name)):  # from the server's root, or beside the kernel
        try:
            content = json.loads(read_bytes(path).decode("utf-8"))
        except (BadSubmission, ValueError, AttributeError, RecursionError):
            continue
        if isinstance(content, dict):
            return path, content
    return None


def notebook_cells(namespace: dict) -> list | None:
    """The cells of the notebook this kernel serves, as last saved, or None."""
    cells = (session_notebook(namespace) or (None, {}))[1].get("cells")
    if isinstance(cells, list) and all(isinstance(c, dict) for c in cells):
        return cells
    return None


def notebook_chapter(namespace: dict) -> tuple[str, str] | None:
    """The chapter this kernel's notebook is an exercise of (``metadata.tied.chapter``),
    with the notebook's file name, or None."""
    found = session_notebook(namespace)
    tied = found[1].get("metadata", {}).get("tied", {}) if found else None
    chapter = tied.get("chapter") if isinstance(tied, dict) else None
    return (chapter, found[0].name) if isinstance(chapter, str) and found else None


def not_run_yet(name: str, namespace: dict, cells: list | None) -> bool:
    """Is ``name`` defined in the notebook but by no cell run in this kernel?  Without
    the notebook file, the exercise is taken to define it (each stub does)."""
    if name in namespace:
        return False
    history = namespace.get("_ih")
    if any(defines(str(source), name) for source in (history if isinstance(history, list) else [])):
        return False  # its cell ran and raised: the item's own message says why
    return cells is None or any(
        c.get("cell_type") == "code" and defines(eo.source_text(c), name) for c in cells)


def _tree(source: str) -> str | None:
    """A cell's code as Python parses it (formatting and comments aside), or None."""
    try:
        return ast.dump(ast.parse(python_source(source)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def changed_cell(name: str, namespace: dict, cells: list | None) -> Finding | None:
    """``name``'s cell as saved differs from the code that last defined it in this kernel
    (``_ih``, the sources it ran): the verdicts would be on code no longer there, so the
    finding says to run the cell again.  Comments and formatting are no change; a cell
    that does not compile is another finding's."""
    history = namespace.get("_ih")
    if not cells or not isinstance(history, list) or name not in namespace:
        return None
    ran = next((str(s) for s in reversed(history) if defines(str(s), name)), None)
    code = [c for c in cells if c.get("cell_type") == "code"]
    at = [n for n, c in enumerate(code, 1) if defines(eo.source_text(c), name)]
    if ran is None or len(at) != 1:
        return None
    now, then = _tree(eo.source_text(code[at[0] - 1])), _tree(ran)
    if now is None or then is None or now == then:
        return None
    return named_cell(Finding("common.cell_changed", {"name": name, "cell": at[0]}), code_cells(cells))


def ran_here(source: str, namespace: dict) -> bool:
    """Has this kernel run a cell with this code (``_ih``, as IPython ran it)?"""
    history = namespace.get("_ih")
    code = python_source(source).strip()
    return isinstance(history, list) and any(str(s).strip() == code for s in history)


def in_kernel_frame(finding: Finding | None, namespace: dict, cells: list | None) -> Finding | None:
    """A name the kernel lacks because its cell has not run here says so, not 'define it';
    one whose cell does not compile names that cell, and one whose cell ran but raised
    before binding it names that cell (the cause is the notebook's first error)."""
    name = undefined_name(finding)
    if name is None:
        return finding
    broken = in_broken_cell(name, cells or [])
    if broken is not None:
        return broken
    if not_run_yet(name, namespace, cells):
        return Finding("common.not_run_yet", {"name": name})
    number = binding_cell(name, cells or []) if name not in namespace else None
    if number is not None:
        code = [c for c in cells or [] if c.get("cell_type") == "code"]
        if not ran_here(eo.source_text(code[number - 1]), namespace):
            return Finding("common.not_run_yet", {"name": name})
        return in_failed_cell(name, cells or [])
    return finding


def run_example(source: str, namespace: dict) -> tuple[str, dict[str, str] | None]:
    """What a worked example prints when run again (in a copy of ``namespace``), and
    the error it raised, as the worker records one."""
    source = python_source(source)
    printed = io.StringIO()
    scope = dict(namespace)
    linecache.cache[RERUN_FILE] = (len(source), None, source.splitlines(True), RERUN_FILE)  # the line, quoted
    try:
        tree = ast.parse(source, RERUN_FILE)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        with contextlib.redirect_stdout(printed):
            exec(compile(tree, RERUN_FILE, "exec"), scope)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), RERUN_FILE, "eval"), scope)
                if value is not None:
                    printed.write(repr(value) + "\n")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        error = error_fact(exc)["error"]
        error.pop("origin", None)
        return printed.getvalue(), error
    return printed.getvalue(), None


def sanitize(text: str) -> str:
    from nbval.plugin import get_sanitize_patterns

    for regex, replace in get_sanitize_patterns(eo.SANITIZERS.read_text(encoding="utf-8")):
        text = re.sub(regex, replace, text)
    return text


def compared(printed: str, expected: str, cell: int) -> dict | None:
    """The worker's record of a worked example that prints something else, or None."""
    printed, expected = sanitize(printed), sanitize(expected)
    if printed.rstrip("\n") == expected.rstrip("\n"):
        return None
    shown_printed, shown_expected = eo.first_difference(printed, expected)
    return {"type": eo.MISMATCH if printed.strip() else eo.NOTHING_PRINTED, "message": "", "line": "",
            "cell": cell, "printed": shown_printed, "expected": shown_expected}


def exercise_cells(examples: list[dict]) -> list[dict]:
    """Stand-ins for the notebook's cells when its file cannot be read: each worked
    example at its place in the exercise, after as many code cells as there are."""
    cells: list[dict] = []
    code = 0
    for example in examples:
        while code < example["cell"] - 1:
            cells.append({"cell_type": "code", "source": ""})
            code += 1
        while len(cells) < example.get("position", 0) - 1:
            cells.append({"cell_type": "markdown", "source": ""})
        cells.append({"cell_type": "code", "source": example["source"], "metadata": {"tags": [eo.MARKER_TAG]}})
        code += 1
    return cells


def notebook_item(chapter_id: str, namespace: dict, cells: list | None,
                  guard: Callable[[], AbstractContextManager] = nullcontext, seconds: float = 0) -> Verdict:
    """The ``notebook`` verdict as ``grader check`` would give it, from what this kernel
    holds now (see the module's docstring).  Each example runs inside ``guard()``,
    which stops it after ``seconds`` with ``TIMED_OUT``."""
    examples = eo.for_chapter(chapter_id)["worked_examples"]
    seen = exercise_cells(examples) if cells is None else cells
    code = [c for c in seen if c.get("cell_type") == "code"]
    checked = [n for n, c in enumerate(code) if eo.is_checked(c)]
    sources = [eo.source_text(code[n]) for n in checked]
    named = code_cells(seen)
    records: list[dict] = []
    missing: list[dict] = []
    for example, paired in zip(examples, eo.align([e["source"] for e in examples], sources)):
        expected = eo.output_text(example["outputs"])
        if paired is None:
            missing.append({"cell": example["cell"] - 1, "passed": False,
                            "error": {"type": eo.MISSING, "message": "", "line": "",
                                      "cell": example.get("position", example["cell"]),
                                      "first_line": first_line(example["source"]),
                                      "expected": eo.excerpt(expected.rstrip("\n").replace("\n", eo.NEWLINE))}})
            continue
        cell = checked[paired]
        printed = ""
        error: dict | None = {"type": TIMED_OUT, "message": "", "line": ""}  # if the limit hits on the way out
        with guard():
            printed, error = run_example(sources[paired], namespace)
        if error is not None and error["type"] == TIMED_OUT:
            stuck = Finding("common.timeout_in_cell", {"cell": cell + 1, "seconds": f"{seconds:g}",
                                                        "line": error["line"], "more_key": "ui.more_time_kernel"})
            return Verdict(NOTEBOOK_ITEM, 0, 1, TIMEOUT, named_cell(stuck, named))
        error = error or compared(printed, expected, cell + 1)
        records.append({"cell": cell, "passed": error is None, **({"error": error} if error else {})})
    broken = syntax_errors(cells or [])  # the cell grader check's kernel would stop at
    records = [r for r in records if r["cell"] + 1 not in broken] + [
        {"cell": number - 1, "passed": False, "error": error} for number, error in broken.items()]
    rerun = {r["cell"] for r in records}  # a worked example is judged by what it does now
    records += [r for r in failed_runs(namespace, cells, python_source) if r["cell"] not in rerun]
    records.sort(key=lambda r: r["cell"])
    first: dict = next((r["error"] for r in records if not r["passed"]), {})
    if first.get("type") in SEEN_IN_KERNEL:
        status, key = SEEN_IN_KERNEL[first["type"]]
        at = next(r["cell"] for r in records if not r["passed"])
        return Verdict(NOTEBOOK_ITEM, 0, 1, status, named_cell(Finding(key, {"cell": at + 1}), named))
    verdict = notebook_item_verdict(records + missing, named, eo.example_lines(chapter_id), chapter_id)
    finding = in_kernel_frame(verdict.finding, namespace, cells)
    return verdict if finding is verdict.finding else Verdict(verdict.item, 0, 1, verdict.status, finding)

"""Grading a notebook in this process, with the machinery of the in-notebook ``check()``.

A kernel per wrong notebook costs seconds (start, imports, JIT); the suite holds a
hundred of them.  Here the cells run in one IPython shell of the test process (a fresh
namespace per notebook), then the chapter's probes run over that namespace and the
judges decide, exactly as ``check()`` does.  A sample of the pitfalls still goes
through the real kernel (``Pitfall.kernel``), and ``test_selfcheck`` holds the two
paths to the same verdicts on every pitfall that takes both.
"""
from __future__ import annotations

import contextlib
import io
import os

import nbformat

from grader import judge
from grader.probe_kernel import run_in_process
from grader.probe_runtime import error_fact
from grader.registry import chapter
from grader.report import as_dict
from grader.result import Result
from grader.verdicts import notebook_verdict


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()


def run_cells(nb: nbformat.NotebookNode) -> tuple[dict, list[dict]]:
    """Run every code cell in a fresh namespace; the namespace and each cell's outcome.
    The notebook's own ``check()`` cell stands aside, as it does when the grader runs it."""
    shell = _shell()
    shell.reset(new_session=False)
    cells = []
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    with patched_env(TIED_GRADING="1"):
        for index, cell in enumerate(code):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                result = shell.run_cell(cell.source, store_history=False, silent=True)
            record = {"cell": index, "passed": result.success}
            if not result.success:
                record["error"] = error_fact(result.error_in_exec or result.error_before_exec)["error"]
            cells.append(record)
    return shell.user_ns, cells


@contextlib.contextmanager
def patched_env(**values):
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def grade_in_process(nb: nbformat.NotebookNode, chapter_id: str, lang: str = "en") -> dict:
    """The gradebook entry (``report.as_dict``) that the notebook earns, judged here."""
    ch = chapter(chapter_id)
    namespace, cells = run_cells(nb)
    facts = run_in_process(ch, namespace)
    result = Result(nb.metadata.get("path", "<in-process>"), ch.id)
    result.verdicts = [notebook_verdict(cells)] + [
        judge.judge_item(ch, item, facts[item.name]) for item in ch.items
    ]
    return as_dict(result, lang)

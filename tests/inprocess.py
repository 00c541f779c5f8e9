"""Grading a notebook in this process, with the in-notebook ``check()`` itself.

A kernel per wrong notebook costs seconds (start, imports, JIT); the suite holds a
hundred of them.  Here the cells run in one IPython shell of the test process (a fresh
namespace per notebook, with the history and the notebook file a kernel has), then
``check()`` judges that namespace, the ``notebook`` item included.  A sample of the
pitfalls still goes through the real kernel (``Pitfall.kernel``), and
``test_selfcheck`` holds the two paths to the same verdicts and messages on every
pitfall that takes both.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import tempfile
from pathlib import Path

import nbformat

from grader import disk_cache
from grader.chapters import chapter
from grader.kernel.runtime import error_fact
from grader.outputs.report import as_dict
from grader.pipeline.prepare.probe_bundle import run_in_process
from grader.selfcheck.check import check
from notebooks import ROOT, solution


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()


def run_cells(nb: nbformat.NotebookNode, notebook_file: Path | None = None) -> tuple[dict, list[dict]]:
    """Run every code cell in a fresh namespace; the namespace and each cell's outcome.
    The notebook's own ``check()`` cell stands aside, as it does when the grader runs it.
    The namespace holds what a kernel's does: the sources run (``_ih``) and, given
    ``notebook_file``, the notebook's path (``__session__``, set by JupyterLab)."""
    shell = _shell()
    shell.reset(new_session=False)
    cells = []
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    shell.user_ns["_ih"] = [""] + [cell.source for cell in code]
    if notebook_file is not None:
        shell.user_ns["__session__"] = str(notebook_file)
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


def check_in_process(nb: nbformat.NotebookNode, chapter_id: str, langs=("en",)) -> dict[str, dict]:
    """The gradebook entry (``report.as_dict``) that ``check()`` gives the notebook, per language."""
    with tempfile.TemporaryDirectory() as tmp:
        notebook_file = Path(tmp) / f"{chapter_id}.ipynb"
        nbformat.write(nb, notebook_file)
        namespace, _ = run_cells(nb, notebook_file)
        result = check(chapter_id, langs[0], namespace)
    return {lang: as_dict(result, lang) for lang in langs}


def grade_in_process(nb: nbformat.NotebookNode, chapter_id: str, lang: str = "en") -> dict:
    """The gradebook entry (``report.as_dict``) that the notebook earns, judged here."""
    return check_in_process(nb, chapter_id, (lang,))[lang]


@functools.cache
def solution_facts(chapter_id: str) -> dict:
    """The facts the solution's probes record, in this process (once per test session)."""
    return run_in_process(chapter(chapter_id), run_cells(nbformat.read(solution(chapter_id), as_version=4))[0])


def notebook_namespace(chapter_id: str, until: str = "check(") -> dict:
    """The solution's namespace after its cells up to the first one that holds ``until``."""
    nb = nbformat.read(ROOT / "solutions" / f"{chapter_id}.ipynb", as_version=4)
    last = next(i for i, c in enumerate(nb.cells) if until in c.source)
    nb.cells = nb.cells[:last + (until != "check(")]
    namespace, cells = run_cells(nb)
    assert all(c["passed"] for c in cells)
    return namespace


def public_args(chapter_id: str, item: str) -> list[dict]:
    """The arguments of an item's public cases, in order."""
    return [case.args for case in disk_cache.cases(chapter_id, item) if case.public]

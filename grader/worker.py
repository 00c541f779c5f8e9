"""One submission in one process: nbval runs the notebook, then the probes run in
the same kernel.  Started by ``grader.runner`` as ``python -m grader.worker JOB``,
in its own process group so that a timeout can stop all of it.

The job file names the notebook copy, the probe spec and where to write the
summary of the cells.  Facts are appended by the kernel to the spec's output file
item by item, so that what was reached before a timeout is not lost.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from queue import Empty

import pytest

from . import expected_outputs
from .probe_kernel import probe_source

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ARROW_LINE = re.compile(r"^\s*-*>\s*\d+\s(.*)$")
MAX_TEXT = 300


def cell_error(inner_traceback: str) -> dict:
    """Exception type, message and the failing source line from an IPython traceback."""
    lines = [ANSI.sub("", line) for line in (inner_traceback or "").splitlines()]
    lines = [line for line in lines if line.strip()]
    last = lines[-1] if lines else ""
    etype, _, message = last.partition(":")
    failing = [m.group(1).strip() for m in map(ARROW_LINE.match, lines) if m]
    return {
        "type": etype.strip()[:80] or "Error",
        "message": message.strip()[:MAX_TEXT],
        "line": failing[-1][:MAX_TEXT] if failing else "",
    }


class KernelDied(RuntimeError):
    """The kernel exited (os._exit, a crash, a kill) while a cell or probe ran."""


def watch_kernel(kernel) -> None:
    """Make ``kernel.await_reply`` notice a dead kernel within a second.

    nbval waits for a reply for the whole cell timeout, so a kernel that died
    (os._exit, a segfault) would hang the run until the grader's own timeout.
    """
    if getattr(kernel, "_tied_watched", False):
        return
    original = kernel.await_reply

    def await_reply(msg_id, timeout=None):
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        while True:
            try:
                return original(msg_id, timeout=1)
            except Empty:
                if not kernel.is_alive():
                    raise KernelDied("the kernel stopped")
                if deadline is not None and time.monotonic() > deadline:
                    raise

    kernel.await_reply = await_reply
    kernel._tied_watched = True


class ProbeHook:
    """pytest plugin: records each cell's outcome and runs the probes after the last."""

    def __init__(self, spec_path: str, chapter_probe_module: str):
        self.spec_path = spec_path
        self.source = probe_source(chapter_probe_module)
        self.cells: list[dict] = []
        self.probe_status = "not_run"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call":
            return
        record = {"cell": getattr(item, "cell_num", -1), "passed": report.passed}
        if not report.passed and call.excinfo is not None:
            exc = call.excinfo.value
            if isinstance(exc, KernelDied) or "Kernel dead" in str(exc):
                exc = KernelDied("the kernel stopped")
            if expected_outputs.differs(exc):  # it ran, but printed something else
                record["error"] = expected_outputs.mismatch_error(item)
            elif hasattr(exc, "inner_traceback") and exc.inner_traceback:
                record["error"] = cell_error(exc.inner_traceback)
            else:
                record["error"] = {"type": type(exc).__name__, "message": str(exc)[:MAX_TEXT], "line": ""}
        self.cells.append(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        watch_kernel(item.parent.kernel)
        expected_outputs.skip_stderr(item.parent)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        if nextitem is None:  # the last cell: the kernel is still up
            self.run_probes(item.parent.kernel)

    def run_probes(self, kernel) -> None:
        if not kernel.is_alive():
            self.probe_status = "kernel_dead"
            return
        code = (
            "def _tied_probe(spec):\n"
            "    ns = {'__name__': '_tied_probe'}\n"
            f"    exec(compile({self.source!r}, '<tied-probe>', 'exec'), ns)\n"
            "    ns['run_spec_file'](spec, ns, globals())\n"
            f"_tied_probe({self.spec_path!r}); del _tied_probe\n"
        )
        watch_kernel(kernel)
        msg_id = kernel.execute_cell_input(code, allow_stdin=False)
        try:
            reply = kernel.await_reply(msg_id, timeout=None)
        except KernelDied:
            self.probe_status = "kernel_dead"
            return
        self.probe_status = "done" if reply["content"]["status"] == "ok" else "error"


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    os.environ["TIED_GRADING"] = "1"  # the notebook's own check() cell stands aside
    # Only nbval is needed: loading every installed pytest plugin costs about half a
    # second per notebook.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    hook = ProbeHook(job["spec"], job["probe_module"])
    notebook = Path(job["notebook"])
    missing = expected_outputs.missing_records(notebook)  # read before the kernel can write there
    args = [
        str(notebook), "-p", "nbval.plugin", "--nbval-lax", "--nbval-current-env", "-q", "-p", "no:cacheprovider",
        "--rootdir", str(notebook.parent), "-c", job["ini"], "--color=no",
        "--nbval-kernel-startup-timeout", "60", "--nbval-sanitize-with", str(expected_outputs.SANITIZERS),
    ]
    with open(os.devnull, "w") as devnull:
        stdout = sys.stdout
        sys.stdout = devnull  # pytest's own report is not ours to show
        try:
            pytest.main(args, plugins=[hook])
        finally:
            sys.stdout = stdout
    summary = {"cells": hook.cells + missing, "probes": hook.probe_status}
    tmp = Path(job["summary"] + ".tmp")
    tmp.write_text(json.dumps(summary), encoding="utf-8")
    tmp.replace(job["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

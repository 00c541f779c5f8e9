"""One submission in one process: nbval runs the notebook, then the probes run in
the same kernel.  Started by ``grader.pipeline.supervise.supervisor`` as
``python -m grader.pipeline.supervise.worker JOB CHANNEL DEADLINE STEP``, in its own process group so that
a timeout can stop all of it.

The job file (``grader.pipeline.prepare.job``) names the notebook copy, the probe spec and the items.
CHANNEL is the write end of a pipe that only this process holds: it is closed on exec, so the kernel
and whatever it starts never get it, and this process is not dumpable, so that they
cannot open it through ``/proc`` or trace this process either (unless they run as
root outside a sandbox).  Each item's facts come back in the kernel's reply to the
request that ran its checks (a message only the kernel's own process can send), and
go down the channel as soon as they arrive, so that what was reached before a
timeout is not lost; the summary of the cells follows.  A cell or an item's checks
still running after STEP seconds is interrupted, as nbval does on its own timeouts, so
that the traceback shows the line where the code was stuck, and the notebook goes on:
the cells after it and the other items' checks still run.  At DEADLINE (a value of
``time.monotonic()``) the kernel is interrupted in the same way; then nothing more runs.
pytest's report goes to stdout, which the supervisor keeps as the worker's log.
"""
from __future__ import annotations

import ast
import contextlib
import ctypes
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from queue import Empty
from typing import Any

import nbval.kernel
import psutil
import pytest
from jupyter_client.manager import KernelManager

from grader import expected_outputs
from grader.cells import ANSI, cell_error
from grader.kernel.runtime import shorten
from grader.pipeline.prepare.job import read as read_job
from grader.pipeline.prepare.probe_bundle import probe_source
from grader.pipeline.supervise.process_tree import kill_descendants
from grader.pipeline.supervise.supervisor import STEP_SHARE


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


def execute_reply(kernel, msg_id: str) -> dict:
    """The content of the kernel's reply to ``msg_id`` (its "status", and on an error
    its "traceback").  nbval's ``await_reply`` returns nothing, so it is read here
    from the shell channel, checking every second that the kernel is alive."""
    while True:
        try:
            msg = kernel.get_message(stream="shell", timeout=1)
        except Empty:
            if not kernel.is_alive():
                raise KernelDied("the kernel stopped")
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]


EVERY_STEP = "*"  # the aim of the Ctrl-C at the notebook's deadline: whatever runs stops


def interrupt(kernel, aim_file: str | None = None, step: str = EVERY_STEP) -> None:
    """Ctrl-C in the kernel, as Jupyter's interrupt button sends it, aimed at ``step``.

    A signal carries no address, and it can reach the kernel's Python code late (on a
    loaded machine, after the step it was sent for has answered and the next one has
    begun), so the step it is meant for is written to ``aim_file`` first: a step of the
    checks (``PRELUDE``'s ``guarded``) lets only a Ctrl-C aimed at itself stop it."""
    if aim_file is not None:
        with open(f"{aim_file}.new", "w", encoding="utf-8") as f:
            f.write(step)
        os.replace(f"{aim_file}.new", aim_file)
    try:
        os.kill(kernel.km.provisioner.process.pid, signal.SIGINT)
    except (AttributeError, OSError):  # no kernel process (not started, or gone)
        pass


WORKER_GRACE = 2.0  # seconds an interrupted kernel has to answer before the summary is written anyway

# The checks' cell starts with this line; the prelude lets it past the notebook's input
# transformers, which could otherwise rewrite the checks before they run.
CHECKS_MARK = "# tied-checks\n"

# Run in the kernel before the student's first cell: it keeps the functions the checks
# use to read their cases and write their facts (json, open, NumPy's save, base64,
# compile, exec) and a copy of the built-ins (isinstance, id, len...) that the probes
# run with, so that a cell patching any of them later changes nothing the checks see or write.
# ``guarded`` runs one step of the checks under a Ctrl-C handler of its own: a Ctrl-C
# stops the step only when the worker aimed it at that step (``interrupt``), and none
# stops it once its code has returned, until ipykernel restores its own handler after
# the reply; so a late Ctrl-C, sent for the step before, lands nowhere.  It is compiled
# under a name of its own, so that a traceback's innermost cell line stays the student's.
GUARD = f"""def guarded(aim_file, step, run, *args):
    running = [True]

    def on_ctrl_c(signum, frame):
        try:
            with saved.open(aim_file, encoding="utf-8") as f:
                aim = f.read()
        except OSError:
            aim = {EVERY_STEP!r}
        if running[0] and aim in (step, {EVERY_STEP!r}):
            raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        return run(*args)
    finally:
        running[0] = False
"""
PRELUDE = f"""def _tied_prelude():
    import base64, builtins, json, signal, sys, types
    import numpy
    saved = types.ModuleType("_tied_saved")
    scope = {{"saved": saved, "signal": signal}}
    exec(compile({GUARD!r}, "<tied-guard>", "exec"), scope)
    saved.__dict__.update(json_dumps=json.dumps, json_load=json.load, open=builtins.open,
                          np_asarray=numpy.asarray, np_save=numpy.save, b64encode=base64.b64encode,
                          compile=builtins.compile, exec=builtins.exec,
                          builtins=dict(vars(builtins)), guarded=scope['guarded'])
    sys.modules["_tied_saved"] = saved
    shell = get_ipython()
    transform = shell.transform_cell
    shell.transform_cell = lambda cell: cell if cell.startswith({CHECKS_MARK!r}) else transform(cell)
_tied_prelude()
del _tied_prelude
"""


def seconds_given(limit: float) -> float:
    """A step's time limit as its message says it (a tenth of a second at least)."""
    return max(round(limit, 1), 0.1)


class ProbeHook:
    """pytest plugin: records each cell's outcome and runs the probes after the last."""

    def __init__(self, spec_path: str, chapter_probe_module: str, items: Sequence[str], channel,
                 deadline: float = math.inf, step: float = math.inf, aim_file: str | None = None):
        self.spec_path = spec_path
        self.source = probe_source(chapter_probe_module)
        self.items = list(items)
        self.channel = channel  # a binary file: the pipe to the supervisor
        self.deadline = deadline
        self.step = step
        self.cells: list[dict] = []
        self.probe_status = "not_run"
        self.lock = threading.Lock()  # between pytest's thread and the deadline's
        self.wake = threading.Condition(self.lock)  # the deadline's thread: a step began or all ended
        self.step_ends = math.inf  # when the cell or item's checks running now is interrupted
        self.limit = math.inf  # the seconds it was given
        self.cut_after = math.inf  # the seconds the step interrupted at its end had been given
        self.cut: int | str | None = None  # the step interrupted at its end (a cell, an item), until it reports
        self.stuck: dict[str, str] = {}  # item → the line its checks were interrupted at
        self.stuck_after: dict[str, float] = {}  # item → the seconds its checks had been given
        self.session = None
        self.kernel = None
        self.running: int | str = "start"  # the cell being run, or "start", or "checks"
        self.probing = ""  # the item whose checks are running
        self.timeout: dict | None = None  # where the deadline found the code
        self.finished = threading.Event()
        self.notes: list[str] = []  # for the log, after pytest's report (it captures output meanwhile)
        self.prelude_sent = False
        self.aim_file = aim_file  # where a Ctrl-C's step is written for the kernel to read (``interrupt``)

    def pytest_sessionstart(self, session):
        self.session = session

    def begin(self, step: int | str) -> None:
        """``step`` (a cell's number, or an item's name) starts now (called with ``self.lock`` held).

        It may run for ``step`` seconds; once a step has been cut, never for more than
        ``STEP_SHARE`` of the notebook's time left: a function that hangs is called by
        several cells and by its item's checks, and each stuck step after the first leaves
        the rest at least as much as it took."""
        now = time.monotonic()
        self.limit = self.step if self.cut_after == math.inf else min(self.step, STEP_SHARE * (self.deadline - now))
        self.step_ends, self.cut = now + self.limit, None
        if isinstance(step, int):
            self.running = step
        self.wake.notify_all()

    def end(self) -> int | str | None:
        """The step that ran has answered: the step itself if it was interrupted at its end."""
        with self.lock:
            cut, self.cut, self.step_ends = self.cut, None, math.inf
            return cut

    def finish(self) -> None:
        with self.lock:
            self.finished.set()
            self.wake.notify_all()

    def watch_deadline(self) -> None:
        """Interrupt a step (a cell, an item's checks) that runs past ``step`` seconds, so
        that the notebook goes on without it; at the deadline, interrupt the kernel and
        stop: no cell or check runs after it."""
        with self.lock:
            while not self.finished.is_set() and (now := time.monotonic()) < self.deadline:
                if now < self.step_ends:
                    left = min(self.deadline, self.step_ends) - now
                    self.wake.wait(None if left == math.inf else left)  # no time limit: until woken
                    continue
                self.step_ends, self.cut, self.cut_after = math.inf, self.probing or self.running, self.limit
                self.wake.notify_all()
                if self.kernel is not None:
                    interrupt(self.kernel, self.aim_file, str(self.cut))
            if self.finished.is_set():
                return
            where = self.running
            self.timeout = {"where": "cell", "cell": where} if isinstance(where, int) else {"where": where}
            if self.probing:
                self.timeout["item"] = self.probing
            if self.session is not None:
                self.session.shouldstop = "the notebook timed out"
            kernel = self.kernel
        if kernel is not None:
            interrupt(kernel, self.aim_file)
        if not self.finished.wait(WORKER_GRACE):  # the kernel ignores Ctrl-C: say what is known
            self.write_summary()

    def write_summary(self, extra_cells: Sequence[dict] = ()) -> None:
        with self.lock:
            summary: dict[str, Any] = {"cells": self.cells + list(extra_cells), "probes": self.probe_status}
            if self.stuck:
                summary["stuck"], summary["stuck_after"] = dict(self.stuck), dict(self.stuck_after)
            if self.timeout is not None:
                summary["timeout"] = {"line": "", **self.timeout}
                if self.timeout.get("where") == "cell":  # the interrupted cell's traceback names the line
                    errors = [c["error"] for c in self.cells if c["cell"] == self.timeout["cell"] and "error" in c]
                    summary["timeout"]["line"] = errors[0]["line"] if errors else ""
            self.send({"summary": summary})

    def send(self, record: dict) -> None:
        """One line down the channel (called with ``self.lock`` held)."""
        try:
            self.channel.write(json.dumps(record).encode("utf-8") + b"\n")
            self.channel.flush()
        except (OSError, ValueError) as exc:  # the supervisor is gone, or the channel closed
            self.notes.append(f"The channel to the grader is closed: {exc}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call":
            return
        record = {"cell": getattr(item, "cell_num", -1), "passed": report.passed}
        if self.end() == record["cell"] and not report.passed:
            record["timed_out"] = seconds_given(self.cut_after)  # interrupted at the end of its time
        if not report.passed and call.excinfo is not None:
            exc = call.excinfo.value
            if isinstance(exc, KernelDied) or "Kernel dead" in str(exc):
                exc = KernelDied("the kernel stopped")
            if expected_outputs.differs(exc):  # it ran, but printed something else
                record["error"] = expected_outputs.mismatch_error(item)
            elif hasattr(exc, "inner_traceback") and exc.inner_traceback:
                record["error"] = cell_error(exc.inner_traceback)
            else:
                record["error"] = {"type": type(exc).__name__, "message": shorten(str(exc)), "line": ""}
        self.cells.append(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        with self.lock:
            if self.timeout is not None:  # the deadline came while the kernel started
                pytest.skip("the notebook timed out")
            self.kernel = item.parent.kernel
            self.begin(getattr(item, "cell_num", -1))
        watch_kernel(item.parent.kernel)
        if not self.prelude_sent:  # before the student's first cell
            self.prelude_sent = True
            execute_reply(item.parent.kernel, item.parent.kernel.execute_cell_input(PRELUDE, allow_stdin=False))
        expected_outputs.skip_stderr(item.parent)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        if nextitem is None:  # the last cell: the kernel is still up
            self.run_probes(item.parent.kernel)

    def run_probes(self, kernel) -> None:
        with self.lock:
            if self.timeout is not None:
                return
            self.running = "checks"
        if kernel is None or not kernel.is_alive():  # None: the kernel never answered nbval at start
            self.probe_status = "kernel_dead"
            return
        setup = (
            f"{CHECKS_MARK}"
            "def _tied_checks(spec):\n"
            "    import sys\n"
            "    saved = sys.modules['_tied_saved']\n"
            "    ns = {'__name__': '_tied_probe', '__builtins__': saved.builtins}\n"
            f"    saved.exec(saved.compile({self.source!r}, '<tied-probe>', 'exec'), ns)\n"
            "    return ns['spec_runner'](spec, ns['PROBES'], globals())\n"
            f"_tied_checks = {self.guarded('checks', f'_tied_checks, {self.spec_path!r}')}\n"
        )
        steps = [(None, setup)] + [
            (name, f"{CHECKS_MARK}_tied_facts = {self.guarded(name, f'_tied_checks, {index}')}\n")
            for index, name in enumerate(self.items)]
        for item, code in steps:
            wanted = {"facts": "_tied_facts"} if item else {}
            with self.lock:
                self.probing = item or ""
                self.begin(item or "checks")
            try:
                # stop_on_error=False: after a step that raised (an item's checks interrupted),
                # ipykernel would otherwise abort the requests that reach it before its own
                # "stop aborting" note does (a loaded machine): the next item's, unrun.
                reply = execute_reply(kernel, kernel.kc.execute(code, store_history=False, allow_stdin=False,
                                                                 user_expressions=wanted, stop_on_error=False))
            except KernelDied:
                self.probe_status = "kernel_dead"
                return
            cut = self.end()
            if reply.get("status") != "ok" and item and cut == item and self.timeout is None:
                line = cell_error(ANSI.sub("", "\n".join(reply.get("traceback") or [])))["line"]
                with self.lock:
                    self.stuck[item] = line
                    self.stuck_after[item] = seconds_given(self.cut_after)
                continue  # stuck on this item's checks: the next item's run
            if reply.get("status") != "ok":
                self.checks_stopped(reply)
                return
            if item:
                self.send_facts(item, reply)
        self.probe_status = "done"

    def guarded(self, step: str, call: str) -> str:
        """The kernel's code that runs ``call`` (a function and its arguments, as source)
        as the step ``step`` of the checks (``PRELUDE``'s ``guarded``)."""
        return f"__import__('sys').modules['_tied_saved'].guarded({self.aim_file or ''!r}, {step!r}, {call})"

    def send_facts(self, item: str, reply: dict) -> None:
        """The item's facts from the kernel's reply, as ``{"item", "facts"}`` down the
        channel; a reply of another shape sends nothing (the item is not judged)."""
        try:
            text = ast.literal_eval(reply["user_expressions"]["facts"]["data"]["text/plain"])
            facts = json.loads(text)
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            self.notes.append(f"The checks of {item} sent back no facts")
            return
        if isinstance(facts, list):
            with self.lock:
                self.send({"item": item, "facts": facts})

    def checks_stopped(self, reply: dict) -> None:
        traceback = ANSI.sub("", "\n".join(reply.get("traceback") or []))
        self.notes.append(f"The checks stopped:\n{traceback}")
        with self.lock:
            if self.timeout is not None:  # interrupted at the deadline, in the student's code
                self.probe_status = "timeout"
                self.timeout["line"] = cell_error(traceback)["line"]
            else:
                self.probe_status = "error"


def kernels_on_unix_sockets() -> str:
    """Make nbval start its kernel on Unix sockets in a new private folder, returned.

    Over TCP, jupyter_client picks a kernel's five ports by binding port 0 and letting
    go; two workers starting kernels at the same moment can pick the same port, and
    then one kernel never answers (seen as "Kernel didn't respond in 60 s" in a batch
    with ``--jobs 2``).  A socket file in a folder of this process's own cannot be
    taken by another worker."""
    folder = tempfile.mkdtemp(prefix="tied-kernel-", dir="/tmp" if os.path.isdir("/tmp") else None)

    class UnixSocketKernelManager(KernelManager):
        def __init__(self, **kwargs):
            super().__init__(transport="ipc", ip=os.path.join(folder, "k"), **kwargs)

    nbval.kernel.KernelManager = UnixSocketKernelManager
    return folder


PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def seal(channel_fd: int) -> None:
    """Keep the channel to this process: closed on exec (jupyter_client starts the
    kernel with ``close_fds=False``), and this process not dumpable, so that the
    kernel's processes, of the same user, can neither open ``/proc/<worker>/fd`` nor
    trace or read this process.  A kernel is dumpable again: exec resets it.

    And adopt what the kernel leaves behind: as a child subreaper, this process
    becomes the parent of every orphan below it (a ``setsid`` or double-forked child),
    so that its tree, which the supervisor watches and kills, holds them all."""
    os.set_inheritable(channel_fd, False)
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main(job_path: str, channel_fd: int, deadline: float = math.inf, step: float = math.inf) -> int:
    seal(channel_fd)
    job = read_job(job_path)
    os.environ["TIED_GRADING"] = "1"  # the notebook's own check() cell stands aside
    # Only nbval is needed: loading every installed pytest plugin costs about half a
    # second per notebook.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    channel = os.fdopen(channel_fd, "wb")
    sockets = kernels_on_unix_sockets()
    hook = ProbeHook(job.spec, job.probe_module, job.items, channel, deadline, step,
                     aim_file=os.path.join(sockets, "ctrl-c"))
    notebook = Path(job.notebook)
    missing = expected_outputs.missing_records(notebook)  # read before the kernel can write there
    args = [
        str(notebook), "-p", "nbval.plugin", "--nbval-lax", "--nbval-current-env", "-q", "-p", "no:cacheprovider",
        "--rootdir", str(notebook.parent), "-c", job.ini, "--color=no",
        "--nbval-kernel-startup-timeout", "60", "--nbval-sanitize-with", str(expected_outputs.SANITIZERS),
    ]
    threading.Thread(target=hook.watch_deadline, daemon=True).start()
    try:
        pytest.main(args, plugins=[hook])
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        hook.finish()
        hook.write_summary(missing)
        with contextlib.suppress(OSError):  # the supervisor is gone
            channel.close()
        kill_descendants(psutil.Process())  # the kernel has stopped: whatever is left was started by it
        print(*hook.notes, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:5])))

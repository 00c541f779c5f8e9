"""Grading one submission, step by step:

1. ``submission.load`` reads and validates the bytes (a bad file stops here);
2. ``prepare`` copies them into a fresh folder, with the probe spec beside them;
3. ``supervise`` runs ``grader.worker`` in its own process group under the time
   and memory limits, while the references are computed here in a thread;
4. ``collect`` reads back the facts the kernel wrote, item by item;
5. ``verdicts`` judges them, and names what stopped the items not reached.

The submission itself is only ever read.  After Ctrl-C (``stopping.requested()``)
no worker starts, and each running one is killed with its kernel.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from . import expected_outputs, judge
from .judge import FAIL, NOT_REACHED, OOM, PASS, TIMEOUT, Verdict
from .probe_kernel import write_spec
from .registry import Chapter, ErrorPattern, Finding, chapter
from .sandbox import Sandbox
from .stopping import Interrupted, requested
from .submission import BadSubmission, Submission, load, read_regular

DEFAULT_TIMEOUT = 120.0  # seconds per notebook
DEFAULT_MEMORY = 4 * 2**30  # bytes for the whole process tree
GRACE = 5.0  # seconds between the deadline, when the worker interrupts its kernel, and the kill
POLL = 0.05  # seconds between memory checks
LIST_EVERY = 0.5  # seconds between listings of the worker's process tree
NOTEBOOK_ITEM = "notebook"
KERNEL_DIED = (ErrorPattern("common.kernel_died", r"KernelDied"),)
# The kernel writes the facts and the summary is in a folder it can reach, so both
# are read only as regular files below these sizes (a real run writes a few MB).
FACTS_LIMIT = 64 * 2**20
SUMMARY_LIMIT = 2**20
LOG_LIMIT = 2**20  # bytes kept from the end of the worker's log
# Workers running now.  Starting one and noting it here happen under _LAUNCH, after
# a look at ``requested()``, so that after Ctrl-C ``stop_workers`` sees every
# worker and no other starts.
LIVE: set[psutil.Process] = set()
_LAUNCH = threading.Lock()


@dataclass
class Result:
    path: Path
    chapter: str = ""
    sha256: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    bad: Finding | None = None  # set when the file could not be graded at all
    seconds: float = 0.0
    log: str = ""  # the end of the worker's log: pytest's report, errors outside the cells

    @property
    def points(self) -> int:
        return sum(v.points for v in self.verdicts)

    @property
    def max_points(self) -> int:
        return sum(v.max_points for v in self.verdicts)

    @property
    def passed(self) -> bool:
        return self.bad is None and all(v.status == PASS for v in self.verdicts)


@dataclass(frozen=True)
class Limits:
    """What a submission's kernel gets: time, memory, threads and a compilation cache."""
    timeout: float = DEFAULT_TIMEOUT
    memory: int = DEFAULT_MEMORY
    threads: int = 0  # CPU threads the kernel may use; 0 leaves the libraries' default
    jax_cache: str = ""  # a folder where the kernels keep compiled JAX programs
    sandbox: bool = False  # each worker in its own namespaces and cgroups (grader.sandbox)


def thread_env(threads: int) -> dict[str, str]:
    """Environment that caps the kernel's BLAS, OpenMP (torch) and XLA thread pools.

    Parallel grading runs several kernels at once; each one sizing its pools to every
    core of the machine makes them fight over the cores and slows the whole batch.
    """
    if threads <= 0:
        return {}
    n = str(threads)
    env = {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}
    if threads == 1:
        xla = os.environ.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{xla} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()
    return env


def jax_cache_env(folder: str) -> dict[str, str]:
    """Environment that lets JAX keep every compiled program in ``folder``.

    Every kernel is a fresh process, and kernels grading the same chapter compile the
    same small programs (the cache key is a hash of the program, the compiler options
    and the versions), so a later kernel loads what an earlier one compiled: about a
    third less time per Flax notebook.  ``grader.disk_cache`` chooses the folder.  A
    cache the user set up already is left alone.
    """
    if not folder or "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return {}
    return {
        "JAX_COMPILATION_CACHE_DIR": folder,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }


def grade(path: Path, limits: Limits = Limits(), expected_chapter: str | None = None) -> Result:
    """Grade one notebook; raises ``Interrupted`` after Ctrl-C."""
    start = time.monotonic()
    try:
        sub = load(path, expected_chapter)
    except BadSubmission as exc:
        return Result(path, bad=Finding(exc.key, exc.params), seconds=time.monotonic() - start)
    ch = chapter(sub.chapter)
    with tempfile.TemporaryDirectory(prefix="tied-grade-") as tmp:
        job = prepare(sub, ch, Path(tmp))
        refs = threading.Thread(target=warm_references, args=(ch,), daemon=True)
        refs.start()
        stopped, log = supervise(job, limits)
        while refs.is_alive():  # polled, so that Ctrl-C is not kept waiting
            if requested():
                raise Interrupted
            refs.join(POLL)
        facts, summary = collect(job)
    result = Result(path, sub.chapter, sub.sha256, verdicts(ch, facts, summary, stopped, limits), log=log)
    result.seconds = time.monotonic() - start
    return result


def warm_references(ch: Chapter) -> None:
    """Compute the references while the kernel runs.  A failure here is left to the
    judging, which computes the reference again and reports the item as not judged."""
    try:
        judge.warm_references(ch)
    except Exception:
        pass


def prepare(sub: Submission, ch: Chapter, tmp: Path) -> dict:
    work = tmp / "work"  # the kernel's working directory: files it writes land here
    work.mkdir()
    notebook = work / f"{ch.id}.ipynb"
    notebook.write_bytes(expected_outputs.install(sub.data, ch.id))  # the solution's worked-example outputs
    (tmp / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    job = {
        "notebook": str(notebook),
        "spec": str(tmp / "spec.json"),
        "facts": str(tmp / "facts.jsonl"),
        "summary": str(tmp / "summary.json"),
        "ini": str(tmp / "pytest.ini"),
        "probe_module": ch.probe_module,
    }
    write_spec(ch, Path(job["spec"]), Path(job["facts"]))
    (tmp / "job.json").write_text(json.dumps(job), encoding="utf-8")
    job["path"] = str(tmp / "job.json")
    return job


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc] + proc.children(recursive=True)
    except psutil.Error:
        return []


def _rss(procs: list[psutil.Process]) -> int:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def kill_tree(root: psutil.Process, known: list[psutil.Process] = ()) -> None:
    """Kill ``root``, every process under it and those in ``known``, none escaping.

    Each one is stopped (SIGSTOP) before the tree is listed again, and a stopped
    process cannot start another: once a listing finds nothing new, killing them all
    leaves nothing behind, not even a kernel that was being started.
    """
    seen: dict[int, psutil.Process] = {}
    while fresh := [p for p in _tree(root) + list(known) if p.pid not in seen]:
        for p in fresh:
            seen[p.pid] = p
            try:
                p.suspend()
            except psutil.Error:
                pass
    for p in seen.values():
        try:
            p.kill()
        except psutil.Error:
            pass
    # Wait until each has ended (a zombie has: only its parent's wait remains);
    # psutil.wait_procs would wait for init to reap the kernel, up to its timeout.
    deadline = time.monotonic() + 1.0
    while not all(map(_ended, seen.values())) and time.monotonic() < deadline:
        time.sleep(0.01)


def _ended(p: psutil.Process) -> bool:
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def supervise(job: dict, limits: Limits) -> tuple[str, str]:
    """Run the worker; return how it stopped (``""`` when it finished, else TIMEOUT
    or OOM) and the end of its log.

    The worker interrupts its kernel at the deadline itself, so that the traceback
    shows where the code was stuck; the whole tree is killed ``GRACE`` seconds later,
    at once when it uses too much memory, and within ``POLL`` seconds of Ctrl-C
    (then ``Interrupted`` is raised).  The deadline goes to the worker as a value of
    the monotonic clock, which every process of the machine shares.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TIED_GRADING": "1",
           **thread_env(limits.threads), **jax_cache_env(limits.jax_cache)}
    deadline = time.monotonic() + limits.timeout
    command = [sys.executable, "-m", "grader.worker", job["path"], repr(deadline)]
    box = Sandbox(Path(job["path"]).parent, limits.memory, env) if limits.sandbox else None
    with tempfile.TemporaryFile() as log:  # out of the kernel's reach, unlike the job's folder
        with _LAUNCH:
            if requested():
                raise Interrupted
            proc = subprocess.Popen(
                box.argv(command, Path(job["notebook"]).parent) if box else command,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                env=box.env if box else env, cwd=Path(job["notebook"]).parent,
            )
            watched = psutil.Process(proc.pid)  # taken before the worker can be reaped: never another process
            LIVE.add(watched)
        procs: list[psutil.Process] = []
        try:
            stopped, procs = _watch(proc, watched, deadline + GRACE, limits.memory, box)
        finally:
            # Whatever happened, nothing outlives this call: a kernel the worker
            # left behind was in the last listing, and in a sandbox everything the
            # submission started is in its cgroup.
            kill_tree(watched, procs)
            proc.wait()
            LIVE.discard(watched)
            if box:
                stopped = OOM if box.hit_memory_limit() and stopped != TIMEOUT else stopped
                box.close()
        return stopped, _tail(log)


def stop_workers() -> None:
    """After Ctrl-C: kill every worker and its kernel now (each supervisor would
    within ``POLL`` seconds, unless its thread is busy elsewhere)."""
    with _LAUNCH:  # a launch under way ends and is noted; none starts after
        live = list(LIVE)
    for watched in live:
        kill_tree(watched)


def _watch(proc: subprocess.Popen, watched: psutil.Process, kill_at: float, memory: int, box=None):
    """Wait for the worker; (how it stopped, its tree when last listed).  In a sandbox
    the cgroup also counts what the tree does not show (memfd, detached children)."""
    procs, listed = [], 0.0
    while proc.poll() is None:
        if requested():
            raise Interrupted
        now = time.monotonic()
        if now - listed > LIST_EVERY:  # listing the tree scans /proc: not every poll
            procs, listed = _tree(watched), now
        if now > kill_at:
            return TIMEOUT, procs
        if _rss(procs) > memory or (box is not None and box.hit_memory_limit()):
            return OOM, procs
        time.sleep(POLL)
    return "", procs


def _tail(log) -> str:
    log.seek(max(0, log.seek(0, os.SEEK_END) - LOG_LIMIT))
    return log.read().decode("utf-8", errors="replace")


def collect(job: dict) -> tuple[dict[str, list[list]], dict]:
    """Every record the kernel wrote for each item, in order, and the worker's summary.

    Both files lie in a folder the student's code can reach.  They are read only as
    regular files within a size limit, a facts line counts only as an object
    ``{"item": str, "facts": list}`` (others are skipped: a kill can cut the last
    one short), and a summary of any other shape than the worker's is no summary.
    The judge accepts an item only with exactly one record (``judge.judge_records``).
    """
    records: dict[str, list[list]] = {}
    for line in _read_channel(job["facts"], FACTS_LIMIT).split("\n"):
        record = _json(line)
        if isinstance(record, dict) and isinstance(record.get("item"), str) and isinstance(record.get("facts"), list):
            records.setdefault(record["item"], []).append(record["facts"])
    summary = _json(_read_channel(job["summary"], SUMMARY_LIMIT))
    return records, summary if valid_summary(summary) else {}


def _read_channel(path: str, limit: int) -> str:
    try:
        return read_regular(Path(path), limit).decode("utf-8", errors="replace")
    except BadSubmission:  # missing, a folder, a link, a FIFO, too large
        return ""


def _json(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _strings(record, keys) -> bool:
    return isinstance(record, dict) and all(isinstance(record.get(k), str) for k in keys)


def valid_summary(summary) -> bool:
    """Has ``summary`` the shape the worker writes?  ``{"cells": [{"cell": int,
    "passed": bool, "error"?: {"type", "message", "line": str}}], "probes": str,
    "timeout"?: {"where": "start" | "checks" | "cell", "cell": int (in a cell), "line": str}}``"""
    if not isinstance(summary, dict) or not isinstance(summary.get("probes"), str):
        return False
    cells = summary.get("cells")
    if not isinstance(cells, list) or not all(
        isinstance(c, dict) and type(c.get("cell")) is int and type(c.get("passed")) is bool
        and ("error" not in c or _strings(c["error"], ("type", "message", "line")))
        for c in cells
    ):
        return False
    timeout = summary.get("timeout")
    return timeout is None or (_strings(timeout, ("where", "line")) and timeout["where"] in ("start", "checks", "cell")
                               and (timeout["where"] != "cell" or type(timeout.get("cell")) is int))


def notebook_verdict(cells: list[dict]) -> Verdict:
    """Did every cell run?  A stub left alone reads as 'not implemented'."""
    failed = [c for c in cells if not c["passed"]]
    if not failed:
        return Verdict(NOTEBOOK_ITEM, 1, 1, PASS)
    first = failed[0]
    error = first.get("error", {"type": "Error", "message": "", "line": ""})
    # Later failures usually follow from the first (a name never defined), so the
    # first one decides: a stub left alone reads as "not implemented".
    return Verdict(NOTEBOOK_ITEM, 0, 1, FAIL, judge.classify_error(error, KERNEL_DIED + expected_outputs.ERRORS, cell=first["cell"] + 1))


def verdicts(ch: Chapter, facts: dict, summary: dict, stopped: str, limits: Limits) -> list[Verdict]:
    """Judge each item from its records; the others get what stopped them.

    On a timeout the worker's summary says where the code was stuck, in a cell or in
    an item's checks, and at which line: that verdict quotes it.
    """
    done = {
        item.name: judge.judge_records(ch, item, facts[item.name])
        for item in ch.items
        if item.name in facts
    }
    timeout = summary.get("timeout")
    seconds = f"{limits.timeout:g}"
    if stopped == TIMEOUT or timeout is not None:
        status, finding = TIMEOUT, Finding("common.timeout", {"seconds": seconds})
    elif stopped == OOM:
        status, finding = OOM, Finding("common.oom", {"gib": f"{limits.memory / 2**30:g}"})
    elif summary.get("probes") in ("kernel_dead", "not_run"):  # it died before the checks or during them
        status, finding = NOT_REACHED, Finding("common.kernel_died")
    else:  # the checks ran yet left no record, or no summary came back: the notebook broke them
        status, finding = NOT_REACHED, Finding("common.probe_failed")
    found = judge.unreached(ch, done, status, finding)
    cells = summary.get("cells")
    if timeout is not None and timeout["where"] == "checks":
        stuck = next((n for n, v in enumerate(found) if v.status == TIMEOUT), None)
        if stuck is not None:
            found[stuck] = replace(found[stuck], finding=Finding(
                "common.timeout_in_check", {"seconds": seconds, "line": timeout["line"]}))
        return [notebook_verdict(cells)] + found
    if timeout is not None and timeout["where"] == "cell":
        finding = Finding("common.timeout_in_cell",
                          {"seconds": seconds, "cell": timeout["cell"] + 1, "line": timeout["line"]})
    if stopped or timeout is not None or cells is None:
        return [Verdict(NOTEBOOK_ITEM, 0, 1, status, finding)] + found
    return [notebook_verdict(cells)] + found

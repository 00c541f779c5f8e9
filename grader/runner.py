"""Grading one submission, step by step:

1. ``submission.load`` reads and validates the bytes (a bad file stops here);
2. ``prepare`` copies them into a fresh folder, with the probe spec beside them;
3. ``supervise`` runs ``grader.worker`` in its own process group under the time
   and memory limits, while the references are computed here in a thread;
4. ``collect`` reads back the facts the kernel wrote, item by item;
5. ``verdicts`` judges them, and names what stopped the items not reached.

The submission itself is only ever read.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from . import expected_outputs, judge
from .judge import FAIL, NOT_REACHED, OOM, PASS, TIMEOUT, Verdict
from .probe_kernel import write_spec
from .registry import Chapter, ErrorPattern, Finding, chapter
from .submission import BadSubmission, Submission, load

DEFAULT_TIMEOUT = 120.0  # seconds per notebook
DEFAULT_MEMORY = 4 * 2**30  # bytes for the whole process tree
POLL = 0.05  # seconds between memory checks
LIST_EVERY = 0.5  # seconds between listings of the worker's process tree
NOTEBOOK_ITEM = "notebook"
KERNEL_DIED = (ErrorPattern("common.kernel_died", r"KernelDied"),)
LIVE: set[psutil.Process] = set()  # workers running now, for stop_all()


@dataclass
class Result:
    path: Path
    chapter: str = ""
    sha256: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    bad: Finding | None = None  # set when the file could not be graded at all
    seconds: float = 0.0

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
    start = time.monotonic()
    try:
        sub = load(path, expected_chapter)
    except BadSubmission as exc:
        return Result(path, bad=Finding(exc.key, exc.params), seconds=time.monotonic() - start)
    ch = chapter(sub.chapter)
    with tempfile.TemporaryDirectory(prefix="tied-grade-") as tmp:
        job = prepare(sub, ch, Path(tmp))
        refs = threading.Thread(target=judge.warm_references, args=(ch,), daemon=True)
        refs.start()
        stopped = supervise(job, limits)
        refs.join()
        facts, summary = collect(job)
    result = Result(path, sub.chapter, sub.sha256, verdicts(ch, facts, summary, stopped, limits))
    result.seconds = time.monotonic() - start
    return result


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
        "log": str(tmp / "worker.log"),
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


def kill_tree(procs: list[psutil.Process]) -> None:
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


def supervise(job: dict, limits: Limits) -> str:
    """Run the worker; return ``""`` when it finished, else TIMEOUT or OOM."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TIED_GRADING": "1",
           **thread_env(limits.threads), **jax_cache_env(limits.jax_cache)}
    with open(job["log"], "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader.worker", job["path"]],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, env=env, cwd=Path(job["notebook"]).parent,
        )
        watched = psutil.Process(proc.pid)
        LIVE.add(watched)
        deadline = time.monotonic() + limits.timeout
        stopped, procs, listed = "", [], 0.0
        while proc.poll() is None:
            now = time.monotonic()
            if now - listed > LIST_EVERY:  # listing the tree scans /proc: not every poll
                procs, listed = _tree(watched), now
            if now > deadline:
                stopped = TIMEOUT
            elif _rss(procs) > limits.memory:
                stopped = OOM
            if stopped:
                kill_tree(_tree(watched) or procs)
                break
            time.sleep(POLL)
        proc.wait()
        LIVE.discard(watched)
    return stopped


def stop_all() -> None:
    """Kill every running worker and its kernel (after Ctrl-C in a batch)."""
    for proc in list(LIVE):
        kill_tree(_tree(proc))


def collect(job: dict) -> tuple[dict[str, list], dict]:
    facts: dict[str, list] = {}
    path = Path(job["facts"])
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                facts[record["item"]] = record["facts"]
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill
    summary_path = Path(job["summary"])
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
    return facts, summary


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
    done = {
        item.name: judge.judge_item(ch, item, facts[item.name])
        for item in ch.items
        if item.name in facts
    }
    if stopped == TIMEOUT:
        status, finding = TIMEOUT, Finding("common.timeout", {"seconds": f"{limits.timeout:g}"})
    elif stopped == OOM:
        status, finding = OOM, Finding("common.oom", {"gib": f"{limits.memory / 2**30:g}"})
    elif summary.get("probes") == "kernel_dead" or not summary:
        status, finding = NOT_REACHED, Finding("common.kernel_died")
    else:
        status, finding = NOT_REACHED, Finding("common.probe_failed")
    found = judge.unreached(ch, done, status, finding)
    cells = summary.get("cells")
    if stopped or cells is None:
        return [Verdict(NOTEBOOK_ITEM, 0, 1, status, finding)] + found
    return [notebook_verdict(cells)] + found

"""Running the worker for one notebook under its limits, and stopping it.

``supervise`` starts ``grader.pipeline.supervise.worker`` in a process group of its own (in a sandbox when
asked), with the kernel's environment (threads, JAX's compilation cache), watches its
time and memory, and kills the whole tree when it ends, overruns or after Ctrl-C
(``stopping.requested()``): interrupt first (the worker does, at the deadline), kill
second.  ``stop_workers`` kills every running worker at once.

What the worker reports (the facts, the summary) comes back through a pipe made here
for that one worker: the only verdict input, and nothing the kernel starts holds it
(``grader.pipeline.supervise.worker.seal``).
"""
from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from grader.kernel.runtime import CACHE_WARNINGS
from grader.outcome import OOM, TIMEOUT
from grader.pipeline.prepare.job import Job
from grader.pipeline.supervise.cgroups import JobCgroups
from grader.pipeline.supervise.process_tree import kill_tree, tree
from grader.pipeline.supervise.sandbox import Sandbox
from grader.stopping import Interrupted, requested

WORKER = "grader.pipeline.supervise.worker"  # the module the worker runs (python -m)
DEFAULT_TIMEOUT = 120.0  # seconds per notebook
STEP_SHARE = 0.5  # of the notebook's time, what one cell or one item's checks may take
DEFAULT_MEMORY = 4 * 2**30  # bytes for the whole process tree
GRACE = 5.0  # seconds between the deadline, when the worker interrupts its kernel, and the kill
POLL = 0.05  # seconds between memory checks
LIST_EVERY = 0.5  # seconds between listings of the worker's process tree
LOG_LIMIT = 2**20  # bytes kept from the end of the worker's log
CHANNEL_LIMIT = 65 * 2**20  # bytes kept of what the worker reports (a real run sends a few MB)
# Workers running now.  Starting one and noting it here happen under _LAUNCH, after
# a look at ``requested()``, so that after Ctrl-C ``stop_workers`` sees every
# worker and no other starts.
LIVE: set[psutil.Process] = set()
_LAUNCH = threading.Lock()


@dataclass(frozen=True)
class Limits:
    """What a submission's kernel gets: time, memory, threads and a compilation cache."""
    timeout: float = DEFAULT_TIMEOUT
    memory: int = DEFAULT_MEMORY
    threads: int = 0  # CPU threads the kernel may use; 0 leaves the libraries' default
    jax_cache: str = ""  # a folder where the kernels keep compiled JAX programs
    sandbox: bool = False  # each worker in its own namespaces (grader.pipeline.supervise.sandbox)
    user: str = ""  # run the worker and its kernel as this user (the grader runs as root)
    step: float = 0.0  # seconds one cell or one item's checks may run; 0: ``STEP_SHARE`` of ``timeout``

    @property
    def step_seconds(self) -> float:
        """How long one cell or one item's checks may run before the worker interrupts
        it and goes on with the next: a stuck cell costs its own items, not the rest."""
        return min(self.step or self.timeout * STEP_SHARE, self.timeout)


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
    # A cache entry that cannot be read or written costs a compilation, nothing the
    # student caused: the kernel shows no warning for it (PYTHONWARNINGS matches the start).
    quiet = [f"ignore:{message}" for message in CACHE_WARNINGS]
    return {
        "JAX_COMPILATION_CACHE_DIR": folder,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        "PYTHONWARNINGS": ",".join(filter(None, [os.environ.get("PYTHONWARNINGS", ""), *quiet])),
    }


def _rss(procs: list[psutil.Process]) -> int:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _pss(procs: list[psutil.Process]) -> int:
    """The tree's memory with each shared page counted once: the proportional set sizes
    added up (a page shared by n processes counts 1/n in each). Where a process's PSS
    cannot be read, its resident size stands in."""
    total = 0
    for p in procs:
        try:
            total += getattr(p.memory_full_info(), "pss", None) or p.memory_info().rss
        except psutil.Error:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
    return total


def over_memory(procs: list[psutil.Process], memory: int) -> bool:
    """Does the tree use more than ``memory`` bytes?  The resident sizes added up count
    the pages a parent shares with its forked workers (a DataLoader's) once per process,
    so a sum over the limit is checked again with the shared pages counted once (slower
    to read, so only then)."""
    return _rss(procs) > memory and _pss(procs) > memory


class Channel:
    """The read end of the worker's pipe, drained by a thread (the worker must never
    block on a full pipe) until every writer is gone; at most ``CHANNEL_LIMIT`` bytes
    are kept, the rest is read and dropped."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()  # neither inherited by any other process
        self.received = bytearray()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with open(self.read_fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(2**16):
                if len(self.received) < CHANNEL_LIMIT:
                    self.received += chunk[: CHANNEL_LIMIT - len(self.received)]

    def handed_over(self) -> None:
        """The worker has its copy of the write end: drop ours, so that the pipe ends with it."""
        os.close(self.write_fd)

    def text(self, wait: float = 5.0) -> str:
        """What the worker sent, once it is gone (a writer the kill missed is waited
        for ``wait`` seconds at most)."""
        self.thread.join(wait)
        return bytes(self.received).decode("utf-8", errors="replace")


def supervise(job: Job, limits: Limits) -> tuple[str, str, str]:
    """Run the worker; return how it stopped (``""`` when it finished, else TIMEOUT
    or OOM), the end of its log and what it sent through its channel.

    The worker interrupts its kernel at the deadline itself, so that the traceback
    shows where the code was stuck; the whole tree is killed ``GRACE`` seconds later,
    at once when it uses too much memory, and within ``POLL`` seconds of Ctrl-C
    (then ``Interrupted`` is raised).  The deadline goes to the worker as a value of
    the monotonic clock, which every process of the machine shares.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TIED_GRADING": "1",
           **thread_env(limits.threads), **jax_cache_env(limits.jax_cache)}
    deadline = time.monotonic() + limits.timeout
    box = Sandbox(job.folder, env) if limits.sandbox else None
    groups = JobCgroups(limits.memory)
    owner = hand_over(job.folder, env, groups, limits.user) if limits.user else {}
    with tempfile.TemporaryFile() as log:  # out of the kernel's reach, unlike the job's folder
        with _LAUNCH:
            if requested():
                raise Interrupted
            channel = Channel()
            command = [sys.executable, "-m", WORKER, job.path, str(channel.write_fd), repr(deadline),
                       repr(limits.step_seconds)]
            try:
                proc = subprocess.Popen(
                    groups.enter(box.argv(command, Path(job.notebook).parent) if box else command),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                    env=box.env if box else env, cwd=Path(job.notebook).parent, pass_fds=(channel.write_fd,),
                    **owner,
                )
            except BaseException:
                groups.close()
                raise
            finally:
                channel.handed_over()
            watched = psutil.Process(proc.pid)  # taken before the worker can be reaped: never another process
            LIVE.add(watched)
        procs: list[psutil.Process] = []
        try:
            stopped, procs = _watch(proc, watched, deadline + GRACE, limits.memory, groups)
        finally:
            # Whatever happened, nothing outlives this call: a kernel the worker
            # left behind was in the last listing, and everything the submission
            # started is in its cgroups (where the machine allows them).
            kill_tree(watched, procs)
            proc.wait()
            LIVE.discard(watched)
            hit_memory = groups.hit_memory_limit()  # read before the cgroups go
            groups.close()
        return OOM if hit_memory and stopped != TIMEOUT else stopped, _tail(log), channel.text()


def hand_over(job_dir: Path, env: dict[str, str], groups: JobCgroups, user: str) -> dict:
    """Make the job's folder and cgroups the unprivileged ``user``'s, give it a home in
    the job's folder and no JAX cache of the grader's; the ``Popen`` arguments that
    start the worker as that user, with no other group."""
    entry = pwd.getpwnam(user)
    home = job_dir / "home"
    home.mkdir()
    for folder, _, files in os.walk(job_dir):
        for path in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
    groups.give_to(entry.pw_uid)
    env.update(HOME=str(home), USER=user, LOGNAME=user)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def stop_workers() -> None:
    """After Ctrl-C: kill every worker and its kernel now (each supervisor would
    within ``POLL`` seconds, unless its thread is busy elsewhere)."""
    with _LAUNCH:  # a launch under way ends and is noted; none starts after
        live = list(LIVE)
    for watched in live:
        kill_tree(watched)


def _watch(proc: subprocess.Popen, watched: psutil.Process, kill_at: float, memory: int, groups: JobCgroups):
    """Wait for the worker; (how it stopped, its tree when last listed).  The cgroup
    also counts what the tree does not show (memfd, the page cache)."""
    procs, listed = [], 0.0
    while proc.poll() is None:
        if requested():
            raise Interrupted
        now = time.monotonic()
        if now - listed > LIST_EVERY:  # listing the tree scans /proc: not every poll
            procs, listed = tree(watched), now
        if now > kill_at:
            return TIMEOUT, procs
        if over_memory(procs, memory) or groups.hit_memory_limit():
            return OOM, procs
        time.sleep(POLL)
    return "", procs


def _tail(log) -> str:
    log.seek(max(0, log.seek(0, os.SEEK_END) - LOG_LIMIT))
    return log.read().decode("utf-8", errors="replace")

"""Many notebooks graded at once: ``grader grade``'s pool, and one notebook on a platform.

The pool grades a list of submissions in threads, each in its own worker and kernel,
and hands every result to the caller as it comes (``grader grade`` writes it into the
gradebook at once); a submission the grader crashes on becomes a one-line result and
the batch goes on.  The compiled programs of JAX are shared by all the kernels of a
batch (``disk_cache.compiled_programs``).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

import grader.pipeline.runner as runner
import grader.pipeline.supervise.supervisor as supervisor
from grader import disk_cache
from grader.result import Result, grader_error
from grader.stopping import Interrupted, requested

STOP_WAIT = 1.0  # seconds the running gradings get to clean up after Ctrl-C (their workers are killed at once)

# What the pool does with each result: ``record(student, path, result, done)``, ``done``
# counting the results so far.
Record = Callable[[str, Path, Result, int], None]


def grade_batch(todo: list[tuple[str, Path]], jobs: int, limits: supervisor.Limits, record: Record) -> None:
    """Grade ``todo``, (student, notebook) pairs, ``jobs`` at a time, sharing the cores
    among the kernels that run at once and the compiled programs among all the kernels
    of this batch (and of earlier ones)."""
    with disk_cache.compiled_programs() as compiled:
        limits = replace(limits, threads=max(1, (os.cpu_count() or 1) // jobs), jax_cache=compiled)
        run_pool(todo, jobs, limits, record)


def run_pool(todo: list[tuple[str, Path]], jobs: int, limits: supervisor.Limits, record: Record) -> None:
    """Grade ``todo``, ``jobs`` at a time, recording each result as it comes.

    After Ctrl-C (``stopping.requested()``) no grading starts, every worker is
    killed with its kernel, and ``Interrupted`` is raised; a grading thread still
    busy (importing a framework) is not waited for.
    """
    done = 0
    pool = ThreadPoolExecutor(max_workers=jobs)
    pending = {pool.submit(runner.grade, p, limits): (s, p) for s, p in todo}
    try:
        while pending:
            if requested():
                raise Interrupted
            finished, _ = wait(pending, timeout=supervisor.POLL, return_when=FIRST_COMPLETED)
            for future in finished:
                student, path = pending.pop(future)
                try:
                    result = future.result()
                except Interrupted:
                    raise
                except Exception as exc:  # a crash in grading one submission: the batch goes on
                    result = grader_error(path, exc)
                done += 1
                record(student, path, result, done)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if requested():
            supervisor.stop_workers()
            wait(pending, timeout=STOP_WAIT)


def grade_alone(notebook: Path, chapter: str, timeout: float | None = None, user: str = "") -> Result:
    """One notebook of ``chapter``, as a platform grades it (the notebook runs as
    ``user`` when one is named)."""
    with disk_cache.compiled_programs() as compiled:
        limits = supervisor.Limits(jax_cache=compiled, user=user)
        limits = limits if timeout is None else replace(limits, timeout=timeout)
        return runner.grade(notebook, limits, chapter)

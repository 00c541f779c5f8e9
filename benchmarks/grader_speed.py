"""How much time the grader adds, measured in one run (issue: the grader survives anything).

1. nbval alone (``pytest --nbval-lax``) against ``grader check`` on each solution notebook;
2. batch grading of 8 copies of one solution with ``--jobs 1`` and ``--jobs 2``;
3. the in-notebook ``check()`` of every chapter: first call (JIT compilation and references)
   and the median of 7 warm calls after it, against the target of ``WARM_TARGET`` seconds,
   with the CPU time of those calls and the load average (a busy machine stretches the
   wall-clock time, much less the CPU time).

The grader keeps reference values and the kernels' compiled JAX programs on disk
(``grader/disk_cache.py``).  Steps 1 and 2 run each grader command twice: with an empty
cache ("cold", as on the first run after installing) and with the cache the cold run
filled ("warm", as when a student checks a notebook again, or a teacher grades the next
batch).  The benchmark uses a temporary cache folder of its own and leaves the user's
alone; run it without JAX_COMPILATION_CACHE_DIR set, or the grader uses that one.

Prints seconds and ratios; asserts nothing.  Usage: python benchmarks/grader_speed.py [--check-only] [CHAPTER ...]
(``--check-only``: step 3 alone).
"""
from __future__ import annotations

import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from unittest.mock import patch

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


@contextmanager
def empty_disk_cache():
    """A temporary disk cache for this process and the commands it starts."""
    with tempfile.TemporaryDirectory(prefix="tied-bench-cache-") as cache, \
            patch.dict(os.environ, TIED_CACHE_DIR=cache):
        yield


def cold_and_warm(argv) -> tuple[float, float]:
    """Seconds of ``argv(state)`` with an empty disk cache, then with the one it filled."""
    with empty_disk_cache():
        return seconds(argv("cold")), seconds(argv("warm"))


def nbval_vs_grader(chapters: list[str]) -> None:
    print("chapter        nbval (s)  grader cold / warm (s)  ratio cold / warm")
    for ch in chapters:
        nb = str(ROOT / "solutions" / f"{ch}.ipynb")
        nbval = seconds([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", nb])
        cold, warm = cold_and_warm(lambda state: [PY, "-m", "grader", "check", nb])
        print(f"{ch:<14} {nbval:9.1f}  {cold:11.1f} / {warm:4.1f}  {cold / nbval:10.2f} / {warm / nbval:4.2f}")


def batch(chapter: str, copies: int = 8, rounds: int = 3) -> None:
    """Speed-up of ``--jobs 2`` over ``--jobs 1``, in ``rounds`` rounds.

    Wall-clock times on a shared virtual machine vary by 10-20 % from one run to the
    next, so each round runs the four batches in turn and the summary gives the median
    and the range of the rounds' speed-ups.
    """
    speedups = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(copies):
            (Path(tmp) / f"student{i}").mkdir()
            shutil.copy(ROOT / "solutions" / f"{chapter}.ipynb", Path(tmp) / f"student{i}" / f"{chapter}.ipynb")
        for r in range(rounds):
            times = {}
            for jobs in (1, 2):
                # A fresh --out folder for each run: a rerun into the same one skips everything.
                times[jobs] = cold_and_warm(lambda state: [
                    PY, "-m", "grader", "grade", tmp, "--jobs", str(jobs),
                    "--out", str(Path(tmp) / f"out{r}-{jobs}-{state}")])
            for i, state in enumerate(("cold", "warm")):
                speedups[state].append(times[1][i] / times[2][i])
                print(f"batch of {copies} x {chapter}, round {r + 1}, {state} cache: --jobs 1 {times[1][i]:.1f} s, "
                      f"--jobs 2 {times[2][i]:.1f} s, speed-up {speedups[state][-1]:.2f}x")
    for state, values in speedups.items():
        print(f"speed-up with a {state} cache: median {statistics.median(values):.2f}x "
              f"(range {min(values):.2f}x to {max(values):.2f}x over {rounds} rounds)")


WARM_TARGET = 0.1  # seconds of a warm in-notebook check() (issue 27)


def in_notebook(chapter: str, repeats: int = 7) -> tuple[float, float]:
    """The first call's seconds and the warm calls' median; prints both with the ratio to
    ``WARM_TARGET``, the warm calls' median CPU time and the load average."""
    from grader import check

    nb = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    ns = {"__name__": "__main__"}
    with redirect_stdout(io.StringIO()):  # the cells' own prints are not the benchmark's
        for cell in nb.cells:
            if cell.cell_type == "code" and "check(" not in cell.source:
                exec(compile(cell.source, "<cell>", "exec"), ns)
    with empty_disk_cache():  # the first call computes the references, as after installing
        start = time.perf_counter()
        check(chapter, namespace=ns)
        first = time.perf_counter() - start
        warm, cpu = [], []
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            check(chapter, namespace=ns)
            warm.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    median = statistics.median(warm)
    print(f"check('{chapter}') in-process: first call {first:.2f} s, warm median {median:.3f} s "
          f"({median / WARM_TARGET:.2f}x the {WARM_TARGET} s target; CPU {statistics.median(cpu):.3f} s; "
          f"load average {os.getloadavg()[0]:.1f})")
    return first, median


def main() -> None:
    args = sys.argv[1:]
    only_check = "--check-only" in args  # step 3 alone: a minute, where steps 1 and 2 take many
    chapters = [a for a in args if a != "--check-only"] or sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
    if not only_check:
        nbval_vs_grader(chapters)
        batch(chapters[0])
    warm = {ch: in_notebook(ch)[1] for ch in chapters}
    print(f"warm check() medians against the {WARM_TARGET} s target: " +
          ", ".join(f"{ch} {t:.3f} s ({t / WARM_TARGET:.2f}x)" for ch, t in warm.items()))


if __name__ == "__main__":
    main()

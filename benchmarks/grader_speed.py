"""How much time the grader adds, measured in one run (issue: the grader survives anything).

1. nbval alone (``pytest --nbval-lax``) against ``grader check`` on each solution notebook;
2. batch grading of 8 copies of one solution with ``--jobs 1`` and ``--jobs 2``;
3. the in-notebook ``check()``: first call (JIT compilation and references) and warm calls.

Prints seconds and ratios; asserts nothing.  Usage: python benchmarks/grader_speed.py [CHAPTER ...]
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def nbval_vs_grader(chapters: list[str]) -> None:
    print("chapter        nbval (s)  grader (s)  ratio")
    for ch in chapters:
        nb = str(ROOT / "solutions" / f"{ch}.ipynb")
        nbval = seconds([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", nb])
        grade = seconds([PY, "-m", "grader", "check", nb])
        print(f"{ch:<14} {nbval:9.1f}  {grade:10.1f}  {grade / nbval:5.2f}")


def batch(chapter: str, copies: int = 8) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(copies):
            (Path(tmp) / f"student{i}").mkdir()
            shutil.copy(ROOT / "solutions" / f"{chapter}.ipynb", Path(tmp) / f"student{i}" / f"{chapter}.ipynb")
        times = {}
        for jobs in (1, 2):
            out = Path(tmp) / f"out{jobs}"
            times[jobs] = seconds([PY, "-m", "grader", "grade", tmp, "--jobs", str(jobs), "--out", str(out)])
    print(f"batch of {copies} x {chapter}: --jobs 1 {times[1]:.1f} s, --jobs 2 {times[2]:.1f} s, "
          f"speed-up {times[1] / times[2]:.2f}x")


def in_notebook(chapter: str, repeats: int = 5) -> None:
    from grader import check

    nb = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    ns = {"__name__": "__main__"}
    for cell in nb.cells:
        if cell.cell_type == "code" and "check(" not in cell.source:
            exec(compile(cell.source, "<cell>", "exec"), ns)
    start = time.perf_counter()
    check(chapter, namespace=ns)
    first = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        check(chapter, namespace=ns)
        warm.append(time.perf_counter() - start)
    print(f"check('{chapter}') in-process: first call {first:.2f} s, warm median {sorted(warm)[repeats // 2]:.3f} s")


def main() -> None:
    chapters = sys.argv[1:] or sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
    nbval_vs_grader(chapters)
    batch(chapters[0])
    for ch in chapters:
        in_notebook(ch)


if __name__ == "__main__":
    main()

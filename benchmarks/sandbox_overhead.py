"""What ``--sandbox`` costs per notebook: ``grader check`` with and without it, in one run.

Each chapter's solution is graded alternately without and with the sandbox, ``ROUNDS``
times, after one unmeasured run that fills the disk cache (references and compiled JAX
programs: the sandbox reads that cache and never writes it).  Alternating keeps the two
under the same load; the ratio of the medians is printed.

    .venv/bin/python benchmarks/sandbox_overhead.py [CHAPTER ...]
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 3


def check(notebook: Path, *flags: str) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(notebook), "--lang", "en", *flags],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{notebook.name} {' '.join(flags)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.monotonic() - start


def main(chapters: list[str]) -> None:
    print(f"{'chapter':<22}{'plain (s)':>10}{'sandbox (s)':>13}{'ratio':>8}")
    for chapter in chapters:
        notebook = ROOT / "solutions" / f"{chapter}.ipynb"
        check(notebook)  # fills the disk cache
        plain, boxed = [], []
        for _ in range(ROUNDS):
            plain.append(check(notebook))
            boxed.append(check(notebook, "--sandbox"))
        p, b = statistics.median(plain), statistics.median(boxed)
        print(f"{chapter:<22}{p:>10.2f}{b:>13.2f}{b / p:>8.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["01_linen", "04_gpt_head", "05_mlm"])

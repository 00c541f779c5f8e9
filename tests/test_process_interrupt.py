"""Ctrl-C always works: at any moment of ``grader grade`` (and ``grader check``) it
exits within 5 s with code 130 and one line, leaves a valid gradebook holding the
submissions finished so far, and leaves no process behind; no worker starts after it.

Each moment is an event the test waits for (a process appears, a file is written),
never a fixed delay.  A Ctrl-C before Python has finished starting (importing
``site``: 30 ms on an idle machine, more than 100 ms on a loaded one) reaches no
code of the grader's, so the earliest moment tested is during the grader's own
imports, once NumPy's library is loaded.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from notebooks import ROOT, solution, with_cells, write

CHAPTER = "04_gpt_head"  # plain NumPy: its notebooks are the quickest to grade
EXIT_WITHIN = 5.0  # seconds from Ctrl-C to exit
POLL = 0.01
LATE = 0.5  # seconds after Ctrl-C from which no worker may start


@pytest.fixture(scope="module")
def classroom(tmp_path_factory) -> Path:
    """A bad file, two quick notebooks and one that loops forever in a cell."""
    root = tmp_path_factory.mktemp("class")
    (root / "a_bad").mkdir()
    (root / "a_bad" / f"{CHAPTER}.ipynb").write_text("not json")
    for student in ("b_quick", "c_quick"):
        (root / student).mkdir()
        (root / student / f"{CHAPTER}.ipynb").write_bytes(solution(CHAPTER).read_bytes())
    write(with_cells(CHAPTER, ["while True: pass"]), root / "d_loop" / f"{CHAPTER}.ipynb")
    return root


class Run:
    """A grader command started as a user starts it, watched until it exits."""

    def __init__(self, tmp_path: Path, *args: str):
        self.stderr_path = tmp_path / "stderr.txt"
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "grader", *args, "--lang", "en"], cwd=ROOT,
                                         stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "LANG": "C.UTF-8"})
        self.me = psutil.Process(self.proc.pid)
        self.seen: dict[int, psutil.Process] = {}  # every descendant seen alive

    def descendants(self) -> list[psutil.Process]:
        try:
            found = self.me.children(recursive=True)
        except psutil.Error:
            return []
        for p in found:
            self.seen.setdefault(p.pid, p)
        return found

    def wait_for(self, what: str, condition, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self.descendants()
            assert self.proc.poll() is None, f"the grader exited before {what}: {self.stderr_path.read_text()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            time.sleep(POLL)

    def workers(self) -> list[psutil.Process]:
        return [p for p in self.descendants() if "grader.pipeline.supervise.worker" in " ".join(cmdline(p))]

    def interrupt(self) -> tuple[float, list[psutil.Process]]:
        """Ctrl-C; the seconds until exit and the workers started after it.  A worker
        forked just before has the grader's command line until it execs, and one the
        grader was forking as the signal came may start a moment later (it is killed
        with the others): "after" means more than LATE seconds after."""
        sent_wall, sent = time.time(), time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        late = {}
        while self.proc.poll() is None and time.monotonic() - sent < 60:
            for p in self.workers():
                try:
                    if p.create_time() > sent_wall + LATE:
                        late[p.pid] = p
                except psutil.Error:
                    pass
            time.sleep(POLL)
        elapsed = time.monotonic() - sent
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        return elapsed, list(late.values())

    def left_behind(self) -> list[psutil.Process]:
        """Descendants seen while it ran that still run (a zombie has ended)."""
        alive = []
        for p in self.seen.values():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        return alive


def cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def maps(p: psutil.Process) -> str:
    try:
        return Path(f"/proc/{p.pid}/maps").read_text()
    except OSError:
        return ""


def saved(out: Path) -> dict:
    try:
        return json.loads((out / "gradebook.json").read_text())["submissions"]
    except (OSError, ValueError, KeyError):
        return {}


def assert_interrupted_cleanly(run: Run, out: Path | None) -> None:
    before = saved(out) if out else {}
    elapsed, late = run.interrupt()
    err = run.stderr_path.read_text()
    assert run.proc.returncode == 130, err
    assert elapsed < EXIT_WITHIN, f"exit took {elapsed:.1f} s"
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("Interrupted (Ctrl-C)"), err
    assert not late, f"workers started after Ctrl-C: {late}"
    assert not run.left_behind(), [cmdline(p) for p in run.left_behind()]
    if out is None:
        return
    entries = json.loads((out / "gradebook.json").read_text())["submissions"]
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["student"] for r in rows} == {e["student"] for e in entries.values()}
    assert set(before) <= set(entries), "a result saved before Ctrl-C was lost"
    assert {e["student"] for e in entries.values()} <= {"a_bad", "b_quick", "c_quick"}  # d_loop never ends
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


# Each moment: what the test waits for before Ctrl-C.
MOMENTS = {
    "during_imports": lambda run, out: "_multiarray_umath" in maps(run.me),
    "gradebook_started": lambda run, out: (out / "gradebook.json").exists(),
    "first_worker_started": lambda run, out: bool(run.workers()),
    "first_result_saved": lambda run, out: bool(saved(out)),
    "first_notebook_graded": lambda run, out: any("items" in e for e in saved(out).values()),
    "kernel_running_cells": lambda run, out: any("ipykernel" in " ".join(cmdline(p)) for p in run.descendants()),
}


@pytest.mark.parametrize("moment", MOMENTS)
def test_ctrl_c_leaves_a_valid_gradebook_and_no_process(classroom, tmp_path, moment):
    out = tmp_path / "out"
    run = Run(tmp_path, "grade", str(classroom), "--jobs", "2", "--out", str(out))
    run.wait_for(moment, lambda: MOMENTS[moment](run, out))
    assert_interrupted_cleanly(run, out)


def test_ctrl_c_in_check_exits_at_once_with_one_line(classroom, tmp_path):
    run = Run(tmp_path, "check", str(classroom / "d_loop" / f"{CHAPTER}.ipynb"))
    run.wait_for("a kernel", lambda: any("ipykernel" in " ".join(cmdline(p)) for p in run.descendants()))
    assert_interrupted_cleanly(run, None)

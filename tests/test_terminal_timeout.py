"""In the terminal a timeout charges only what did not run (issue 25): a cell or an
item's checks still running after its share of the time (``Limits.step_seconds``) is
interrupted, and the notebook goes on, so that every other item is judged as usual.

The graded tests run chapter 04 (plain NumPy: its kernel starts in a second or two)
in this process with a short step (4 s) under a generous notebook limit, so that a
loaded machine does not turn a slow cell into a timeout; the other tests judge a
worker's summary, no kernel started."""
from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import grader
from grader import disk_cache, stopping
from grader.chapters import chapter
from grader.i18n import LANGUAGES
from grader.outcome import PASS, TIMEOUT
from grader.outputs.report import as_dict
from grader.pipeline.judge.notebook import judge_notebook
from grader.pipeline.runner import grade, valid_summary
from grader.pipeline.supervise.supervisor import Limits
from grader.pipeline.supervise.worker import EVERY_STEP, GUARD, ProbeHook, interrupt
from grader.result import Result
from notebooks import ROOT, with_cells, write

NUMPY_CHAPTER = "04_gpt_head"
STEP = 4.0  # seconds a cell or an item's checks may run in these tests
LIMITS = Limits(timeout=90, step=STEP)
HUNG = "x = 0\nwhile True:\n    x += 1"


def position_of(nb, source: str) -> int:
    """The cell's position among all cells, as JupyterLab numbers it."""
    return next(n for n, cell in enumerate(nb.cells, 1) if cell.source == source)


def items_of(result, lang: str = "en") -> dict[str, dict]:
    return {i["item"]: i for i in as_dict(result, lang)["items"]}


def test_the_step_is_half_the_notebook_unless_given():
    assert Limits(timeout=120).step_seconds == 60 and Limits(timeout=120, step=5).step_seconds == 5
    assert Limits(timeout=10, step=30).step_seconds == 10  # never more than the whole notebook


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_hung_cell_costs_the_notebook_item_only(tmp_path, where):
    nb = with_cells(NUMPY_CHAPTER, **{where: [HUNG]})
    path = write(nb, tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    start = time.monotonic()
    result = grade(path, LIMITS)
    assert time.monotonic() - start < LIMITS.timeout
    items = items_of(result)
    notebook = items.pop("notebook")
    assert notebook["verdict"] == TIMEOUT and notebook["key"] == "common.timeout_in_cell", notebook
    assert {i["verdict"] for i in items.values()} == {PASS}, items  # every other item was judged
    message = " ".join(notebook["message"].split())
    assert f"cell {position_of(nb, HUNG)} (“x = 0”)" in message and f"after {STEP:g} s" in message, message
    assert "your line: x += 1" in message or "your line: while True:" in message, message
    assert "--timeout" in message


def test_a_function_that_hangs_costs_its_own_items_only(tmp_path):
    # The wrapper loops only on hidden cases (more than 3 tokens): the worked
    # examples run; the items before and after it are judged as usual.
    loop = ("_solved = tied_embedding_grad\n\n"
            "def tied_embedding_grad(tokens, targets, E):\n"
            "    while len(tokens) > 3:\n"
            "        pass\n"
            "    return _solved(tokens, targets, E)")
    path = write(with_cells(NUMPY_CHAPTER, after=[loop]), tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    items = items_of(grade(path, LIMITS))
    stuck = items.pop("tied_embedding_grad")
    assert stuck["verdict"] == TIMEOUT and stuck["key"] == "common.timeout_in_check", stuck
    message = " ".join(stuck["message"].split())
    assert "your line: while len(tokens) > 3:" in message and "--timeout" in message, message
    assert {name: i["verdict"] for name, i in items.items()} == {name: PASS for name in items}


def test_in_the_terminal_the_message_names_the_cell_and_the_option(tmp_path):
    nb = with_cells(NUMPY_CHAPTER, [HUNG])
    path = write(nb, tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = grader("check", str(path), "--lang", "es", "--timeout", "30", "--json")
    items = json.loads(done.stdout)["items"]
    assert done.returncode == 1 and [i["verdict"] for i in items[1:]] == [PASS] * (len(items) - 1), items
    assert items[0]["verdict"] == TIMEOUT and f"celda {position_of(nb, HUNG)}" in items[0]["message"]
    assert "--timeout" in items[0]["message"] and "15 s" in items[0]["message"]


# ---------------------------------------------------------------- from a summary, no kernel

def judged(ch, summary: dict, stopped: str, shown, limits=Limits(timeout=20)) -> list:
    """The verdicts of a run that sent no facts, under ``limits``."""
    return judge_notebook(ch, {}, summary, stopped, disk_cache, shown, timeout_s=limits.timeout,
                    step_s=limits.step_seconds, memory_bytes=limits.memory)


def test_a_stuck_item_and_a_stuck_cell_are_named_in_every_language():
    ch = chapter(NUMPY_CHAPTER)
    shown = [(2, "import numpy as np"), (5, "while True:")]
    summary = {"cells": [{"cell": 0, "passed": True},
                         {"cell": 1, "passed": False, "timed_out": 10.0,
                          "error": {"type": "KeyboardInterrupt", "message": "", "line": "x += 1"}}],
               "probes": "done", "stuck": {"sample_next": "while True:"}, "stuck_after": {"sample_next": 2.5}}
    found = judged(ch, summary, "", shown)
    for lang in LANGUAGES:
        items = items_of(Result(ROOT / "x.ipynb", ch.id, verdicts=found), lang)
        assert items["notebook"]["verdict"] == TIMEOUT and "5" in items["notebook"]["message"]
        assert "x += 1" in items["notebook"]["message"] and "10" in items["notebook"]["message"]
        assert items["sample_next"]["verdict"] == TIMEOUT and "while True:" in items["sample_next"]["message"]
        assert any(f"2{mark}5" in items["sample_next"]["message"] for mark in ".,")  # the seconds it was given
        assert all("--timeout" in items[name]["message"] for name in ("notebook", "sample_next"))
    # no facts came for the others: not judged, yet not called timeouts either
    assert all(v.status != TIMEOUT for v in found if v.item not in ("notebook", "sample_next"))


def test_at_the_hard_stop_the_item_running_is_the_one_named():
    ch = chapter(NUMPY_CHAPTER)
    names = [item.name for item in ch.items]
    summary = {"cells": [{"cell": 0, "passed": True}], "probes": "timeout", "stuck": {names[0]: "a"},
               "timeout": {"where": "checks", "item": names[2], "line": "b"}}
    found = {v.item: v for v in judged(ch, summary, TIMEOUT, [])}
    assert found[names[0]].finding.params["line"] == "a" and found[names[0]].finding.params["seconds"] == "10"
    assert found[names[2]].finding.key == "common.timeout_notebook_in_check"
    assert found[names[2]].finding.params["line"] == "b" and found[names[2]].finding.params["seconds"] == "20"
    assert found[names[1]].finding.key == "common.timeout"
    # the notebook's whole time ran out there: its line was running, not the mistake
    message = items_of(Result(ROOT / "x.ipynb", ch.id, verdicts=list(found.values())), "en")[names[2]]["message"]
    assert "the notebook's 20 s ran out" in message and "it was running: b" in message and "your line" not in message


def test_a_cell_running_when_the_notebook_time_ran_out_says_so():
    ch = chapter(NUMPY_CHAPTER)
    summary = {"cells": [{"cell": 0, "passed": True}], "probes": "not_run",
               "timeout": {"where": "cell", "cell": 1, "line": "x += 1"}}
    notebook = judged(ch, summary, TIMEOUT, [(2, "import numpy"), (5, "while True:")])[0]
    message = items_of(Result(ROOT / "x.ipynb", ch.id, verdicts=[notebook]), "en")["notebook"]["message"]
    assert "the notebook's 20 s ran out while cell 5" in message and "it was running: x += 1" in message, message


@pytest.mark.parametrize("summary", [
    {"cells": [], "probes": "done", "stuck": ["sample_next"]},
    {"cells": [], "probes": "done", "stuck": {"sample_next": 3}},
    {"cells": [{"cell": 0, "passed": False, "timed_out": True}], "probes": "done"},
    {"cells": [{"cell": 0, "passed": False, "timed_out": -1}], "probes": "done"},
    {"cells": [], "probes": "done", "stuck": {"sample_next": ""}, "stuck_after": {"sample_next": "5"}},
    {"cells": [], "probes": "timeout", "timeout": {"where": "checks", "item": 3, "line": ""}},
])
def test_a_summary_of_another_shape_is_refused(summary):
    assert not valid_summary(summary)


def test_the_shapes_the_worker_writes_are_accepted():
    assert valid_summary({"cells": [{"cell": 0, "passed": False, "timed_out": 4.0}], "probes": "done",
                          "stuck": {"sample_next": ""}, "stuck_after": {"sample_next": 2.5},
                          "timeout": {"where": "checks", "item": "sample_next", "line": ""}})


# ---------------------------------------------------------------- the worker's watch, no kernel

def test_after_a_step_was_cut_each_stuck_step_takes_at_most_half_of_the_time_left():
    """A function that hangs is called by several cells and by its item's checks (a cold
    read: one hanging helper, cut in two cells at half of --timeout each, left no time for
    any other item).  The first stuck step gets its whole step; after a cut each step gets
    at most half of what is left, so the rest always keeps as much as the stuck one took."""
    hook = ProbeHook("spec.json", "grader.chapters.gpt_head.probe", [], io.BytesIO(),
                     deadline=time.monotonic() + 100, step=50)
    with hook.lock:
        hook.begin(0)
    assert hook.limit == 50
    hook.cut_after = hook.limit  # the watch cut it
    hook.deadline = time.monotonic() + 40  # 40 s left
    with hook.lock:
        hook.begin(1)
    assert 19 < hook.limit <= 20
    hook.deadline = time.monotonic() + 200  # more left than the step: the step holds
    with hook.lock:
        hook.begin("checks")
    assert hook.limit == 50


def test_the_watch_cuts_a_step_at_its_end_and_stops_when_the_notebook_ends():
    hook = ProbeHook("spec.json", "grader.chapters.gpt_head.probe", [], io.BytesIO(), step=0.05)
    watch = threading.Thread(target=hook.watch_deadline, daemon=True)
    watch.start()
    with hook.lock:
        hook.begin(3)  # a cell that never answers (no kernel here: nothing to interrupt)
        assert hook.wake.wait_for(lambda: hook.cut == 3, timeout=10)
    assert hook.end() == 3 and hook.end() is None  # the cut is reported once, with its cell
    hook.finish()
    watch.join(10)
    assert not watch.is_alive() and hook.timeout is None  # no deadline: nothing else was stopped


def test_without_any_limit_the_watch_waits_until_the_notebook_ends():
    hook = ProbeHook("spec.json", "grader.chapters.gpt_head.probe", [], io.BytesIO())
    watch = threading.Thread(target=hook.watch_deadline, daemon=True)
    watch.start()
    with hook.lock:
        hook.begin(0)
    hook.finish()
    watch.join(10)
    assert not watch.is_alive() and hook.cut is None


# ---------------------------------------------------------------- a Ctrl-C and the step it was sent for

@pytest.fixture
def guarded():
    """The kernel's ``guarded``, run in this process; this process stands for the kernel.

    The Ctrl-Cs these tests send go to this process: they must not reach the grader's
    own Ctrl-C catching (``grader.stopping``), which an earlier test in this process may
    have set up, or every later grading here would stop as if the user pressed Ctrl-C
    (``stopping.requested()`` reads the signal's wakeup pipe)."""
    scope = {"saved": SimpleNamespace(open=open), "signal": signal}
    exec(compile(GUARD, "<tied-guard>", "exec"), scope)
    previous, stopped_before = signal.getsignal(signal.SIGINT), stopping.requested()
    wakeup = signal.set_wakeup_fd(-1)
    try:
        yield scope["guarded"]
    finally:
        signal.set_wakeup_fd(wakeup)
        signal.signal(signal.SIGINT, previous)
    assert stopping.requested() == stopped_before


THIS_PROCESS = SimpleNamespace(km=SimpleNamespace(provisioner=SimpleNamespace(
    process=SimpleNamespace(pid=os.getpid()))))


def ctrl_c(aim_file, aim):
    """The worker's Ctrl-C aimed at ``aim``; Python runs the handler at the loop's jump back."""
    interrupt(THIS_PROCESS, str(aim_file), aim)
    for _ in range(3):
        pass
    return "ran to its end"


def test_a_ctrl_c_stops_the_step_it_was_aimed_at(guarded, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        guarded(str(tmp_path / "aim"), "sample_next", ctrl_c, tmp_path / "aim", "sample_next")


def test_a_late_ctrl_c_for_the_step_before_does_not_stop_this_one(guarded, tmp_path):
    assert guarded(str(tmp_path / "aim"), "sample_next", ctrl_c, tmp_path / "aim", "checks") == "ran to its end"


def test_the_deadline_stops_whatever_step_runs(guarded, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        guarded(str(tmp_path / "aim"), "sample_next", ctrl_c, tmp_path / "aim", EVERY_STEP)


def test_once_a_step_has_returned_its_ctrl_c_lands_nowhere(guarded, tmp_path):
    assert guarded(str(tmp_path / "aim"), "sample_next", lambda: "done") == "done"
    assert ctrl_c(tmp_path / "aim", "sample_next") == "ran to its end"  # until ipykernel's handler is back


class RecordingKernel:
    """Answers every request at once, "ok"; keeps what each request asked for."""

    def __init__(self):
        self.sent: list[dict] = []
        self.kc = SimpleNamespace(execute=self.execute)

    def execute(self, code, **options):
        self.sent.append(options)
        return str(len(self.sent))

    def get_message(self, stream, timeout):
        return {"parent_header": {"msg_id": str(len(self.sent))}, "content": {"status": "ok"}}

    def is_alive(self):
        return True


def test_no_step_of_the_checks_lets_an_error_abort_the_next():
    # ipykernel aborts the requests that reach it soon after one that raised (an item's
    # checks interrupted) unless told not to: on a loaded machine, the next item's checks.
    hook = ProbeHook("spec.json", "grader.chapters.gpt_head.probe", ["a", "b"], io.BytesIO())
    kernel = RecordingKernel()
    hook.run_probes(kernel)
    assert len(kernel.sent) == 3 and all(options["stop_on_error"] is False for options in kernel.sent)

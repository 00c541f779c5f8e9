"""Grading one submission, step by step:

1. ``submission.load`` reads and validates the bytes (a bad file stops here);
2. ``prepare`` copies them into a fresh folder, with the probe spec beside them, and
   writes the ``job.Job`` that tells the worker where everything is;
3. ``supervisor.supervise`` runs ``grader.pipeline.supervise.worker`` in its own process group under the
   time and memory limits, while the references are computed here in a thread;
4. ``collect`` reads the facts and the summary the worker sent through its channel;
5. ``judge.notebook.judge_notebook`` judges them, and names what stopped the items not reached.

The submission itself is only ever read.  After Ctrl-C (``stopping.requested()``)
no worker starts, and each running one is killed with its kernel.
"""
from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

from grader import disk_cache, expected_outputs
from grader.cells import code_cells, source_text
from grader.chapters import chapter
from grader.outcome import Finding
from grader.pipeline.judge.broken_cells import with_broken_cells
from grader.pipeline.judge.items import with_dtype_sources, with_stand_in_notes
from grader.pipeline.judge.notebook import judge_notebook
from grader.pipeline.prepare.job import FILE as JOB_FILE
from grader.pipeline.prepare.job import Job
from grader.pipeline.prepare.probe_bundle import write_spec
from grader.pipeline.submission import BadSubmission, Submission, load
from grader.pipeline.supervise.supervisor import POLL, Limits, supervise
from grader.registry import Chapter
from grader.result import Result
from grader.stopping import Interrupted, requested


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
        stopped, log, channel = supervise(job, limits)
        while refs.is_alive():  # polled, so that Ctrl-C is not kept waiting
            if requested():
                raise Interrupted
            refs.join(POLL)
        facts, summary = collect(channel)
    cells = json.loads(sub.data.decode("utf-8"))["cells"]
    judged = judge_notebook(ch, facts, summary, stopped, disk_cache, code_cells(cells), timeout_s=limits.timeout,
                      step_s=limits.step_seconds, memory_bytes=limits.memory)
    sources = [source_text(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    found = with_broken_cells(with_dtype_sources(with_stand_in_notes(ch, judged, sources)), cells)
    result = Result(path, sub.chapter, sub.sha256, found, log=log)
    result.seconds = time.monotonic() - start
    return result


def warm_references(ch: Chapter) -> None:
    """Compute the references while the kernel runs.  A failure here is left to the
    judging, which computes the reference again and reports the item as not judged."""
    try:
        disk_cache.warm_references(ch)
    except Exception:
        pass


def prepare(sub: Submission, ch: Chapter, tmp: Path) -> Job:
    work = tmp / "work"  # the kernel's working directory: files it writes land here
    work.mkdir()
    notebook = work / f"{ch.id}.ipynb"
    notebook.write_bytes(expected_outputs.install(sub.data, ch.id))  # the solution's worked-example outputs
    (tmp / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    write_spec(ch, tmp / "spec.json")
    job = Job(path=str(tmp / JOB_FILE), notebook=str(notebook), spec=str(tmp / "spec.json"),
              ini=str(tmp / "pytest.ini"), probe_module=ch.probe_module, items=tuple(item.name for item in ch.items))
    job.write()
    return job


def collect(channel: str) -> tuple[dict[str, list[list]], dict]:
    """Every record the worker sent for each item, in order, and its last summary.

    The channel is the worker's alone, but the facts in it are what the student's
    kernel returned: a line counts only as ``{"item": str, "facts": list}`` or
    ``{"summary": ...}`` of the worker's shape (others are skipped: a kill can cut the
    last one short).  The judge accepts an item only with exactly one record
    (``judge.items.judge_records``).
    """
    records: dict[str, list[list]] = {}
    summary = None
    for line in channel.split("\n"):
        record = _json(line)
        if isinstance(record, dict) and isinstance(record.get("item"), str) and isinstance(record.get("facts"), list):
            records.setdefault(record["item"], []).append(record["facts"])
        elif isinstance(record, dict) and valid_summary(record.get("summary")):
            summary = record["summary"]
    return records, summary or {}


def _json(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _strings(record, keys) -> bool:
    return isinstance(record, dict) and all(isinstance(record.get(k), str) for k in keys)


def _seconds(value) -> bool:
    """A step's time limit as the worker sends it: a positive number of seconds."""
    return type(value) in (int, float) and 0 < value < 1e6


def valid_summary(summary) -> bool:
    """Has ``summary`` the shape the worker writes?  ``{"cells": [{"cell": int, "passed":
    bool, "error"?: {"type", "message", "line": str}, "timed_out"?: seconds it had}],
    "probes": str, "stuck"?: {item: line}, "stuck_after"?: {item: seconds}, "timeout"?:
    {"where": "start" | "checks" | "cell", "cell": int (in a cell), "item"?: str, "line": str}}``"""
    if not isinstance(summary, dict) or not isinstance(summary.get("probes"), str):
        return False
    cells = summary.get("cells")
    if not isinstance(cells, list) or not all(
        isinstance(c, dict) and type(c.get("cell")) is int and type(c.get("passed")) is bool
        and ("error" not in c or _strings(c["error"], ("type", "message", "line")))
        and ("timed_out" not in c or _seconds(c["timed_out"]))
        for c in cells
    ):
        return False
    stuck = summary.get("stuck", {})
    if not isinstance(stuck, dict) or not all(isinstance(line, str) for line in stuck.values()):
        return False
    after = summary.get("stuck_after", {})
    if not isinstance(after, dict) or not all(_seconds(s) for s in after.values()):
        return False
    timeout = summary.get("timeout")
    return timeout is None or (_strings(timeout, ("where", "line")) and timeout["where"] in ("start", "checks", "cell")
                               and (timeout["where"] != "cell" or type(timeout.get("cell")) is int)
                               and ("item" not in timeout or _strings(timeout, ("item",))))

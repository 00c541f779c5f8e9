"""The channel from the kernel is not trusted, the worker is honest, and nothing the
grader does on one submission stops a batch or prints a traceback."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import grader.outputs.gradebook as gradebook
import grader.pipeline.batch as batch
import grader.pipeline.runner as runner
import grader.pipeline.supervise.supervisor as supervisor
from conftest import grader
from grader.chapters import chapter
from grader.pipeline.submission import load
from grader.registry import Finding
from grader.result import Result
from notebooks import ROOT, solution, with_cells, write

CHAPTER = "04_gpt_head"  # plain NumPy: the quickest to grade
FIRST_ITEM = "cross_entropy_from_logits"

# Cells appended to the solution, each doing something to the files the grader read
# back before its channel was sealed ("..": the job's folder, beside the kernel's
# working directory), and one breaking the checks themselves.
TAMPERING = {
    "mkdir_facts": "import os\nos.mkdir('../facts.jsonl')",
    "mkdir_summary": "import os\nos.mkdir('../summary.json')",
    "link_facts": "import os\nos.symlink('/dev/zero', '../facts.jsonl')",
    "sparse_facts": "open('../facts.jsonl', 'w').truncate(2**30)",
    "forged_record": "import json\nopen('../facts.jsonl', 'a').write("
                     f"json.dumps({{'item': '{FIRST_ITEM}', 'facts': []}}) + '\\n')",
    # The checks keep their own exec from before the first cell; break that one.
    "broken_checks": "import sys\nsys.modules['_tied_saved'].exec = None  # the checks stop with a TypeError",
}
# What each one gets: the notebook item's and the first item's verdict or key.  The
# job's folder is no longer read: what a cell puts there changes nothing.
EXPECTED = {
    "mkdir_facts": ("pass", "pass"),
    "mkdir_summary": ("pass", "pass"),
    "link_facts": ("pass", "pass"),
    "sparse_facts": ("pass", "pass"),
    "forged_record": ("pass", "pass"),
    "broken_checks": ("pass", "common.probe_failed"),
}


@pytest.fixture(scope="module")
def tampered(tmp_path_factory):
    root = tmp_path_factory.mktemp("tampered")
    for name, cell in TAMPERING.items():
        write(with_cells(CHAPTER, after=[cell]), root / name / f"{CHAPTER}.ipynb")
    out = root / "out"
    start = time.monotonic()
    done = grader("grade", str(root), "--jobs", "2", "--out", str(out), "--lang", "en")
    assert time.monotonic() - start < 300
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    entries = json.loads((out / "gradebook.json").read_text())["submissions"]
    return {e["student"]: e for e in entries.values()}, out


def outcome(item: dict) -> str:
    return item["verdict"] if item["verdict"] == "pass" else item["key"]


@pytest.mark.parametrize("name", TAMPERING)
def test_tampering_with_the_channel_never_crashes_the_grader(tampered, name):
    entries, _ = tampered
    items = {i["item"]: i for i in entries[name]["items"]}
    assert (outcome(items["notebook"]), outcome(items[FIRST_ITEM])) == EXPECTED[name], items


def test_the_worker_log_is_kept_when_the_checks_did_not_finish(tampered):
    _, out = tampered
    log = (out / "logs" / f"broken_checks.{CHAPTER}.log").read_text()
    assert "The checks stopped" in log and "TypeError" in log
    assert "passed" in log  # pytest's own report: it no longer goes to /dev/null
    assert not (out / "logs" / f"forged_record.{CHAPTER}.log").exists()  # every check ran there


def test_check_keeps_the_log_where_asked(tmp_path):
    path = write(with_cells(CHAPTER, after=[TAMPERING["broken_checks"]]), tmp_path / f"{CHAPTER}.ipynb")
    log = tmp_path / "logs" / "worker.log"
    done = grader("check", str(path), "--keep-log", str(log), "--lang", "en")
    assert done.returncode == 1
    assert "The checks stopped" in log.read_text()


def test_the_worker_reports_the_checks_honestly(tmp_path):
    """nbval's await_reply returns None: the worker reads the probes' reply itself."""
    sub = load(solution(CHAPTER))
    job = runner.prepare(sub, chapter(CHAPTER), tmp_path)
    stopped, log, channel = supervisor.supervise(job, supervisor.Limits(timeout=120))
    _, summary = runner.collect(channel)
    assert (stopped, summary["probes"]) == ("", "done"), log


# ---------------------------------------------------------------- the grader's own failures

def test_a_crash_on_one_submission_gives_it_a_row_and_the_batch_goes_on(tmp_path, monkeypatch):
    def grade(path, limits):
        if path.name == "crash.ipynb":
            raise RuntimeError("a bug in the grader")
        return Result(path, bad=Finding("bad.empty", {"path": str(path)}))

    monkeypatch.setattr(runner, "grade", grade)
    book = gradebook.Gradebook(tmp_path / "out", "es")
    todo = [("ana", tmp_path / "crash.ipynb"), ("bo", tmp_path / "empty.ipynb")]
    batch.run_pool(todo, 2, supervisor.Limits(), lambda student, path, result, done: book.add(student, result))
    rows = {row["student"]: row for row in book.rows()}
    assert rows["ana"]["verdict"] == "grader_error" and "RuntimeError: a bug in the grader" in rows["ana"]["message"]
    assert rows["ana"]["message"].startswith("No se pudo calificar")  # in the student's language
    assert rows["bo"]["verdict"] == "bad_file"
    assert not book.is_current(tmp_path / "crash.ipynb")  # a rerun grades it again


def test_never_a_traceback_when_the_grader_itself_fails():
    crash = ("import sys\nimport grader.pipeline.runner as runner\n"
             "def grade(*args, **kwargs):\n    raise ZeroDivisionError('a bug in the grader')\n"
             "runner.grade = grade\n"
             "from grader.cli import main\n"
             f"sys.exit(main(['check', {str(solution(CHAPTER))!r}, '--lang', 'en']))\n")
    done = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "Could not be judged: the grader itself failed on this notebook (ZeroDivisionError: a bug in the grader). "
        "This is not your mistake; tell your teacher."]

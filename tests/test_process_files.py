"""Odd files never hang or crash the grader: a submission is read only if it is a
regular file of at most 16 MiB (no FIFO, device or symbolic link), and what the worker
sends back (facts the kernel returned, the summary) is read with a cap and a schema."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import grader.pipeline.supervise.supervisor as supervisor
from conftest import grader
from grader.pipeline.runner import collect, valid_summary
from notebooks import solution

CHAPTER = "04_gpt_head"


def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def link_to_a_notebook(path: Path) -> None:  # someone else's file, say
    path.symlink_to(solution(CHAPTER))


def dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.ipynb")


def sparse_1_gib(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(2**30)


ODD_FILES = {
    fifo: "not a regular file",
    link_to_dev_zero: "symbolic link",
    link_to_a_notebook: "symbolic link",
    dangling_link: "symbolic link",
    sparse_1_gib: "larger than 16 MiB",
}


@pytest.mark.parametrize("make", ODD_FILES, ids=lambda make: make.__name__)
def test_odd_file_gets_one_line_and_exit_2_without_hanging(tmp_path, make):
    path = tmp_path / f"{CHAPTER}.ipynb"
    make(path)
    start = time.monotonic()
    done = grader("check", str(path), "--lang", "en", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and ODD_FILES[make] in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_device_is_not_a_notebook():
    done = grader("check", "/dev/null", "--lang", "en", timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_class_folder_with_odd_entries_lists_them_as_bad_files(tmp_path):
    """os.walk opens nothing and follows no link: a FIFO cannot block the batch."""
    room = tmp_path / "class"
    for student, make in (("fifo", fifo), ("zero", link_to_dev_zero), ("big", sparse_1_gib)):
        (room / student).mkdir(parents=True)
        make(room / student / f"{CHAPTER}.ipynb")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / f"{CHAPTER}.ipynb").write_text("not json")
    (room / "linked").symlink_to(tmp_path / "elsewhere")  # a linked folder is not followed
    out = tmp_path / "out"
    start = time.monotonic()
    done = grader("grade", str(room), "--out", str(out), "--lang", "en", timeout=120)
    assert time.monotonic() - start < 60
    assert done.returncode == 1 and "Traceback" not in done.stderr
    entries = {e["student"]: e for e in json.loads((out / "gradebook.json").read_text())["submissions"].values()}
    assert {s: e["error"] for s, e in entries.items()} == {
        "fifo": "bad.special_file", "zero": "bad.symlink", "big": "bad.too_large", "linked": "bad.symlink"}


# ---------------------------------------------------------------- the kernel's channel

def record(item: str, facts: list) -> str:
    return json.dumps({"item": item, "facts": facts})


SUMMARY = {"cells": [{"cell": 0, "passed": True}, {"cell": 1, "passed": False,
                                                     "error": {"type": "E", "message": "m", "line": "x = 1"}}],
           "probes": "done"}


def test_collect_keeps_every_well_formed_record_in_order():
    lines = [
        record("a", [{"value": 1}]),
        "not json",
        json.dumps([1, 2]),
        json.dumps({"item": 3, "facts": []}),
        json.dumps({"item": "b", "facts": "not a list"}),
        "[" * 100_000,  # deeper than json can parse
        record("b", []),
        record("a", [{"value": 2}]),  # a second record: the judge refuses the item
        json.dumps({"summary": {"cells": []}}),  # not the worker's shape
        json.dumps({"summary": SUMMARY}),
        record("c", [{"value": 3}])[:-5],  # cut short by a kill
    ]
    facts, summary = collect("\n".join(lines))
    assert facts == {"a": [[{"value": 1}], [{"value": 2}]], "b": [[]]}
    assert summary == SUMMARY


def test_no_summary_when_none_came():
    assert collect(record("a", []) + "\n") == ({"a": [[]]}, {})


def test_the_channel_keeps_at_most_its_limit_and_never_blocks_the_writer(monkeypatch):
    monkeypatch.setattr(supervisor, "CHANNEL_LIMIT", 100_000)
    channel = supervisor.Channel()
    with open(channel.write_fd, "wb") as writer:  # the worker's end
        writer.write(b"x" * 1_000_000)  # ten pipe buffers: only a drained pipe takes it
    start = time.monotonic()
    assert channel.text() == "x" * 100_000
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("summary", [
    [], {"cells": []}, {"probes": "done"}, {"cells": {}, "probes": "done"},
    {"cells": [{"cell": "0", "passed": True}], "probes": "done"},
    {"cells": [{"cell": 0, "passed": 1}], "probes": "done"},
    {"cells": [{"cell": True, "passed": True}], "probes": "done"},
    {"cells": [{"cell": 0, "passed": False, "error": {"type": "E", "message": "m"}}], "probes": "done"},
    {"cells": [{"cell": 0, "passed": False, "error": "E"}], "probes": "done"},
    {"cells": [], "probes": 1},
    {"cells": [], "probes": "done", "timeout": {"where": "somewhere", "line": ""}},
    {"cells": [], "probes": "done", "timeout": {"where": "cell", "line": ""}},
    {"cells": [], "probes": "done", "timeout": {"where": "checks"}},
])
def test_a_summary_of_another_shape_is_no_summary(summary):
    assert not valid_summary(summary)


@pytest.mark.parametrize("summary", [
    SUMMARY,
    {"cells": [], "probes": "timeout", "timeout": {"where": "checks", "line": "while True: pass"}},
    {"cells": [], "probes": "not_run", "timeout": {"where": "cell", "cell": 3, "line": ""}},
])
def test_the_workers_summaries_are_valid(summary):
    assert valid_summary(summary)

"""Odd files never hang or crash the grader: a submission is read only if it is a
regular file of at most 16 MiB (no FIFO, device or symbolic link), and the facts and
summary files the kernel could tamper with are read with caps and a schema."""
from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

from conftest import grader
from grader.runner import FACTS_LIMIT, collect, valid_summary
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

def job(tmp_path: Path) -> dict:
    return {"facts": str(tmp_path / "facts.jsonl"), "summary": str(tmp_path / "summary.json")}


def record(item: str, facts: list) -> str:
    return json.dumps({"item": item, "facts": facts})


SUMMARY = {"cells": [{"cell": 0, "passed": True}, {"cell": 1, "passed": False,
                                                     "error": {"type": "E", "message": "m", "line": "x = 1"}}],
           "probes": "done"}


def test_collect_keeps_every_well_formed_record_in_order(tmp_path):
    lines = [
        record("a", [{"value": 1}]),
        "not json",
        json.dumps([1, 2]),
        json.dumps({"item": 3, "facts": []}),
        json.dumps({"item": "b", "facts": "not a list"}),
        "[" * 100_000,  # deeper than json can parse
        record("b", []),
        record("a", [{"value": 2}]),  # a forged second record: the judge refuses the item
        record("c", [{"value": 3}])[:-5],  # cut short by a kill
    ]
    Path(job(tmp_path)["facts"]).write_text("\n".join(lines))
    Path(job(tmp_path)["summary"]).write_text(json.dumps(SUMMARY))
    facts, summary = collect(job(tmp_path))
    assert facts == {"a": [[{"value": 1}], [{"value": 2}]], "b": [[]]}
    assert summary == SUMMARY


@pytest.mark.parametrize("what", ["facts", "summary"])
@pytest.mark.parametrize("make", [os.mkdir, fifo, link_to_dev_zero, dangling_link],
                         ids=lambda make: make.__name__)
def test_collect_reads_nothing_but_regular_files(tmp_path, what, make):
    paths = job(tmp_path)
    Path(paths["facts"]).write_text(record("a", []) + "\n")
    Path(paths["summary"]).write_text(json.dumps(SUMMARY))
    Path(paths[what]).unlink()
    make(Path(paths[what]))
    start = time.monotonic()
    facts, summary = collect(paths)
    assert time.monotonic() - start < 5
    assert (facts, summary) == (({}, SUMMARY) if what == "facts" else ({"a": [[]]}, {}))


def test_collect_refuses_a_sparse_gigabyte_without_reading_it(tmp_path):
    paths = job(tmp_path)
    with open(paths["facts"], "wb") as f:
        f.truncate(2**30)
        f.write(record("a", []).encode())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    start = time.monotonic()
    facts, summary = collect(paths)
    assert time.monotonic() - start < 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < FACTS_LIMIT // 1024
    assert (facts, summary) == ({}, {})


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

"""Nothing the kernel or anything it starts can write is read as a verdict input.

A stub notebook starts a forger that rewrites the job folder's ``summary.json`` (every
cell passed) and ``facts.jsonl`` (the solution's own facts, computed here in-process)
whenever they differ, every few milliseconds, until it is killed.  Three ways to start
it: a detached daemon (fork, ``setsid``, fork), a ``setsid`` child, and a process forked
from inside a check (the stub's function forks when the probe calls it).  Before the
sealed channel each won points (the summary is read from that folder, the facts too);
now the summary and the facts reach the grader through a pipe only the worker holds,
and each earns nothing, with and without ``--sandbox``.
"""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import nbformat
import psutil
import pytest

from conftest import grader
from grader.chapters import chapter
from grader.pipeline.prepare.probe_bundle import run_in_process
from inprocess import run_cells
from notebooks import ROOT, write

CHAPTER = "04_gpt_head"

# Runs in the forger's process: ``plant`` maps the files to rewrite to their forged
# text; ``pids`` (a folder the sandbox hides) gets one file per forger.
FORGER = '''
def _tied_forger(plant, pids):
    import os, time
    try:
        open(os.path.join(pids, str(os.getpid())), "w").close()
    except OSError:
        pass
    job = os.path.dirname(os.path.abspath("."))
    plant = {name: text.encode() for name, text in plant.items()}
    end = time.monotonic() + 120
    while time.monotonic() < end:
        for name, data in plant.items():
            path = os.path.join(job, name)
            try:
                with open(path, "rb") as f:
                    same = f.read() == data
            except OSError:
                same = False
            if not same:
                try:
                    with open(path + ".forged", "wb") as f:
                        f.write(data)
                    os.replace(path + ".forged", path)
                except OSError:
                    pass
        time.sleep(0.002)
    os._exit(0)
'''

STARTS = {
    "daemon": '''
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _tied_forger({plant!r}, {pids!r})
    os._exit(0)
os.wait()
''',
    "setsid_child": '''
import subprocess, sys
with open("forger.py", "w") as f:  # in the kernel's working folder
    f.write({program!r})
subprocess.Popen([sys.executable, "forger.py"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
''',
    # Appended after the stub's own cells: the check of the first item calls it and forks.
    "fork_in_check": '''
import os
def cross_entropy_from_logits(logits, targets):
    if os.environ.get("TIED_FORGER") is None:
        os.environ["TIED_FORGER"] = "started"
        if os.fork() == 0:
            _tied_forger({plant!r}, {pids!r})
    raise NotImplementedError
''',
}


@pytest.fixture(scope="module")
def forged(tmp_path_factory) -> Path:
    """The solution's facts and an all-passed summary, as the files the worker wrote."""
    folder = tmp_path_factory.mktemp("forged")
    namespace, cells = run_cells(nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4))
    assert all(c["passed"] for c in cells)
    facts = run_in_process(chapter(CHAPTER), namespace)
    (folder / "facts.jsonl").write_text("".join(json.dumps({"item": k, "facts": v}) + "\n" for k, v in facts.items()))
    summary = {"cells": [{"cell": n, "passed": True} for n in range(len(cells))], "probes": "done"}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def hostile_stub(how: str, forged: Path, pids: Path, path: Path) -> Path:
    nb = nbformat.read(ROOT / "exercises" / f"{CHAPTER}.ipynb", as_version=4)
    plant = {name: (forged / name).read_text() for name in ("summary.json", "facts.jsonl")}
    program = textwrap.dedent(FORGER) + f"\n_tied_forger({plant!r}, {str(pids)!r})\n"
    start = STARTS[how].format(plant=plant, pids=str(pids), program=program)
    cell = nbformat.v4.new_code_cell(textwrap.dedent(FORGER) + start)
    if nb.nbformat_minor < 5:  # cells have ids from format 4.5 on
        del cell["id"]
    if how == "fork_in_check":
        nb.cells.append(cell)
    else:
        nb.cells.insert(1, cell)
    return write(nb, path)


@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "sandbox"])
@pytest.mark.parametrize("how", STARTS)
def test_a_forger_the_stub_starts_earns_nothing(forged, tmp_path, how, sandbox, request):
    if sandbox:
        request.getfixturevalue("bwrap_ready")
    pids = tmp_path / "pids"
    pids.mkdir()
    path = hostile_stub(how, forged, pids, tmp_path / "stub" / f"{CHAPTER}.ipynb")
    done = grader("check", str(path), "--json", "--lang", "en", *(["--sandbox"] if sandbox else []))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert sandbox or list(pids.iterdir()), "the forger never started"
    assert [i for i in report["items"] if i["points"]] == [], report["items"]
    alive = [int(p.name) for p in pids.iterdir() if psutil.pid_exists(int(p.name))]
    for pid in alive:  # the next capability (containment) ends them; here the points matter
        try:
            os.kill(pid, 9)
        except OSError:
            pass

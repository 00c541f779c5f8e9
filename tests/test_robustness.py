"""A catalog of broken, hostile and odd submissions (issue: the grader survives anything).

Every case asserts the verdict, a time bound and that the submission's bytes are
unchanged.  Time bounds are generous ceilings for a loaded 2-core machine, there to
catch a hang, not to measure speed.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import nbformat
import pytest

from conftest import grader
from notebooks import ROOT, with_cells, write

CHAPTER = "01_linen"
# Plain NumPy: its kernel starts in a second or two and imports no JAX, so that the
# limits below can be short (the time limit counts from the kernel's start: on a loaded
# 2-core machine, 4 s did not always reach cell 2).  Timeouts, memory and reports work
# the same for every chapter.
NUMPY_CHAPTER = "04_gpt_head"
SOLUTION = ROOT / "solutions" / f"{CHAPTER}.ipynb"
WRONG = {"TiedIO.__call__": 'embedding = self.param("embedding", nn.initializers.normal(stddev=0.02), (self.vocab_size, self.d_model))\n'
            'return embedding[token_ids] @ embedding'}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def timed_check(path: Path, *args, bound: float):
    before = digest(path) if path.is_file() else None
    start = time.monotonic()
    done = grader("check", str(path), "--lang", "en", *args)
    elapsed = time.monotonic() - start
    assert elapsed < bound, f"took {elapsed:.0f} s"
    if before is not None:
        assert digest(path) == before, "the submission was modified"
    return done


# ---------------------------------------------------------------- bad files

def notebook_json(**changes) -> bytes:
    nb = json.loads(SOLUTION.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            nb["metadata"].pop(key, None)
        else:
            nb[key] = value
    return json.dumps(nb).encode()


BAD_FILES = {
    "not_json": (b"this is not json {", "not valid JSON"),
    "not_notebook": (b'{"hello": "world"}', "not a Jupyter notebook"),
    "json_list": (b"[1, 2, 3]", "not a Jupyter notebook"),
    "old_nbformat": (notebook_json(nbformat=3), "notebook format 3"),
    "no_kernelspec": (notebook_json(kernelspec=None), "names no kernel"),
    "not_tied": (notebook_json(metadata={"kernelspec": {"name": "python3"}}), "not a Tied exercise"),
    "empty": (b"", "is empty"),
    "whitespace": (b"   \n", "is empty"),
    "latin1": ('{"cells": [], "x": "caf\u00e9"}'.encode("latin-1"), "not UTF-8"),
    "deep_json": (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_file_gets_one_line_and_exit_2(tmp_path, name):
    data, words = BAD_FILES[name]
    path = tmp_path / "submission.ipynb"
    path.write_bytes(data)
    done = timed_check(path, bound=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert path.read_bytes() == data


def test_notebook_of_another_chapter(tmp_path):
    path = write(nbformat.read(SOLUTION, as_version=4), tmp_path / "mine.ipynb")
    done = timed_check(path, "--chapter", "02_nnx", bound=30)
    assert done.returncode == 2 and "chapter 01_linen, not of chapter 02_nnx" in done.stderr


@pytest.mark.parametrize("target", ["missing.ipynb", "."])
def test_missing_file_or_folder(target):
    done = grader("check", target)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [[], ["check"], ["frobnicate"], ["check", "x.ipynb", "--timeout", "-1"],
                                  ["check", "x.ipynb", "--lang", "fr"], ["grade"], ["grade", ".", "--jobs", "0"]])
def test_wrong_cli_call_prints_usage_and_exits_2(argv):
    done = grader(*argv)
    assert done.returncode == 2
    assert "usage:" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- misbehaving notebooks

MISBEHAVING = {
    # name: (chapter, extra cells before, after, wrong regions, expected {item: verdict or key})
    "sys_exit": (NUMPY_CHAPTER, ["import sys\nsys.exit(3)"], [], None,
                 {"notebook": "common.cell_error", "cross_entropy_from_logits": "pass"}),
    "os_exit": (NUMPY_CHAPTER, [], ["import os\nos._exit(1)"], None,
                {"notebook": "common.kernel_died", "cross_entropy_from_logits": "not_reached"}),
    "megabytes": (NUMPY_CHAPTER, ["print('x' * 5_000_000)"], [], None,
                  {"notebook": "pass", "cross_entropy_from_logits": "pass"}),
    "writes_and_chdir": (NUMPY_CHAPTER, ["import os\nopen('stray.txt', 'w').write('hi')\nos.makedirs('sub', exist_ok=True)\nos.chdir('sub')"],
                         [], None, {"notebook": "pass", "cross_entropy_from_logits": "pass"}),
    "patched_comparisons": (CHAPTER, [], ["import numpy as np, sys, types\nimport jax.numpy as jnp\n"
                                          "np.allclose = lambda *a, **k: True\nnp.array_equal = lambda *a, **k: True\n"
                                          "np.testing.assert_allclose = lambda *a, **k: None\njnp.allclose = lambda *a, **k: True\n"
                                          "import grader\ngrader.check = lambda *a, **k: None\n"
                                          "sys.modules['grader.pipeline.judge.items'] = types.SimpleNamespace()\nsys.modules['grader.registry'] = None"],
                            WRONG, {"tied_io_embed": "pass", "TiedIO.__call__": "linen.missing_transpose"}),
}


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    root = tmp_path_factory.mktemp("misbehaving")
    paths = {}
    for name, (chapter, before, after, regions, _) in MISBEHAVING.items():
        paths[name] = write(with_cells(chapter, before, after, regions), root / name / f"{chapter}.ipynb")
    digests = {name: digest(p) for name, p in paths.items()}
    out = root / "out"
    start = time.monotonic()
    done = grader("grade", *(str(p.parent) for p in paths.values()), "--jobs", "2", "--out", str(out), "--lang", "en")
    elapsed = time.monotonic() - start
    assert done.returncode in (0, 1), done.stderr
    entries = json.loads((out / "gradebook.json").read_text())["submissions"]
    return {e["student"]: e for e in entries.values()}, paths, digests, elapsed, root


@pytest.mark.parametrize("name", MISBEHAVING)
def test_misbehaving_notebook_gets_a_verdict(misbehaving, name):
    entries, paths, digests, elapsed, root = misbehaving
    assert elapsed < 600
    assert digest(paths[name]) == digests[name]
    got = {i["item"]: (i["verdict"] if i["verdict"] in ("pass", "not_reached") else i["key"]) for i in entries[name]["items"]}
    for item, want in MISBEHAVING[name][-1].items():
        assert got[item] == want, (item, got)
    assert all(len(i["message"]) <= 500 for i in entries[name]["items"])


def test_stray_files_stay_out_of_the_submission_folder(misbehaving):
    _, paths, *_ = misbehaving
    folder = paths["writes_and_chdir"].parent
    assert sorted(p.name for p in folder.iterdir()) == [paths["writes_and_chdir"].name]


def test_infinite_loop_times_out_at_the_stuck_line(tmp_path):
    # The kernel is interrupted at the deadline, as nbval does, so the traceback names the line.
    nb = with_cells(NUMPY_CHAPTER, ["while True: pass"])
    path = write(nb, tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = timed_check(path, "--timeout", "8", "--json", bound=8 + 45)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["items"][0]["verdict"] == "timeout"
    # the items after it are judged when the rest of the notebook fits in the time left
    # (tests/test_terminal_timeout.py), else they time out too
    notebook = " ".join(report["items"][0]["message"].split())
    # the cell as JupyterLab shows it (its position among all cells, its first line), and how to give more time
    position = next(n for n, cell in enumerate(nb.cells, 1) if cell.source == "while True: pass")
    assert f"cell {position} (“while True: pass”)" in notebook and "your line: while True: pass" in notebook, notebook
    assert "--timeout" in notebook


def test_loop_inside_a_graded_function_times_out_that_item_at_the_stuck_line(tmp_path):
    # The wrapper loops only on hidden cases (more than 3 tokens):
    # the notebook's own cells and the earlier items run.
    loop = ("_solved = tied_embedding_grad\n\n"
            "def tied_embedding_grad(tokens, targets, E):\n"
            "    while len(tokens) > 3: pass\n"
            "    return _solved(tokens, targets, E)")
    path = write(with_cells(NUMPY_CHAPTER, after=[loop]), tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = timed_check(path, "--timeout", "10", "--json", bound=10 + 45)
    items = {i["item"]: i for i in json.loads(done.stdout)["items"]}
    assert items["notebook"]["verdict"] == "pass"  # every cell ran: the loop is in the checks
    assert items["cross_entropy_from_logits"]["verdict"] == "pass" and items["tied_head_forward"]["verdict"] == "pass"
    assert items["tied_embedding_grad"]["verdict"] == "timeout"  # the items after it: tests/test_terminal_timeout.py
    stuck = " ".join(items["tied_embedding_grad"]["message"].split())
    assert "your line: while len(tokens) > 3: pass" in stuck, stuck


def test_a_kernel_that_ignores_the_interrupt_is_killed_after_the_grace(tmp_path):
    stubborn = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"
    nb = with_cells(NUMPY_CHAPTER, [stubborn])
    path = write(nb, tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = timed_check(path, "--timeout", "8", "--json", bound=8 + 45)
    items = json.loads(done.stdout)["items"]
    assert {i["verdict"] for i in items} == {"timeout"}
    position = next(n for n, cell in enumerate(nb.cells, 1) if cell.source == stubborn)
    message = items[0]["message"]
    # The step's interrupt was ignored, so the notebook's whole limit is what ran out.
    assert message.startswith(f"Timed out: the notebook's 8 s ran out while cell {position} (“import signal”) was running")
    assert "your line" not in message  # no traceback came


def test_memory_hog_is_stopped(tmp_path):
    hog = "import numpy as np\nhog = np.ones(2**30 // 8)"  # 1 GiB, twice the limit
    path = write(with_cells(NUMPY_CHAPTER, [hog]), tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = timed_check(path, "--memory", "0.5", "--json", bound=90)
    assert {i["verdict"] for i in json.loads(done.stdout)["items"]} == {"oom"}


# A parent that holds 300 MB and forks four workers, as DataLoader(num_workers=4) does: the
# workers share its pages, so their resident sizes add up to five times what is used.
FORKED_WORKERS = """import os
import time
import numpy as np
held = np.ones(300 * 2**20 // 8)
workers = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:  # a worker: it reads nothing of its own, and its pages are its parent's
        time.sleep(2)
        os._exit(0)
    workers.append(pid)
for pid in workers:
    os.waitpid(pid, 0)
"""


def test_pages_shared_with_forked_workers_count_once(tmp_path):
    """Under --memory 1 (GiB) the notebook above uses about half a GiB: it keeps full marks
    (the resident sizes added up, 2 GiB and more, stopped every item as out of memory)."""
    path = write(with_cells(NUMPY_CHAPTER, [FORKED_WORKERS]), tmp_path / f"{NUMPY_CHAPTER}.ipynb")
    done = timed_check(path, "--memory", "1", "--json", bound=120)
    report = json.loads(done.stdout)
    assert report["points"] == report["max_points"], [i["message"] for i in report["items"] if i["verdict"] != "pass"]


def test_report_is_written_atomically_only_where_asked(tmp_path):
    path = write(nbformat.read(ROOT / "solutions" / f"{NUMPY_CHAPTER}.ipynb", as_version=4),
                 tmp_path / "sub" / f"{NUMPY_CHAPTER}.ipynb")
    out = tmp_path / "reports" / "r.json"
    done = timed_check(path, "--out", str(out), bound=120)
    assert done.returncode == 0
    assert json.loads(out.read_text())["points"] == json.loads(out.read_text())["max_points"]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]

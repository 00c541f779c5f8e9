"""Batch grading: an interrupted run leaves a valid gradebook; a rerun skips what is graded."""
import json
import signal
import subprocess
import sys
import time

import psutil

from notebooks import ROOT, with_cells, write

CHAPTER = "04_gpt_head"  # plain NumPy: the quickest to grade


def start_grade(*args):
    return subprocess.Popen([sys.executable, "-m", "grader", "grade", *args, "--lang", "en"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(what, condition, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None and time.monotonic() < deadline, f"no {what}"
        time.sleep(0.05)


def kernel_running(proc) -> bool:
    try:
        return any("ipykernel" in " ".join(p.cmdline()) for p in psutil.Process(proc.pid).children(recursive=True))
    except psutil.Error:
        return False


def test_interrupt_leaves_a_valid_gradebook_and_rerun_skips_finished(tmp_path):
    (tmp_path / "a_bad").mkdir()
    (tmp_path / "a_bad" / f"{CHAPTER}.ipynb").write_text("not json")
    write(with_cells(CHAPTER, ["while True: pass"]), tmp_path / "b_loop" / f"{CHAPTER}.ipynb")
    out = tmp_path / "out"
    proc = start_grade(str(tmp_path / "a_bad"), str(tmp_path / "b_loop"), "--jobs", "1", "--out", str(out))
    book = out / "gradebook.json"
    wait_for("saved row", lambda: book.exists() and json.loads(book.read_text())["submissions"], proc)
    wait_for("kernel", lambda: kernel_running(proc), proc)  # the looping notebook is running now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Interrupted (Ctrl-C)" in err
    entries = json.loads((out / "gradebook.json").read_text())["submissions"]
    assert [e["student"] for e in entries.values()] == ["a_bad"]
    assert (out / "gradebook.csv").read_text().count("\n") == 2  # header and the bad file's row
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]

    # A rerun skips the graded file whose bytes did not change, and grades it again once they do.
    (tmp_path / "b_loop" / f"{CHAPTER}.ipynb").unlink()
    rerun = start_grade(str(tmp_path / "a_bad"), "--out", str(out))
    _, err = rerun.communicate(timeout=120)
    assert "a_bad" not in err  # no progress line: nothing was graded
    (tmp_path / "a_bad" / f"{CHAPTER}.ipynb").write_text("still not json!")
    rerun = start_grade(str(tmp_path / "a_bad"), "--out", str(out))
    _, err = rerun.communicate(timeout=120)
    assert "1/1" in err


def test_kernels_get_a_compilation_cache_unless_the_user_has_one(monkeypatch, tmp_path):
    from grader.pipeline.supervise.supervisor import jax_cache_env

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    env = jax_cache_env(str(tmp_path))
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path)
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"  # small programs too
    assert jax_cache_env("") == {}
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/somewhere/else")
    assert jax_cache_env(str(tmp_path)) == {}

"""Grading a class you don't trust: ``--sandbox`` (bubblewrap namespaces and cgroups).

One hostile student tries what a teacher measured without a sandbox: reading the
grader's command line and the reference modules, writing into classmates' files, the
class folder, the grader's disk cache and the JAX cache, leaving detached processes
behind, signalling every process it can see.  In a sandboxed batch each attempt finds
nothing to act on: the classmate keeps full marks, the teacher's files keep their
bytes, nothing is left running, nothing is written outside the job's folder.  The limits
count what escapes the process tree (memfd memory, forks).  The chapter is the NumPy
one (04), the fastest to grade.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from conftest import grader
from notebooks import ROOT, with_cells, write

CHAPTER = "04_gpt_head"
# In the command line of every process the attacks start, so that survivors() finds them;
# named for this test process, so that it finds only its own and not those of another
# pytest worker (`make test` runs two) or of another run of the suite on the machine.
MARKER = f"tied-sandbox-attack-{os.getpid()}"


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def survivors() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(MARKER in part for part in p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return found


def attack_cell(targets: dict[str, str]) -> str:
    """Every cross-student attack of the issue, each in a try: a failure is the point."""
    return textwrap.dedent(f'''
        import glob, os, signal, subprocess, sys
        targets = {targets!r}
        def attempt(fn):
            try:
                fn()
            except Exception:
                pass
        # The grader's command line (names the class files), and the reference modules.
        for cmd in glob.glob("/proc/*/cmdline"):
            attempt(lambda: open(cmd).read())
        attempt(lambda: open(targets["references"]).read())
        # Write into a classmate's file, the class folder, the disk cache, the JAX cache.
        for path in (targets["victim"], targets["class"] + "/PWNED", targets["cache"] + "/PWNED",
                     targets["jax"] + "/PWNED", targets["home"] + "/PWNED", targets["tmp"]):
            attempt(lambda: open(path, "w").write("pwned"))
        # A detached process that would rewrite later classmates' notebooks.
        attempt(lambda: subprocess.Popen([sys.executable, "-c",
                "import time; time.sleep(600)  # {MARKER}"], start_new_session=True))
        # Signal every process in sight (the grader, the classmates' kernels), but not this one.
        for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
            if pid not in (os.getpid(), os.getppid(), 1):
                attempt(lambda: os.kill(pid, signal.SIGSTOP))
    ''')


def test_a_hostile_classmate_changes_nothing_in_a_sandboxed_batch(bwrap_ready, tmp_path):
    cache = tmp_path / "cache"
    (cache / "jax").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    klass = tmp_path / "class"
    shutil.copytree(ROOT / "solutions", klass / "victim", ignore=shutil.ignore_patterns("0[!4]*"))
    targets = {"victim": str(klass / "victim" / f"{CHAPTER}.ipynb"), "class": str(klass), "cache": str(cache),
               "jax": str(cache / "jax"), "home": str(home),
               "references": str(ROOT / "grader" / "chapters" / "gpt_head" / "grade.py"),
               "tmp": f"/tmp/PWNED-{tmp_path.name}"}  # the machine's /tmp, named for this run
    write(with_cells(CHAPTER, after=[attack_cell(targets)]), klass / "attacker" / f"{CHAPTER}.ipynb")
    before = digests(klass)
    out = tmp_path / "book"
    done = grader("grade", str(klass), "--sandbox", "--jobs", "2", "--out", str(out), "--lang", "en",
                  env={"TIED_CACHE_DIR": str(cache), "HOME": str(home)})
    assert done.returncode in (0, 1), done.stderr
    entries = {e["student"]: e for e in json.loads((out / "gradebook.json").read_text())["submissions"].values()}
    assert entries["victim"]["points"] == entries["victim"]["max_points"] > 0
    assert entries["attacker"]["points"] == entries["attacker"]["max_points"]  # its own work still counts
    assert digests(klass) == before
    assert not [p for p in (klass, cache, cache / "jax", home) if (p / "PWNED").exists()]
    assert not Path(targets["tmp"]).exists()
    assert survivors() == []


def test_memory_outside_the_process_tree_is_counted(bwrap_ready, tmp_path):
    """1.5 GiB in a memfd, held by a double-forked child, against --memory 1."""
    hog = textwrap.dedent(f'''
        import os, time
        if os.fork() == 0:
            if os.fork() == 0:
                os.setsid()
                fd = os.memfd_create("{MARKER}")
                for _ in range(24):
                    os.write(fd, b"x" * (64 << 20))
                time.sleep(600)
            os._exit(0)
        time.sleep(30)
    ''')
    path = write(with_cells(CHAPTER, before=[hog]), tmp_path / "hog" / f"{CHAPTER}.ipynb")
    done = grader("check", str(path), "--sandbox", "--memory", "1", "--timeout", "60", "--json")
    report = json.loads(done.stdout)
    assert {i["verdict"] for i in report["items"]} <= {"oom", "not_reached", "fail", "pass"}
    assert report["items"][0]["verdict"] == "oom", report["items"][0]
    assert survivors() == []


def test_a_fork_bomb_is_contained(bwrap_ready, tmp_path):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    path = write(with_cells(CHAPTER, before=[bomb]), tmp_path / "bomb" / f"{CHAPTER}.ipynb")
    done = grader("check", str(path), "--sandbox", "--timeout", "20", "--json", timeout=120)
    report = json.loads(done.stdout)
    assert report["items"][0]["verdict"] in ("timeout", "oom", "fail", "not_reached")
    assert psutil.cpu_count() and survivors() == []


def test_without_bubblewrap_sandbox_is_a_usage_error(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python")
    notebook = str(ROOT / "solutions" / f"{CHAPTER}.ipynb")
    done = subprocess.run([str(bin_dir / "python"), "-m", "grader", "check", notebook, "--sandbox"],
                          capture_output=True, text=True, env={**os.environ, "PATH": str(bin_dir)},
                          cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "bubblewrap" in done.stderr and "Traceback" not in done.stderr

"""Containment without the sandbox: a plain ``grader check`` leaves nothing running and
its ``--memory`` counts what escapes the process tree.

Each job runs in a memory and a pids cgroup of its own where the machine lets the
grader make them (``grader.cgroups``), and the worker adopts the kernel's orphans
(a child subreaper), so a ``setsid`` child and a double-forked one are in the tree it
kills.  Where no cgroup can be made, one line on stderr says what is not counted, and
nothing outlives the check all the same.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import grader
from grader.cgroups import CGROUP_ROOT
from notebooks import ROOT, with_cells, write
from test_sandbox import CHAPTER, MARKER, survivors

ESCAPES = textwrap.dedent(f'''
    import os, subprocess, sys, time
    # A setsid child, and a double-forked one in a session of its own.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)  # {MARKER}"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)  # {MARKER}"])
        os._exit(0)
    os.wait()
''')

HOGS = {
    # 1.5 GiB written into a memfd held by a double-forked child: no process's RSS shows it.
    "memfd": f'''
        fd = os.memfd_create("{MARKER}")
        for _ in range(24):
            os.write(fd, b"x" * (64 << 20))
    ''',
    # 1.5 GiB of a double-forked child's own memory, outside the kernel's tree.
    "detached": '''
        hog = [b"x" * (64 << 20) for _ in range(24)]
    ''',
}


def hog_cell(how: str) -> str:
    return textwrap.dedent('''
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
    ''') + textwrap.indent(textwrap.dedent(HOGS[how]), " " * 8) + textwrap.dedent('''
                time.sleep(600)
            os._exit(0)
        time.sleep(30)
    ''')


def cgroups_here() -> bool:
    return all(os.access(CGROUP_ROOT / c, os.W_OK) for c in ("memory", "pids"))


def test_nothing_a_plain_check_starts_outlives_it(tmp_path):
    path = write(with_cells(CHAPTER, before=[ESCAPES]), tmp_path / "escape" / f"{CHAPTER}.ipynb")
    done = grader("check", str(path), "--json", "--lang", "en")
    assert done.returncode == 0, done.stderr  # the solution's work still counts
    assert survivors() == []


@pytest.mark.skipif(not cgroups_here(), reason="this machine lets the grader make no memory and pids cgroups")
@pytest.mark.parametrize("how", HOGS)
def test_memory_outside_the_tree_is_caught_by_a_plain_check(tmp_path, how):
    path = write(with_cells(CHAPTER, before=[hog_cell(how)]), tmp_path / how / f"{CHAPTER}.ipynb")
    done = grader("check", str(path), "--memory", "1", "--timeout", "60", "--json", "--lang", "en")
    report = json.loads(done.stdout)
    assert report["items"][0]["verdict"] == "oom", report["items"][0]
    assert survivors() == []


def test_without_cgroups_one_line_says_what_is_not_counted_and_nothing_outlives(tmp_path):
    path = write(with_cells(CHAPTER, before=[ESCAPES]), tmp_path / "escape" / f"{CHAPTER}.ipynb")
    run = ("import sys, pathlib\nimport grader.cgroups as c\n"
           "c.CGROUP_ROOT = pathlib.Path(sys.argv[1])\n"
           "from grader.cli import main\nsys.exit(main(['check', sys.argv[2], '--lang', 'en']))\n")
    done = subprocess.run([sys.executable, "-c", run, str(tmp_path / "no-cgroups"), str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "memfd" in lines[0] and "number of processes" in lines[0], done.stderr
    assert survivors() == []

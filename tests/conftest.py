"""Shared fixtures: one parallel batch grades every notebook the tests need."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from grader.atomic import write_atomic  # noqa: E402
from grader.pipeline.supervise.supervisor import jax_cache_env  # noqa: E402
from notebooks import ROOT, replace_regions, write  # noqa: E402
from pitfalls import PITFALLS  # noqa: E402

# The suite grades dozens of notebooks of the same chapters.  The grader's disk cache
# starts empty in a folder of this session: the first grader run computes the
# references and later ones read them back, and nothing lands in the user's cache
# folder.  A JAX compilation cache in the same folder is set in the environment, so
# that every kernel the grader starts shares it: about a third of a Flax notebook's time.
# Under pytest-xdist (`make test` runs two workers) the controller makes the folder
# before it starts the workers, which inherit its environment: one folder for the run.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
CACHE = os.environ["TIED_SUITE_CACHE"] if WORKER else tempfile.mkdtemp(prefix="tied-test-cache-")
os.environ.update({"TIED_SUITE_CACHE": CACHE, "TIED_CACHE_DIR": CACHE,
                   **jax_cache_env(os.path.join(CACHE, "jax-suite"))})


def pytest_sessionfinish(session, exitstatus):
    if not WORKER:  # the controller, or a run without workers: the last to finish
        shutil.rmtree(CACHE, ignore_errors=True)


def grader(*args, timeout=600, **kwargs) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` as a user runs it."""
    env = {**os.environ, "LANG": "C.UTF-8", **kwargs.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=kwargs.pop("cwd", ROOT), env=env, **kwargs)


def chapters() -> list[str]:
    """Every chapter, or those named in TIED_CHAPTERS (comma-separated) for a quick run."""
    found = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
    only = [c for c in os.environ.get("TIED_CHAPTERS", "").split(",") if c]
    return [c for c in found if c in only] if only else found


# An untouched exercise only raises NotImplementedError: one goes through a kernel (the
# NumPy chapter's, the fastest), the others are judged in this process, as most pitfalls
# are, which saves a JAX or PyTorch kernel start each.
KERNEL_EXERCISE = "04_gpt_head"


@pytest.fixture(scope="session")
def batch(tmp_path_factory) -> dict[str, dict]:
    """Gradebook entries of solutions, exercises and the pitfalls that go through a
    kernel (``Pitfall.kernel``), keyed ``kind/name``; the exercises of other chapters
    than ``KERNEL_EXERCISE`` judged in this process."""
    return graded_batch(tmp_path_factory) | {f"exercise/{chapter}": judged_exercise(chapter)
                                             for chapter in chapters() if chapter != KERNEL_EXERCISE}


def graded_batch(tmp_path_factory) -> dict[str, dict]:
    """The entries the grader gives in one batch run, made once for the whole run: the
    first worker to ask grades under a lock, and the others wait and read its gradebook."""
    stored = Path(CACHE) / "batch.json"
    with open(Path(CACHE) / "batch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stored.exists():
            write_atomic(stored, json.dumps(run_batch(tmp_path_factory.mktemp("batch"))))
    return json.loads(stored.read_text())


def run_batch(root: Path) -> dict[str, dict]:
    """Grade the solutions, ``KERNEL_EXERCISE``'s exercise and the kernel pitfalls in one batch."""
    for chapter in chapters():
        kinds = [("solution", "solutions")] + [("exercise", "exercises")] * (chapter == KERNEL_EXERCISE)
        for kind, folder in kinds:
            (root / kind / chapter).mkdir(parents=True)
            shutil.copy(ROOT / folder / f"{chapter}.ipynb", root / kind / chapter / f"{chapter}.ipynb")
    for p in PITFALLS:
        if p.kernel and p.chapter in chapters():
            write(replace_regions(p.chapter, p.regions), root / "pitfall" / p.id / f"{p.chapter}.ipynb")
    out = root / "book"
    done = grader("grade", str(root / "solution"), str(root / "exercise"), str(root / "pitfall"),
                  "--jobs", "2", "--out", str(out), "--lang", "en")
    assert done.returncode in (0, 1), done.stderr
    entries = json.loads((out / "gradebook.json").read_text())["submissions"]
    return {f"{Path(p).parent.parent.name}/{e['student']}": e for p, e in entries.items()}


_IN_PROCESS: dict[str, dict] = {}


def judged_in_process(pitfall) -> dict:
    """The gradebook entry of a pitfall, judged in this process (``tests/inprocess.py``)."""
    from inprocess import grade_in_process

    if pitfall.id not in _IN_PROCESS:
        nb = replace_regions(pitfall.chapter, pitfall.regions)
        _IN_PROCESS[pitfall.id] = grade_in_process(nb, pitfall.chapter)
    return _IN_PROCESS[pitfall.id]


def judged_exercise(chapter: str) -> dict:
    """The gradebook entry of the untouched exercise, judged in this process."""
    from inprocess import grade_in_process

    return grade_in_process(nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4), chapter)


def pitfall_entry(batch, pitfall) -> dict:
    return batch[f"pitfall/{pitfall.id}"] if pitfall.kernel else judged_in_process(pitfall)


def find_bwrap() -> str:
    """Debian's bubblewrap, installed with apt when missing and we are root (as chromium).

    Every test that grades with ``--sandbox`` asks for it (the ``bwrap_ready`` fixture), so
    that on a fresh machine no such test runs before the install; the two pytest workers
    take a lock, so that only one of them runs apt.
    """
    if shutil.which("bwrap"):
        return shutil.which("bwrap")
    if os.geteuid() != 0:
        pytest.fail("--sandbox needs bubblewrap: run `sudo apt-get install bubblewrap`", pytrace=False)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with open(Path(tempfile.gettempdir()) / "tied-tests-apt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which("bwrap"):
            for step in (["apt-get", "update", "-qq"],
                         ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", "bubblewrap"]):
                done = subprocess.run(step, capture_output=True, text=True, env=env, timeout=600)
                if done.returncode:
                    pytest.fail(f"`{' '.join(step)}` failed:\n{done.stderr[-2000:]}", pytrace=False)
    return shutil.which("bwrap")


@pytest.fixture(scope="session")
def bwrap_ready():
    return find_bwrap()

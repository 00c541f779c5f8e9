"""The Gradescope autograder, locked down: the notebook runs as an unprivileged user.

The exported zip is unpacked into a root laid out as Gradescope's ``/autograder``; its
virtualenv stands in for setup.sh's (the system's Python 3.11, this project's packages
on its path, the package installed from the zip), and its ``lock_down.sh`` runs as
setup.sh runs it.  ``run_autograder`` then grades hostile stubs as root, their kernels
running as ``nobody``: one writes ``results.json``, one reads the chapter module that
holds the references and the secret, one imports it (its compiled file included),
one patches the installed grader.  Each attempt
is refused (a folder every user may write records what the kernel could do), each
stub earns nothing, and the solution still earns full marks.  Needs root.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from conftest import grader
from notebooks import ROOT

CHAPTER = "04_gpt_head"
SCHEMAS = Path(__file__).parent / "schemas"
SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="running a notebook as another user needs root"),
    pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason=f"no {SYSTEM_PYTHON} that an unprivileged user can run"),
]

ATTACKS = {
    "write_results": '''
        import json, os
        for path in [RESULTS + "/results.json", RESULTS + "/forged.json"]:
            note("write " + os.path.basename(path),
                 lambda: open(path, "w").write(json.dumps({"score": 100, "tests": []})))
    ''',
    "read_references": '''
        for name, path in [("chapter", CHAPTER_MODULE), ("source", SOURCE_MODULE), ("secret", SECRET)]:
            note("read " + name, lambda: open(path).read())
    ''',
    "import_references": '''
        import importlib, sys
        sys.dont_write_bytecode = True
        note("import chapter", lambda: importlib.import_module("grader.chapters.gpt_head.grade"))
    ''',
    "patch_grader": '''
        for name in ("verdicts.py", "worker.py", "judge.py"):
            note("patch " + name, lambda: open(PACKAGE + "/" + name, "a").write("\\nFORGED = True\\n"))
        note("add a module", lambda: open(PACKAGE + "/sitecustomize.py", "w").write("FORGED = True\\n"))
    ''',
}


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path).encode() + path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The emulated /autograder, after setup: (root, the installed package)."""
    secret = tmp_path_factory.mktemp("secret") / "teacher.key"
    secret.write_text("a teacher's secret\n")
    bundle = tmp_path_factory.mktemp("zip") / "autograder.zip"
    done = grader("export", "gradescope", CHAPTER, "--lang", "ko", "--secret", str(secret), "--out", str(bundle))
    assert done.returncode == 0, done.stderr
    root = Path(tempfile.mkdtemp(prefix="tied-autograder-", dir="/tmp"))  # outside root's 0700 folders
    root.chmod(0o755)
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        assert {"setup.sh", "lock_down.sh", "run_autograder", "secret", "tied/constraints.txt"} <= names
        assert any(n.startswith("tied/grader/messages/ko/") for n in names)
        assert all(z.getinfo(n).external_attr >> 16 & stat.S_IXUSR for n in ("setup.sh", "run_autograder"))
        setup = z.read("setup.sh").decode()
        z.extractall(root / "source")
    for name in ("run_autograder", "lock_down.sh"):
        (root / "source" / name).chmod(0o755)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    # setup.sh's virtualenv: this project's packages, the grader installed from the zip.
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = Path(subprocess.run([str(root / "venv" / "bin" / "python"), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(root / "venv" / "bin" / "python"), "install",
                    "--quiet", "--no-deps", "--no-index", "--no-build-isolation", str(root / "source" / "tied")],
                   check=True, capture_output=True)
    subprocess.run(["bash", str(root / "source" / "lock_down.sh"), str(root)], check=True)
    yield root, site / "grader", setup
    shutil.rmtree(root, ignore_errors=True)


def run_autograder(root: Path, notebook: nbformat.NotebookNode) -> dict:
    shutil.rmtree(root / "submission", ignore_errors=True)
    (root / "submission").mkdir()
    nbformat.write(notebook, root / "submission" / f"{CHAPTER}.ipynb")
    (root / "results" / "results.json").unlink(missing_ok=True)
    ran = subprocess.run([str(root / "run_autograder")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TIED_STUDENT_USER": "nobody"})
    assert ran.returncode == 0, ran.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_setup_installs_only_what_grading_needs(autograder):
    _, _, setup = autograder
    assert "download.pytorch.org/whl/cpu torch" in setup
    for unneeded in ("jupyter-book", "transformers", "mypy", "ruff", "hypothesis", "matplotlib"):
        assert unneeded not in setup


def test_the_secret_is_for_root_alone(autograder):
    root, _, _ = autograder
    assert (root / "secret").stat().st_mode & 0o777 == 0o600
    assert not (root / "source" / "secret").exists()


def test_the_solution_still_earns_full_marks(autograder):
    root, _, _ = autograder
    results = run_autograder(root, nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4))
    jsonschema.validate(results, json.loads((SCHEMAS / "gradescope_results.json").read_text()))
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0, results
    assert all(t["status"] == "passed" for t in results["tests"])
    assert "합계" in results["output"]  # the course's language


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_hostile_notebook_earns_nothing(autograder, attack):
    root, package, _ = autograder
    witness = Path(tempfile.mkdtemp(prefix="tied-witness-", dir="/tmp"))
    witness.chmod(0o777)
    before = digest(package)
    cell = textwrap.dedent(f'''
        RESULTS, SECRET, PACKAGE = {str(root / "results")!r}, {str(root / "secret")!r}, {str(package)!r}
        CHAPTER_MODULE = PACKAGE + "/chapters/gpt_head/grade.py"
        SOURCE_MODULE = {str(root / "source" / "tied" / "grader" / "chapters" / "gpt_head" / "grade.py")!r}
        def note(what, attempt):
            try:
                attempt()
                outcome = "done"
            except OSError:
                outcome = "refused"
            open({str(witness)!r} + "/" + what.replace(" ", "_"), "w").write(outcome)
    ''') + textwrap.dedent(ATTACKS[attack])
    nb = nbformat.read(ROOT / "exercises" / f"{CHAPTER}.ipynb", as_version=4)
    code = nbformat.v4.new_code_cell(cell)
    if nb.nbformat_minor < 5:  # cells have ids from format 4.5 on
        del code["id"]
    nb.cells.insert(1, code)
    try:
        results = run_autograder(root, nb)
        seen = {p.name: p.read_text() for p in witness.iterdir()}
    finally:
        shutil.rmtree(witness)
    assert seen and set(seen.values()) == {"refused"}, seen
    assert results["score"] == 0 and not [t for t in results["tests"] if t.get("score")], results
    assert digest(package) == before

"""The student's loop, last mile (issue 33): ``check()`` and ``check(fn)`` resolve in the
chapter of the notebook being run, whatever the kernel (JupyterLab names the file, nbconvert
does not); the JAX compile cache is the running version's own; the documented commands
work from where a student stands.  In this process, no kernel started."""
from __future__ import annotations

import nbformat
import pytest

from grader.selfcheck.check import check
from inprocess import run_cells
from notebooks import solution
from test_student_loop import cell_code, one_line


def stub(*names: str) -> dict:
    """A namespace where each of ``names`` is defined, as an exercise's stubs are."""
    return {name: object() for name in names}


def test_check_without_an_argument_and_no_chapter_known_is_one_line(capsys):
    assert check(lang="en", namespace={}) is None  # today: TypeError, check() takes a target
    line = one_line(capsys.readouterr())
    assert 'check("02_nnx")' in line and "07_three_frameworks" in line


def test_the_namespace_tells_the_chapter_when_the_file_does_not():
    from grader.selfcheck.check import namespace_chapter

    assert namespace_chapter(stub("TiedEmbed", "tied_io_embed", "tied_grad_paths")) == "02_nnx"
    assert namespace_chapter(stub("TiedIO", "tied_io_embed")) == "01_linen"
    assert namespace_chapter(stub("tied_io_embed")) is None  # a name two chapters grade says nothing
    assert namespace_chapter({}) is None


def test_check_fn_in_the_02_notebook_grades_chapter_02s_exercise():
    """``tied_io_embed`` is graded in 01 and 02: in a 02 notebook it is 02's (today the first
    chapter that has the name, 01, and a correct 02 solution got 0/3)."""
    namespace = cell_code("def tied_io_embed(seed, token_ids, vocab_size, d_model):\n"
                          "    raise NotImplementedError('not yet')\n")
    namespace["TiedEmbed"] = object()
    result = check(namespace["tied_io_embed"], lang="en", namespace=namespace)
    assert result.chapter == "02_nnx"
    assert [v.item for v in result.verdicts] == ["tied_io_embed"]
    assert result.verdicts[0].max_points == 2  # 02's item; 01's is worth 3


def test_another_chapters_function_is_one_line_naming_both_chapters(capsys):
    namespace = stub("TiedIO", "SharedEmbedLM", "tied_io_embed")
    assert check("tied_grad_paths", lang="es", namespace=namespace) is None
    line = one_line(capsys.readouterr())
    assert "tied_grad_paths" in line and "02_nnx" in line and "01_linen" in line


@pytest.mark.parametrize("lang", ["en", "es", "ko"])
def test_another_chapter_in_a_notebook_nbconvert_runs_is_one_line(capsys, lang):
    """``check('07_three_frameworks')`` in the 02 notebook, no file named (nbconvert): one line,
    not 'LinenTiedLM is in the notebook, but its cell has not run'."""
    nb = nbformat.read(solution("02_nnx"), as_version=4)
    namespace, _ = run_cells(nb)
    assert "__session__" not in namespace
    assert check("07_three_frameworks", lang=lang, namespace=namespace) is None
    line = one_line(capsys.readouterr())
    assert "02_nnx" in line and "07_three_frameworks" in line and "check()" in line


def test_make_lab_starts_as_root_and_puts_the_grader_on_the_terminals_path():
    """A container's user is root, and Jupyter refuses root without --allow-root; a
    JupyterLab terminal opens in exercises/, where ``.venv/bin/grader`` is not."""
    import os
    import shlex
    import subprocess

    from notebooks import ROOT

    done = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    (line,) = [li for li in done.stdout.splitlines() if "jupyter lab" in li]
    words = shlex.split(line)
    assert ("--allow-root" in words) == (os.geteuid() == 0)
    path = next(w for w in words if w.startswith("PATH="))
    assert path.startswith(f"PATH={ROOT / '.venv' / 'bin'}:")


def test_another_versions_compile_cache_in_use_is_not_pruned(tmp_path, monkeypatch):
    """Two clones, or a `git pull` while a kernel runs: the other version's JAX folder is in
    use (today it was removed, and its kernel's cell filled with 100+ write warnings)."""
    from grader import disk_cache

    monkeypatch.setenv("TIED_CACHE_DIR", str(tmp_path))
    other = tmp_path / "jax" / "0123456789abcdef0123"
    other.mkdir(parents=True)
    (other / "entry").write_bytes(b"compiled")
    mine = disk_cache._part("jax")
    assert mine is not None and mine.name == disk_cache.fingerprint()
    assert (other / "entry").exists()


def test_cache_write_failures_stay_out_of_the_students_cell(tmp_path, monkeypatch):
    import warnings

    import jax  # noqa: F401  (check() sets the cache only where JAX is loaded)

    from grader import disk_cache

    monkeypatch.setenv("TIED_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with disk_cache.compiled_programs_in_process():
            warnings.warn("Error writing persistent compilation cache entry for 'jit_f': FileNotFoundError: x")
            warnings.warn("the student's own warning")
    assert [str(w.message) for w in caught] == ["the student's own warning"]


def test_grader_check_kernels_show_no_cache_warning(tmp_path, monkeypatch):
    import subprocess
    import sys

    from grader.pipeline.supervise.supervisor import jax_cache_env

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    env = {"PATH": "/usr/bin:/bin", **jax_cache_env(str(tmp_path))}
    code = ("import warnings\nwarnings.warn(\"Error writing persistent compilation cache entry for 'f': x\")\n"
            "warnings.warn('kept')\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "kept" in done.stderr and "persistent compilation cache" not in done.stderr


STUCK = ("def tied_io_embed(seed, token_ids, vocab_size, d_model):\n"
         "    while True:\n"
         "        seed = seed + 1\n")


def test_a_timed_out_item_is_remembered_until_its_cell_runs_again():
    """A second check() after a timeout gives the verdict at once (today it waited the full
    time again); the cell run again (a new function), or more time, checks it again."""
    import time

    from grader.outcome import TIMEOUT
    from grader.outputs.report import as_dict

    namespace = cell_code(STUCK)
    first = check("tied_io_embed", lang="en", namespace=namespace, timeout=2)
    assert first.verdicts[0].status == TIMEOUT
    start = time.monotonic()
    again = check("tied_io_embed", lang="en", namespace=namespace, timeout=2)
    assert time.monotonic() - start < 1.5
    assert again.verdicts[0].status == TIMEOUT
    message = as_dict(again, "en")["items"][0]["message"]
    assert "earlier check()" in message and "run again" in message
    rerun = cell_code(STUCK)  # the cell run again: another function object
    start = time.monotonic()
    third = check("tied_io_embed", lang="en", namespace=rerun, timeout=2)
    assert time.monotonic() - start >= 2 and third.verdicts[0].status == TIMEOUT
    assert "earlier check()" not in as_dict(third, "en")["items"][0]["message"]


def test_a_cell_edited_and_saved_but_not_run_again_says_so(tmp_path):
    """Today check() graded the code the kernel ran before the edit (6/13, about a parameter
    the code no longer had) and nothing said the cell had changed."""
    from grader.chapters import chapter
    from grader.outputs.report import as_dict

    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    path = tmp_path / "04_gpt_head.ipynb"
    nbformat.write(nb, path)
    namespace, _ = run_cells(nb, path)
    targets = {item.target for item in chapter("04_gpt_head").items}
    code = [c for c in nb.cells if c.cell_type == "code"]
    number, cell = next((n, c) for n, c in enumerate(code, 1)
                        if any(f"def {t}(" in c.source or f"class {t}" in c.source for t in targets))
    name = next(t for t in targets if f"def {t}(" in cell.source or f"class {t}" in cell.source)
    cell.source += "\n\nEDITED = True  # saved, not run\n"
    nbformat.write(nb, path)
    result = check("04_gpt_head", lang="en", namespace=namespace)
    entry = as_dict(result, "en")
    stale = [i for i in entry["items"] if i["key"] == "common.cell_changed"]
    assert stale and all(name in i["message"] and "run it again" in i["message"] for i in stale)
    assert {i["item"] for i in entry["items"] if i["verdict"] != "pass"} == {i["item"] for i in stale}
    cell.source = cell.source.replace("EDITED = True  # saved, not run", "# a comment is no change")
    nbformat.write(nb, path)
    again = as_dict(check("04_gpt_head", lang="en", namespace=namespace), "en")
    assert not [i for i in again["items"] if i["key"] == "common.cell_changed"]
    assert number >= 1


def test_an_exception_text_drops_array_reprs_and_is_never_cut_mid_word():
    """Torch tensors in nnx.Param: today "Argument 'tensor([[ 0.0880, …]])' o"."""
    import numpy as np

    from grader.kernel.runtime import MAX_TEXT, error_fact, error_text

    quoted = np.array2string(np.linspace(0, 1, 400), separator=", ")
    exc = TypeError(f"Argument 'tensor({quoted})' of type <class 'torch.Tensor'> is not a valid JAX type.")
    for text in (error_text(exc), "TypeError: " + error_fact(exc)["error"]["message"]):
        assert text == "TypeError: Argument 'tensor(…)' of type <class 'torch.Tensor'> is not a valid JAX type."
    long = error_text(ValueError("because " * 100))
    assert len(long) <= MAX_TEXT and long.endswith("because…")


def test_the_stand_in_note_only_where_the_notebooks_cells_printed_something_else():
    """"Passes with the book's tie_weights in place of yours: ... this notebook's own cells
    that use it still print something else" is not said where the notebook item passed
    (the cells printed what the book's do)."""
    from grader.chapters import chapter
    from grader.outcome import NOTEBOOK_ITEM, Finding
    from grader.pipeline.judge.items import FAIL, PASS, Verdict, with_stand_in_notes

    ch = chapter("03_pytorch")
    items = [Verdict("tie_weights", 0, 1, FAIL, Finding("pytorch.copied", {})), Verdict("TinyLM.forward", 2, 2, PASS)]
    calls_it = ["class TinyLM(nn.Module):\n    def __init__(self, V, d):\n"
                "        tie_weights(self.lm_head, self.embed)\n"]
    cells_differ = [Verdict(NOTEBOOK_ITEM, 0, 1, FAIL, Finding("common.output_mismatch", {}))] + items
    cells_agree = [Verdict(NOTEBOOK_ITEM, 1, 1, PASS)] + items
    assert with_stand_in_notes(ch, cells_differ, calls_it)[2].finding.key == "common.passes_with_reference"
    assert with_stand_in_notes(ch, cells_agree, calls_it)[2].finding is None



# --- One blame for one error: the cell that was run, and the cause before the symptom ------

def kernel_check(nb: nbformat.NotebookNode, path) -> dict[str, str]:
    """``nb`` run top to bottom in a real kernel that knows its file (as JupyterLab's
    does: ``__session__``), errors allowed: each item's line (wrapped lines joined) in what
    its last cell, ``check()``, printed."""
    from nbclient import NotebookClient

    first = next(c for c in nb.cells if c.cell_type == "code")
    first.source = f"__session__ = {str(path)!r}\n" + first.source
    nbformat.write(nb, path)  # the file as saved before the run, as a student's is
    NotebookClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    printed = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in nb.cells[-1].outputs)
    items: dict[str, str] = {}
    for line in printed.splitlines():
        if line[:1].strip() and " " in line:
            name, _, rest = line.partition(" ")
            items[name] = rest.strip()
        elif items and line.strip():
            items[list(items)[-1]] += " " + line.strip()
    return items


def terminal_check(path) -> dict[str, str]:
    """``grader check --json``: each item's message."""
    import json

    from conftest import grader

    done = grader("check", str(path), "--json")
    return {i["item"]: i["message"] for i in json.loads(done.stdout)["items"]}


def test_a_scratch_cell_that_raises_is_blamed_not_the_class_it_called(tmp_path):
    """A scratch cell calls a correct function wrongly: both paths blame the scratch cell
    (check() blamed the cell that defines the function: the innermost frame)."""
    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    code = [n for n, c in enumerate(nb.cells) if c.cell_type == "code"]
    nb.cells.insert(code[3] + 1, nbformat.v4.new_code_cell("tied_head_forward(np.array([7]), np.zeros((3, 2)))"))
    path = tmp_path / "04_gpt_head.ipynb"
    for items in (kernel_check(nb, path), terminal_check(path)):
        assert "tied_head_forward(np.array([7])" in items["notebook"], items["notebook"]
        assert "def tied_head_forward" not in items["notebook"].split("—")[0], items["notebook"]


def test_an_import_typo_is_named_before_what_it_breaks(tmp_path):
    """``import numpyy``: the notebook item names the import (the cause) in check() as in
    grader check, not a NameError in a worked example nine cells on; and an item whose
    function's cell raised is told so, not 'define it'."""
    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    first.source = first.source.replace("import numpy as np", "import numpyy as np")
    path = tmp_path / "04_gpt_head.ipynb"
    for items in (kernel_check(nb, path), terminal_check(path)):
        assert "No module named 'numpyy'" in items["notebook"], items["notebook"]
        for item, message in items.items():
            assert "is not defined in the notebook" not in message, (item, message)



def test_a_long_check_says_which_item_it_is_on():
    """Each item is announced as its checks start, counted, the notebook item last (a
    long check showed nothing for two minutes after "Checking …")."""
    import grader.selfcheck.check as selfcheck

    namespace, _ = run_cells(nbformat.read(solution("04_gpt_head"), as_version=4))
    ch = selfcheck.chapters()["04_gpt_head"]
    told: list[tuple[str, int, int]] = []
    selfcheck.judged(ch, namespace, None, 60.0, lambda *said: told.append(said))
    total = len(ch.items) + 1
    assert told == [(item.name, n, total) for n, item in enumerate(ch.items, 1)] + [("notebook", total, total)]


def test_the_checking_line_shows_the_item_it_is_on(monkeypatch):
    """In a notebook the "Checking …" output is replaced by the message and the item now
    checked; once the verdicts are in it is blanked."""
    import threading

    import grader.selfcheck.check as selfcheck

    shown, updates = threading.Event(), []

    class Handle:
        def update(self, data, raw=False):
            updates.append(data)

    def display(message):
        updates.append({"text/plain": message})
        shown.set()
        return Handle()

    monkeypatch.setattr(selfcheck, "kernel_display", display)
    monkeypatch.setattr(selfcheck, "QUIET", 0.0)
    with selfcheck.saying_what_it_does("Checking 04_gpt_head…") as doing:
        assert shown.wait(30)
        doing("now: sample_next (4 of 5)")
    assert updates == [{"text/plain": "Checking 04_gpt_head…"},
                       {"text/plain": "Checking 04_gpt_head…\nnow: sample_next (4 of 5)"}, selfcheck.BLANK]

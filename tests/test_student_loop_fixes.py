"""The student's loop as a cold reader found it: check()'s notebook item sees what the
kernel saw (a cell that raised or was interrupted in this kernel), as grader check does."""
from __future__ import annotations

import contextlib
import sys

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

import grader.selfcheck.kernel_runs as kernel_runs
from notebooks import solution


@pytest.fixture
def shell(tmp_path):
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    kernel_runs.RUNS.clear()
    kernel_runs.WATCHED.clear()  # a fresh kernel: no check has run in it yet
    sh.events.callbacks["post_run_cell"].clear()
    yield sh
    sh.reset(new_session=True)


def run_notebook(shell, nb, path, check_call="check('01_linen')"):
    """Run every code cell but the last in ``shell`` (as a student would, one by one),
    then the check cell; return the notebook verdict."""
    nbformat.write(nb, path)
    shell.user_ns["__session__"] = str(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code[:-1]:
        shell.run_cell(cell.source, store_history=True)
    shell.run_cell(f"from grader.selfcheck.check import check\nresult = {check_call}", store_history=True)
    result = shell.user_ns["result"]
    return result.verdicts[0]


def with_cell(source: str):
    nb = nbformat.read(solution("01_linen"), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(source))
    return nb


def test_a_cell_that_raised_in_this_kernel_fails_the_notebook_item(shell, tmp_path):
    verdict = run_notebook(shell, with_cell("print(1/0)"), tmp_path / "p1.ipynb")
    assert verdict.item == "notebook" and verdict.points == 0
    assert verdict.finding.key == "common.cell_error"
    assert verdict.finding.params["type"] == "ZeroDivisionError"
    assert verdict.finding.params["first_line"] == "print(1/0)"


def test_a_cell_interrupted_in_this_kernel_fails_the_notebook_item(shell, tmp_path):
    verdict = run_notebook(shell, with_cell("raise KeyboardInterrupt"), tmp_path / "p2.ipynb")
    assert verdict.points == 0 and verdict.status == "timeout"
    assert verdict.finding.key == "common.cell_interrupted"


def test_a_second_check_sees_every_run_since_the_first(shell, tmp_path):
    nb = with_cell("print(1/0)")
    nb.cells[4].source = nb.cells[4].source.replace("class TiedIO", "class TiedIo")
    run_notebook(shell, nb, tmp_path / "p4.ipynb")  # the first check installs the watch
    verdict = run_notebook(shell, nb, tmp_path / "p4.ipynb")
    assert verdict.finding.key == "common.cell_error"
    assert verdict.finding.params["type"] == "ZeroDivisionError"


def test_a_cell_run_alone_that_raised_before_the_last_error_is_seen_on_the_first_check_once_saved(shell, tmp_path):
    # The kernel keeps only its last error (sys.last_value), and check()'s own record of
    # each run starts with the first check: what shows an earlier run that raised, on the
    # first check of a kernel, is the notebook as saved (Ctrl+S, or JupyterLab's autosave),
    # its error output at that run's execution count (kernel_runs' docstring).
    nb = with_cell("print(1/0)")
    nb.cells[4].source = nb.cells[4].source.replace("class TiedIO", "class TiedIo")  # later cells: NameError
    path = tmp_path / "p5.ipynb"
    shell.user_ns["__session__"] = str(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code[:-1]:
        ran = shell.run_cell(cell.source, store_history=True)
        cell.execution_count = ran.execution_count
        if ran.error_in_exec is not None:
            cell.outputs = [nbformat.v4.new_output(
                "error", ename=type(ran.error_in_exec).__name__, evalue=str(ran.error_in_exec),
                traceback=[f"Cell In[{ran.execution_count}], line 1", f"----> 1 {cell.source.splitlines()[0]}",
                           f"{type(ran.error_in_exec).__name__}: {ran.error_in_exec}"])]
    assert type(sys.last_value) is NameError  # the run of 1/0 is not the kernel's last error
    nbformat.write(nb, path)  # saved: after the runs, in this kernel
    shell.run_cell("from grader.selfcheck.check import check\nresult = check('01_linen')", store_history=True)
    verdict = shell.user_ns["result"].verdicts[0]
    assert verdict.finding.key == "common.cell_error" and verdict.finding.params["type"] == "ZeroDivisionError"
    assert verdict.finding.params["first_line"] == "print(1/0)"


def test_a_solved_notebook_still_passes(shell, tmp_path):
    nb = nbformat.read(solution("01_linen"), as_version=4)
    verdict = run_notebook(shell, nb, tmp_path / "ok.ipynb")
    assert verdict.points == 1, verdict


def test_a_closed_stdout_ends_quietly(monkeypatch, capsys):
    from grader import cli

    def closed(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "run_check", closed)
    assert cli.main(["check", "x.ipynb"]) == cli.EXIT_CLOSED_PIPE
    assert capsys.readouterr().err == ""


def test_a_misspelt_chapter_and_a_word_for_a_timeout_are_one_line_each(capsys):
    from grader import cli

    assert cli.main(["check", "x.ipynb", "--chapter", "01_lineen"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "unknown chapter 01_lineen, choose from 01_linen," in err and "Traceback" not in err
    assert cli.main(["check", "x.ipynb", "--timeout", "abc"]) == cli.EXIT_USAGE
    assert "invalid number: 'abc'" in capsys.readouterr().err


def test_checking_another_chapter_in_a_kernel_names_this_notebook(tmp_path, capsys):
    from grader.selfcheck.check import check

    path = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.read(solution("01_linen"), as_version=4), path)
    assert check("04_gpt_head", lang="en", namespace={"__session__": str(path)}) is None
    err = capsys.readouterr().err
    assert err.strip() == 'This notebook is 01_linen (mine.ipynb), not 04_gpt_head: check("01_linen") checks it.'


def test_the_table_names_the_notebook_file(shell, tmp_path):
    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    path = tmp_path / "my_04.ipynb"
    nbformat.write(nb, path)
    shell.user_ns["__session__"] = str(path)
    for cell in [c for c in nb.cells if c.cell_type == "code"][:-1]:
        shell.run_cell(cell.source, store_history=True)
    shell.run_cell("from grader import check\nresult = check('04_gpt_head', lang='en')", store_history=True)
    result = shell.user_ns["result"]
    assert repr(result).splitlines()[0].startswith("my_04.ipynb"), repr(result)
    assert result.passed, repr(result)


def test_spanish_and_korean_tables_name_the_notebook_item_and_the_missing_name_in_their_language():
    from pathlib import Path

    from grader.outputs.report import table
    from grader.pipeline.judge.items import COMMON_ERRORS, FAIL, Verdict, classify_error
    from grader.result import Result

    error = {"type": "NameError", "message": "name 'TiedIO' is not defined in the notebook", "line": ""}
    missing = classify_error(error, COMMON_ERRORS)
    result = Result(Path("x.ipynb"), "01_linen", verdicts=[
        Verdict("notebook", 0, 1, FAIL, missing), Verdict("TiedIO.params", 0, 2, FAIL, missing)])
    es, ko = table(result, "es", 200), table(result, "ko", 200)
    assert "\ncuaderno " in es and "\n노트북 " in ko and "\nnotebook " not in es + ko
    assert "el nombre `TiedIO` no está definido en el cuaderno" in es
    assert "is not defined" not in es + ko and "`TiedIO`" in ko


def test_the_first_check_note_is_said_once_per_kernel(monkeypatch):
    import grader.selfcheck.check as selfcheck

    said = []

    @contextlib.contextmanager
    def saying(message):
        said.append(message)
        yield

    monkeypatch.setattr(selfcheck, "saying_what_it_does", saying)
    monkeypatch.setattr(selfcheck, "CHECKED", [])
    monkeypatch.setattr(selfcheck, "judged", lambda *args: [])
    for _ in range(2):
        selfcheck.check("04_gpt_head", lang="en", namespace={})
    assert "a first check" in said[0] and said[1] == "Checking 04_gpt_head…"


def test_a_pass_with_the_books_version_of_a_missing_class_says_so_in_every_language():
    from pathlib import Path

    from grader.chapters import chapter
    from grader.outcome import Finding
    from grader.outputs.report import as_dict
    from grader.pipeline.judge.items import FAIL, PASS, Verdict, with_stand_in_notes
    from grader.result import Result

    ch = chapter("01_linen")
    uses = ["def tied_io_embed(ids, V, D):\n    model = TiedIO(vocab_size=V, d_model=D)\n"]
    verdicts = [Verdict("TiedIO.__call__", 0, 2, FAIL, Finding("common.missing", {"name": "x"})),
                Verdict("tied_io_embed", 3, 3, PASS)]
    found = with_stand_in_notes(ch, verdicts, uses)
    assert found[1].status == PASS and found[1].points == 3
    for lang in ("en", "es", "ko"):
        message = as_dict(Result(Path("x.ipynb"), ch.id, verdicts=found), lang)["items"][1]["message"]
        assert message.count("TiedIO") == 2, message
    assert with_stand_in_notes(ch, [Verdict("tied_io_embed", 3, 3, PASS)], uses)[0].finding is None
    # A tied_io_embed that never uses TiedIO is not told that the book's TiedIO stood in.
    own = ["def tied_io_embed(ids, V, D):\n    return my_own_model(ids)\n"]
    assert with_stand_in_notes(ch, verdicts, own)[1].finding is None


def test_no_stand_in_note_for_a_model_that_does_not_use_the_stood_in_function():
    """A TinyLM that ties by itself (never calling tie_weights) is not told that the
    book's tie_weights stood in for the student's failing one (a cold read found it)."""
    from grader.chapters import chapter
    from grader.outcome import Finding
    from grader.pipeline.judge.items import FAIL, PASS, Verdict, with_stand_in_notes

    ch = chapter("03_pytorch")
    verdicts = [Verdict("tie_weights", 0, 1, FAIL, Finding("pytorch.copied", {})),
                Verdict("TinyLM.forward", 2, 2, PASS)]
    by_itself = ["class TinyLM(nn.Module):\n    def __init__(self, V, d):\n"
                 "        self.lm_head.weight.data = self.embed.weight.data\n"]
    calls_it = ["class TinyLM(nn.Module):\n    def __init__(self, V, d):\n"
                "        tie_weights(self.lm_head, self.embed)\n"]
    assert with_stand_in_notes(ch, verdicts, by_itself)[1].finding is None
    assert with_stand_in_notes(ch, verdicts, calls_it)[1].finding.key == "common.passes_with_reference"


def test_a_misspelt_name_is_pointed_at(tmp_path):
    from grader.outputs.report import as_dict
    from grader.selfcheck.check import check

    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("def tied_head_forward(", "def tied_head_foward(")
    nbformat.write(nb, tmp_path / "04.ipynb")
    namespace = {"tied_head_foward": lambda *args: None, "__session__": str(tmp_path / "04.ipynb")}
    result = check("04_gpt_head", lang="es", namespace=namespace)
    item = next(i for i in as_dict(result, "es")["items"] if i["item"] == "tied_head_forward")
    assert item["key"] == "common.missing_close" and "¿querías decir `tied_head_foward`?" in item["message"]
    other = next(i for i in as_dict(result, "es")["items"] if i["item"] == "sample_next")
    assert other["key"] == "common.not_run_yet"  # in the notebook, not run: no guess


@pytest.mark.parametrize("lang", ["en", "es", "ko"])
def test_a_narrow_terminal_gets_no_line_wider_than_it(lang):
    from pathlib import Path

    from grader.outcome import Finding
    from grader.outputs.report import table, width
    from grader.pipeline.judge.items import FAIL, PASS, Verdict
    from grader.result import Result

    result = Result(Path("exercises/a_long_folder_name/01_linen.ipynb"), "01_linen", verdicts=[
        Verdict("notebook", 1, 1, PASS), Verdict("SharedEmbedLM.gradient", 0, 2, FAIL, Finding("common.untied"))])
    lines = table(result, lang, 40).splitlines()
    # a line runs past 40 only when it is one word wider than that (a path is never split)
    assert all(width(line) <= 40 or " " not in line.strip() for line in lines), lines
    assert any(" " not in line.strip() and width(line) > 40 for line in lines)  # the path, whole

"""check() is always safe to run and speaks in the student's frame; the terminal
report fits the terminal (issue 25).  All in this process, no kernel started, but for
one test that holds check() and grader check equal on a cell that does not compile."""
from __future__ import annotations

import linecache
import re

import nbformat
import pytest

from grader import disk_cache
from grader.chapters import chapter
from grader.i18n import LANGUAGES, text
from grader.outcome import TIMEOUT
from grader.outputs.report import NARROWEST, as_dict, table, terminal_columns, width
from grader.pipeline.judge.notebook import judge_notebook
from grader.pipeline.supervise.supervisor import Limits
from grader.result import Result
from grader.selfcheck.check import check
from inprocess import check_in_process, run_cells
from notebooks import ROOT, solution, write

CELL = "<cell-student>"  # a notebook cell's code, as grader.kernel.runtime.CELL_FILE knows it


def cell_code(source: str) -> dict:
    """What a notebook cell defines when it runs ``source``, its lines quotable."""
    linecache.cache[CELL] = (len(source), None, source.splitlines(True), CELL)
    namespace: dict = {}
    exec(compile(source, CELL, "exec"), namespace)
    return namespace


def one_line(captured) -> str:
    """What check() printed, on stderr, as one line; nothing on stdout, no traceback."""
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_a_language_typo_is_one_line_naming_the_choices(capsys):
    assert check("01_linen", lang="kr", namespace={}) is None
    line = one_line(capsys.readouterr())
    assert "'kr'" in line and all(lang in line for lang in LANGUAGES)


@pytest.mark.parametrize("target", ["01_lnen", "tied_io_embd"])
def test_an_unknown_chapter_or_function_is_one_line_naming_the_choices(capsys, target):
    assert check(target, lang="es", namespace={}) is None
    line = one_line(capsys.readouterr())
    assert target in line and "01_linen" in line and "tied_io_embed" in line


@pytest.mark.parametrize("timeout", [0, -1, "10", float("nan"), True])
def test_a_bad_timeout_is_one_line(capsys, timeout):
    assert check("01_linen", lang="en", namespace={}, timeout=timeout) is None
    assert "timeout" in one_line(capsys.readouterr())


def test_a_stuck_function_is_a_timeout_verdict_naming_the_students_line():
    namespace = cell_code("def tied_io_embed(seed, token_ids, vocab_size, d_model):\n"
                          "    while True:\n"
                          "        seed = seed + 1\n")
    result = check("tied_io_embed", lang="en", namespace=namespace, timeout=3)
    (verdict,) = result.verdicts
    assert verdict.status == TIMEOUT and verdict.finding.key == "common.timeout_in_check"
    message = as_dict(result, "en")["items"][0]["message"]
    assert re.search(r"your line: (while True:|seed = seed \+ 1)$", message) and "timeout=" in message


def test_a_worked_example_that_never_ends_is_a_timeout_naming_its_cell(tmp_path):
    nb = nbformat.read(solution("01_linen"), as_version=4)
    position, example = next((n, c) for n, c in enumerate(nb.cells, 1) if "NBVAL_CHECK_OUTPUT" in c.source)
    example.source = "# NBVAL_CHECK_OUTPUT\nwhile True:\n    pass"
    namespace = {"__session__": str(write(nb, tmp_path / "01_linen.ipynb")), "_ih": [""]}
    notebook = as_dict(check("01_linen", lang="en", namespace=namespace, timeout=3), "en")["items"][0]
    assert notebook["verdict"] == TIMEOUT and notebook["key"] == "common.timeout_in_cell"
    assert f"cell {position} (“while True:”)" in notebook["message"] and "timeout=" in notebook["message"]


def test_ctrl_c_during_check_is_one_line(capsys):
    namespace = cell_code("def tied_io_embed(seed, token_ids, vocab_size, d_model):\n"
                          "    raise KeyboardInterrupt\n")
    assert check("tied_io_embed", lang="ko", namespace=namespace) is None
    assert one_line(capsys.readouterr()) == text("ui.stopped", "ko")


def test_before_run_all_a_name_in_the_notebook_is_not_run_yet(tmp_path):
    """check() right after opening the notebook (or after a restart): the notebook
    defines the names, the kernel has not run them."""
    notebook = write(nbformat.read(solution("01_linen"), as_version=4), tmp_path / "01_linen.ipynb")
    result = as_dict(check("01_linen", lang="en", namespace={"__session__": str(notebook), "_ih": [""]}), "en")
    messages = {i["item"]: i["message"] for i in result["items"]}
    assert {i["key"] for i in result["items"]} == {"common.not_run_yet"}, messages
    assert messages["TiedIO.params"].startswith("Not run yet in this kernel: TiedIO is in the notebook")
    assert "Run All Cells" in messages["TiedIO.params"] and "above" not in messages["TiedIO.params"]


def test_a_name_the_notebook_never_defines_is_still_not_found(tmp_path):
    nb = nbformat.read(solution("01_linen"), as_version=4)
    nb.cells = [c for c in nb.cells if "class TiedIO" not in c.source]
    notebook = write(nb, tmp_path / "01_linen.ipynb")
    namespace = {"__session__": str(notebook), "_ih": [""]}
    items = {i["item"]: i["key"] for i in as_dict(check("01_linen", lang="en", namespace=namespace), "en")["items"]}
    assert items["TiedIO.params"] == "common.missing" and items["tied_io_embed"] == "common.not_run_yet"


def test_an_untouched_exercise_gives_the_stubs_advice_once():
    nb = nbformat.read(ROOT / "exercises" / "01_linen.ipynb", as_version=4)
    for lang in LANGUAGES:
        items = check_in_process(nb, "01_linen", (lang,))[lang]["items"]
        advice = text("common.not_implemented", lang).split("(")[0].strip()
        stubs = [i for i in items if i["key"] == "common.not_implemented"]
        assert len(stubs) == len(items) and advice in stubs[0]["message"], items
        assert not any(advice in i["message"] for i in stubs[1:]), items


# ---------------------------------------------------------------- the terminal

def long_result() -> Result:
    nb = nbformat.read(ROOT / "exercises" / "04_gpt_head.ipynb", as_version=4)
    namespace, _ = run_cells(nb)
    return check("04_gpt_head", lang="en", namespace=namespace)


@pytest.mark.parametrize("columns", [60, 80, 132])
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_table_fits_the_terminal_and_breaks_between_words(columns, lang):
    result = long_result()
    shown = table(result, lang, columns)
    # a line runs past the edge only to end in one word wider than any room (never split)
    assert all(width(line) <= columns or width(line.split()[-1]) > NARROWEST for line in shown.splitlines()), shown
    words = set(re.split(r"\s+", shown))
    for item in as_dict(result, lang)["items"]:  # a word that fits the narrowest room is whole
        assert all(word in words for word in item["message"].split() if width(word) <= NARROWEST), shown


def test_the_width_comes_from_columns_or_is_80(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert terminal_columns() == 72
    monkeypatch.delenv("COLUMNS")
    assert terminal_columns() == 80  # pytest's output is not a terminal


def test_a_timeout_in_the_terminal_names_the_cell_and_how_to_give_more_time():
    ch = chapter("01_linen")
    summary = {"cells": [{"cell": 0, "passed": True}], "probes": "not_run",
               "timeout": {"where": "cell", "cell": 2, "line": "while True:"}}
    shown = [(2, "import jax"), (4, "class TiedIO(nn.Module):"), (5, "while True:")]
    limits = Limits(timeout=30)
    found = judge_notebook(ch, {}, summary, TIMEOUT, disk_cache, shown, timeout_s=limits.timeout,
                     step_s=limits.step_seconds, memory_bytes=limits.memory)
    result = Result(ROOT / "x.ipynb", ch.id, verdicts=found)
    for lang in LANGUAGES:
        message = as_dict(result, lang)["items"][0]["message"]
        assert "5" in message and "while True:" in message and "--timeout" in message


@pytest.mark.parametrize("chapter_id", sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb")))
def test_without_the_notebook_file_the_exercise_names_the_worked_examples_cells(chapter_id):
    """check() in a kernel that does not say which notebook it serves (no ``__session__``)
    names the worked examples' cells as the exercise has them."""
    from grader.cells import code_cells
    from grader.expected_outputs import for_chapter, is_checked
    from grader.selfcheck.kernel_notebook import exercise_cells

    exercise = nbformat.read(ROOT / "exercises" / f"{chapter_id}.ipynb", as_version=4)
    real = [shown for shown, cell in zip(code_cells(exercise.cells), (c for c in exercise.cells
                                                                        if c.cell_type == "code")) if is_checked(cell)]
    stand_in = exercise_cells(for_chapter(chapter_id)["worked_examples"])
    assert [shown for shown, cell in zip(code_cells(stand_in), (c for c in stand_in if c["cell_type"] == "code"))
            if is_checked(cell)] == real


# ---------------------------------------------------------------- the messages' words

def test_an_output_that_differs_on_a_later_line_says_lines_were_left_out():
    from grader.expected_outputs import first_difference

    assert first_difference("True\nTrue\nFalse\n", "True\nTrue\nTrue\n") == ("… ↵ True ↵ False", "… ↵ True ↵ True")
    assert first_difference("True\nFalse\n", "True\nTrue\n") == ("True ↵ False", "True ↵ True")


def test_a_numpy_draw_is_named_as_numpy_and_the_fix_is_int():
    from grader.chapters.gpt_head.grade import type_name
    from grader.i18n import render
    from grader.registry import Finding

    assert (type_name("int64"), type_name("int"), type_name("bool"), type_name("float")) == ("np.int64", "int", "bool",
                                                                                              "float")
    for lang in LANGUAGES:
        message = render(Finding("gpt_head.sample_not_int", {"type": "np.int64"}), lang)
        assert "np.int64" in message and "int(...)" in message and "rng.choice" not in message


# ---------------------------------------------------------------- the command line's input errors

def test_a_file_that_is_not_an_ipynb_is_not_a_notebook(tmp_path, capsys):
    from grader.cli import main

    script = tmp_path / "tied.py"
    script.write_text("print('hello')\n")
    assert main(["check", str(script), "--lang", "es"]) == 2
    line = one_line(capsys.readouterr())
    assert line == text("bad.not_ipynb", "es", path=str(script))


@pytest.mark.parametrize("argv", [["check", "missing.ipynb"], ["check", "missing.ipynb", "--lang", "kr"], ["check"]])
def test_with_json_a_usage_or_file_error_is_a_json_object(capsys, argv):
    import json

    from grader.cli import main

    assert main([*argv, "--json"]) == 2
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert set(report) == {"error", "exit"} and report["exit"] == 2 and "\n" not in report["error"]
    assert captured.err == ""


@pytest.mark.parametrize(("typed", "meant"), [("kr", "ko"), ("KOR", "ko"), ("sp", "es")])
def test_a_language_typo_suggests_the_code(capsys, monkeypatch, typed, meant):
    from grader.cli import main

    monkeypatch.setenv("TIED_LANG", "en")  # the language of a message about the language
    assert main(["check", "x.ipynb", "--lang", typed]) == 2
    assert f"did you mean {meant}?" in capsys.readouterr().err
    assert check("01_linen", lang=typed, namespace={}) is None
    assert f"did you mean {meant}?" in one_line(capsys.readouterr())


def test_a_language_code_in_capitals_is_the_code(capsys, tmp_path):
    from grader.cli import main

    assert main(["check", str(tmp_path / "missing.ipynb"), "--lang", "ES"]) == 2
    assert one_line(capsys.readouterr()) == text("bad.missing", "es", path=str(tmp_path / "missing.ipynb"))


# ---------------------------------------------------------------- a cell that does not compile

def broken_sample_next(tmp_path):
    """04's solution with an unclosed bracket in sample_next's cell; that cell's position."""
    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    position, broken = next((n, c) for n, c in enumerate(nb.cells, 1) if "def sample_next" in c.source)
    broken.source += "\nprint((1, 2)\n"
    notebook = write(nb, tmp_path / "04_gpt_head.ipynb")
    namespace, _ = run_cells(nb, notebook)
    return notebook, check("04_gpt_head", lang="en", namespace=namespace), position


def test_a_cell_that_does_not_compile_is_named_by_the_notebook_item_and_its_items(tmp_path):
    """grader check's kernel stops at the cell with the SyntaxError; check() finds it by
    compiling each cell, and the items it defines name it rather than 'define it'."""
    _, in_kernel, position = broken_sample_next(tmp_path)
    for lang in LANGUAGES:
        items = {i["item"]: i for i in as_dict(in_kernel, lang)["items"]}
        assert items["notebook"]["key"] == "common.cell_error", items["notebook"]
        assert items["notebook"]["params"]["type"] == "SyntaxError" and items["notebook"]["params"]["cell"] == position
        for name in ("sample_next", "sample_next.greedy"):
            assert items[name]["key"] == "common.does_not_compile", items[name]
            assert str(position) in items[name]["message"] and "SyntaxError" in items[name]["message"]


def test_a_cell_that_does_not_compile_gets_the_same_verdicts_in_the_terminal(tmp_path):
    from grader.pipeline.runner import grade

    notebook, in_kernel, _ = broken_sample_next(tmp_path)
    in_terminal = grade(notebook, Limits(timeout=90))
    assert [(i["item"], i["key"], i["message"]) for i in as_dict(in_terminal, "es")["items"]] == \
           [(i["item"], i["key"], i["message"]) for i in as_dict(in_kernel, "es")["items"]]


def test_a_failing_line_the_worked_example_wrote_is_not_called_the_students():
    from grader.expected_outputs import example_lines
    from grader.i18n import render
    from grader.pipeline.judge.notebook import notebook_item_verdict

    provided = example_lines("04_gpt_head")
    ours = "out = tied_head_forward(np.array([0, 3, 3, 5]), E)"
    assert ours in provided
    for line, label in ((ours, "ui.example_line"), ("return logits.T", "ui.your_line")):
        record = {"cell": 2, "passed": False, "error": {"type": "ValueError", "message": "bad", "line": line}}
        finding = notebook_item_verdict([record], (), provided).finding
        for lang in LANGUAGES:
            assert render(finding, lang).endswith(text(label, lang, line=line))

"""The in-notebook check() and `grader check` give one verdict: the same items, points,
verdicts and messages, the ``notebook`` item included, on every solution and every
pitfall that goes through a kernel, and in the three languages."""
import nbformat
import pytest

from conftest import chapters
from grader import check
from grader.i18n import LANGUAGES
from grader.outputs.report import as_dict
from grader.pipeline.runner import grade
from grader.selfcheck.panel import panel_html
from inprocess import check_in_process, run_cells
from notebooks import replace_regions, solution, write
from pitfalls import PITFALLS

FIELDS = ("item", "points", "max_points", "verdict", "key", "message")


def namespace_of(nb) -> dict:
    """Run the notebook's code cells here (the check cell stands aside), whatever they raise."""
    return run_cells(nb)[0]


def rows(entry: dict) -> list[tuple]:
    return [tuple(item[f] for f in FIELDS) for item in entry["items"]]


CASES = [(f"solution/{c}", c, {}) for c in chapters()] + \
        [(f"pitfall/{p.id}", p.chapter, p.regions) for p in PITFALLS if p.kernel and p.chapter in chapters()]


@pytest.mark.parametrize("entry,chapter,regions", CASES, ids=[c[0] for c in CASES])
def test_check_agrees_with_grader(batch, entry, chapter, regions):
    nb = replace_regions(chapter, regions) if regions else nbformat.read(solution(chapter), as_version=4)
    assert rows(check_in_process(nb, chapter)["en"]) == rows(batch[entry])


def with_debug_print_and_broken_example(nb):
    """The student's two usual accidents: a debug print in a graded function (a worked
    example then prints more) and an edited worked example."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "def tied_io_embed(" in cell.source:
            cell.source = cell.source.replace("):\n", "):\n    print('debug', token_ids)\n", 1)
        if cell.cell_type == "code" and "NBVAL_CHECK_OUTPUT" in cell.source and "table = " in cell.source:
            cell.source = cell.source.replace("print(bool(", "print(1, bool(")
    return nb


@pytest.mark.skipif("01_linen" not in chapters(), reason="chapter 01 not selected")
def test_check_agrees_with_grader_in_three_languages(tmp_path):
    nb = with_debug_print_and_broken_example(nbformat.read(solution("01_linen"), as_version=4))
    path = tmp_path / "01_linen.ipynb"
    write(nb, path)
    graded = grade(path)
    mine = check_in_process(nb, "01_linen", LANGUAGES)
    for lang in LANGUAGES:
        assert rows(mine[lang]) == rows(as_dict(graded, lang)), lang
    notebook = mine["en"]["items"][0]
    assert notebook["key"] == "common.output_mismatch" and "Cell 11 (“logits = tied_io_embed(" in notebook["message"]


def test_check_one_function_and_plain_text_fallback():
    ns = namespace_of(nbformat.read(solution("01_linen"), as_version=4))
    result = check(ns["tied_io_embed"], lang="ko", namespace=ns)
    assert [v.item for v in result.verdicts] == ["tied_io_embed"]
    assert "tied_io_embed" in repr(result) and "합계" in repr(result)
    assert ">✔ tied_io_embed</b>" in panel_html(result, "es")


def test_check_stands_aside_when_the_grader_runs_the_notebook(monkeypatch, capsys):
    monkeypatch.setenv("TIED_GRADING", "1")
    assert check("01_linen", lang="es") is None
    assert "corrector" in capsys.readouterr().out

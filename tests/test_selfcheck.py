"""The in-notebook check() agrees with `grader check` on the same code."""
import nbformat
import pytest

from conftest import chapters
from grader import check
from grader.selfcheck import panel
from inprocess import run_cells
from notebooks import replace_regions, solution
from pitfalls import PITFALLS


def namespace_of(nb) -> dict:
    """Run the notebook's code cells here (the check cell stands aside), whatever they raise."""
    return run_cells(nb)[0]


def keys(items):
    return {i["item"]: (i["verdict"] if i["verdict"] == "pass" else i["key"]) for i in items if i["item"] != "notebook"}


CASES = [(f"solution/{c}", c, {}) for c in chapters()] + \
        [(f"pitfall/{p.id}", p.chapter, p.regions) for p in PITFALLS if p.kernel and p.chapter in chapters()]


@pytest.mark.parametrize("entry,chapter,regions", CASES, ids=[c[0] for c in CASES])
def test_check_agrees_with_grader(batch, entry, chapter, regions):
    nb = replace_regions(chapter, regions) if regions else nbformat.read(solution(chapter), as_version=4)
    result = check(chapter, lang="en", namespace=namespace_of(nb))
    mine = {v.item: (v.status if v.status == "pass" else v.finding.key) for v in result.verdicts}
    assert mine == keys(batch[entry]["items"])


def test_check_one_function_and_plain_text_fallback():
    ns = namespace_of(nbformat.read(solution("01_linen"), as_version=4))
    result = check(ns["tied_io_embed"], lang="ko", namespace=ns)
    assert [v.item for v in result.verdicts] == ["tied_io_embed"]
    assert "tied_io_embed" in repr(result) and "합계" in repr(result)
    assert len(panel(result, "es").children) == 2


def test_check_stands_aside_when_the_grader_runs_the_notebook(monkeypatch, capsys):
    monkeypatch.setenv("TIED_GRADING", "1")
    assert check("01_linen", lang="es") is None
    assert "corrector" in capsys.readouterr().out

"""Every chapter: the solution earns full marks, the untouched exercise earns zero with
'not implemented' on every item, and every pitfall gets its own diagnosis."""
import pytest

from conftest import chapters, pitfall_entry
from pitfalls import PITFALLS


@pytest.mark.parametrize("chapter", chapters())
def test_solution_full_marks(batch, chapter):
    entry = batch[f"solution/{chapter}"]
    failed = {i["item"]: i["message"] for i in entry["items"] if i["verdict"] != "pass"}
    assert failed == {}
    assert entry["points"] == entry["max_points"] > 0


@pytest.mark.parametrize("chapter", chapters())
def test_exercise_scores_zero_with_hints(batch, chapter):
    entry = batch[f"exercise/{chapter}"]
    assert entry["points"] == 0
    assert {i["key"] for i in entry["items"]} == {"common.not_implemented"}
    assert all("hint:" in i["message"] for i in entry["items"])


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.chapter in chapters()], ids=lambda p: p.id)
def test_pitfall_is_named(batch, pitfall):
    entry = pitfall_entry(batch, pitfall)
    assert entry["chapter"] == pitfall.chapter
    got = {i["item"]: (i["verdict"] if i["verdict"] == "pass" else i["key"]) for i in entry["items"]}
    for item, want in pitfall.expect.items():
        assert item in got, f"{pitfall.id} expects item {item}, which chapter {pitfall.chapter} does not grade"
        wanted = want if isinstance(want, set) else {want}
        assert got[item] in wanted, f"{item}: {got[item]} not in {wanted}"
    assert entry["points"] < entry["max_points"]


@pytest.mark.skipif("01_linen" not in chapters(), reason="TIED_CHAPTERS leaves chapter 01 out")
def test_exception_shows_the_students_line(batch):
    item = next(i for i in batch["pitfall/01_linen-typo"]["items"] if i["item"] == "tied_io_embed")
    assert "idz" in item["message"] and "NameError" in item["message"]

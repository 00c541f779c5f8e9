"""The class report as a teacher reads it: the key mistake in words, in the report's
language, named by the item that made it; pass rates as counts; Korean plot labels
drawn with a CJK font, with no missing-glyph warning."""
import warnings
from pathlib import Path

import pytest
from matplotlib import font_manager

from grader import class_report
from grader.outcome import FAIL, PASS, Finding, Verdict
from grader.report import as_dict, item_message
from grader.result import Result

CHAPTER = "04_gpt_head"


def entry(student: str, verdicts: list[Verdict]) -> dict:
    result = Result(Path(student) / f"{CHAPTER}.ipynb", chapter=CHAPTER, verdicts=verdicts)
    return {"student": student, **as_dict(result, "en")}


def failed(item: str, key: str, **params) -> Verdict:
    return Verdict(item, 0, 1, FAIL, Finding(key, params))


def test_the_key_mistake_is_the_items_own_in_the_reports_language():
    notebook = failed("notebook", "common.output_mismatch", cell=3)
    sampling = failed("sample_next_token", "gpt_head.temperature_ignored")
    cell = class_report.key_mistake(entry("ana", [notebook, sampling]), "ko")
    assert cell.startswith("<b>sample_next_token</b>: ")
    assert "gpt_head.temperature_ignored" not in cell and "title=" not in cell
    assert item_message(entry("ana", [sampling])["items"][0], "ko") in cell
    assert class_report.key_mistake(entry("bo", [notebook]), "en").startswith("<b>notebook</b>: ")


def test_pass_rates_are_counts_not_bare_percentages():
    entries = {str(i): entry(s, [Verdict("lm_head", p, 1, PASS if p else FAIL,
                                         None if p else Finding("common.not_implemented", {}))])
               for i, (s, p) in enumerate((("ana", 1), ("bo", 0), ("chen", 1)))}
    page = class_report.render_html(entries, "en")
    assert "2 of 3" in page and "67%" not in page


@pytest.mark.skipif(not any("NotoSansCJK" in f for f in font_manager.findSystemFonts()),
                    reason="no Noto Sans CJK font (fonts-noto-cjk) on this machine")
def test_korean_plot_labels_have_every_glyph():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        class_report.score_plots([{"chapter": CHAPTER, "max_points": 2, "points": 1}], "ko")
    assert not [w for w in caught if "Glyph" in str(w.message)]

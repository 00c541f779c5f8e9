"""Each case has a visibility (Gradescope's words): "visible" for a worked example,
"hidden" for the others, "after_due_date" where the chapter holds the feedback back.
A failure on an "after_due_date" case keeps its points in every format; on Gradescope
and PrairieLearn its message waits."""
from __future__ import annotations

import jsonschema
import pytest

import grader.pipeline.judge.items as judging
from grader import disk_cache
from grader.chapters import chapter, chapters
from grader.outputs.platforms import gradescope_results, prairielearn_results
from grader.pipeline.prepare.probe_bundle import run_in_process
from grader.registry import VISIBILITIES, Case
from test_platforms import schema


def every_case():
    for ch in chapters().values():
        for item in ch.items:
            for case in item.drawn_cases():
                yield ch.id, item.name, case


def test_every_visibility_is_in_use():
    found = {case.visibility for *_, case in every_case()}
    assert found == set(VISIBILITIES)  # all three are in use (Case refuses a contradictory one)


@pytest.mark.parametrize("public, visibility", [(True, "hidden"), (False, "visible"), (False, "soon")])
def test_a_visibility_that_contradicts_the_case_is_refused(public, visibility):
    with pytest.raises(ValueError, match=visibility):
        Case("case.hidden", {}, public=public, visibility=visibility)


def tie_weights_unless_large(embedding, lm_head):
    """Right, except past 100 tokens in the vocabulary: there the head keeps its own matrix."""
    if embedding.weight.shape != lm_head.weight.shape:
        raise ValueError(f"{tuple(embedding.weight.shape)} vs {tuple(lm_head.weight.shape)}")
    if embedding.weight.shape[0] <= 100:
        lm_head.weight = embedding.weight


def graded(tie_weights) -> dict:
    """The gradebook entry of a submission holding only ``tie_weights``, judged here."""
    ch = chapter("03_pytorch")
    facts = run_in_process(ch, {"tie_weights": tie_weights}, only="tie_weights")
    item = ch.item("tie_weights")
    v = judging.judge_item(ch, item, facts[item.name], disk_cache)
    return {"points": v.points, "max_points": v.max_points, "items": [{
        "item": v.item, "points": v.points, "max_points": v.max_points, "verdict": v.status,
        "key": v.finding.key if v.finding else "", "case": v.case, "visibility": v.visibility,
        "message": f"{v.finding.key} [{v.shown['shape']}]" if v.finding else ""}]}


def test_a_failure_on_an_after_due_date_case_keeps_its_points_and_holds_its_message():
    entry = graded(tie_weights_unless_large)
    (item,) = entry["items"]
    assert (item["verdict"], item["visibility"], item["key"]) == ("fail", "after_due_date", "pytorch.not_tied")
    results = gradescope_results(entry, "en")
    jsonschema.validate(results, schema("gradescope_results"))
    scored, details = results["tests"]
    assert scored["score"] == 0 and scored["visibility"] == "visible"
    assert "after the due date" in scored["output"] and "not_tied" not in scored["output"]
    assert details["visibility"] == "after_due_date" and "pytorch.not_tied" in details["output"]
    assert "score" not in details and results["score"] == 0
    prairie = prairielearn_results(entry, "es")
    jsonschema.validate(prairie, schema("prairielearn_results"))
    assert "fecha" in prairie["tests"][0]["message"] and "not_tied" not in prairie["tests"][0]["message"]


def test_a_failure_on_a_hidden_case_is_shown_at_once():
    def untied_when_square(embedding, lm_head):
        if embedding.weight.shape[0] != embedding.weight.shape[1]:
            lm_head.weight = embedding.weight

    entry = graded(untied_when_square)
    (item,) = entry["items"]
    assert (item["verdict"], item["visibility"]) == ("fail", "hidden")
    (test,) = gradescope_results(entry, "en")["tests"]
    assert test["visibility"] == "visible" and item["message"] in test["output"]

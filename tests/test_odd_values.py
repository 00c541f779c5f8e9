"""Every judge meets odd values without crashing, and a forged or short record never passes.

What comes back from the student's kernel is untrusted: any JSON value, or any array
NumPy can load without pickles (complex, bfloat16 as two raw bytes, 0-d, empty, huge,
NaN), one record per item or several.  Hypothesis feeds each item's judge such values;
whatever they are, the item gets a verdict that renders in every language, and it is not
a pass.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import grader.pipeline.judge.items as judging
from conftest import chapters
from grader import disk_cache
from grader.chapters import chapter
from grader.i18n import LANGUAGES
from grader.kernel.runtime import encode
from grader.outputs.report import verdict_message
from inprocess import solution_facts

ITEMS = [(c, item.name) for c in chapters() for item in chapter(c).items]
# Items whose fact is what the student's function returned, as it returned it; the
# other probes build their facts themselves (parameter trees, flags, summaries), so an
# odd value there is a forged record, and "could not be judged" is its right verdict.
RETURNED = [(c, item.name) for c in chapters() for item in chapter(c).items if item.probe in ("call", "call_alone")]

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.bool_, np.complex64, np.float16])
# bfloat16 leaves a JAX kernel as two raw bytes a number (NumPy's void dtype V2).
ARRAYS = hnp.arrays(DTYPES, SHAPES) | hnp.arrays(np.uint16, SHAPES).map(lambda a: a.view("V2"))
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)
# The shapes the issue names, each as it travels from the kernel.
NAMED = {
    "ragged list": [[1.0, 2.0], [3.0]],
    "None": None,
    "string": "logits",
    "dict": {"a": 1},
    "bfloat16": encode(np.zeros(3, dtype="V2")),
    "complex": encode(np.ones((2, 2), np.complex64)),
    "0-d": encode(np.float32(1.5)),
    "empty": encode(np.zeros((0,), np.float32)),
    "huge": encode(np.full((3, 3), 1e38, np.float32)),
    "NaN": encode(np.full((2, 4), np.nan, np.float32)),
}


def verdict_for(ch_id, name, values):
    ch = chapter(ch_id)
    item = ch.item(name)
    return judging.judge_item(ch, item, [{"value": v} for v in values], disk_cache)


@pytest.mark.parametrize("ch_id,name", RETURNED)
@pytest.mark.parametrize("kind", sorted(NAMED))
def test_named_odd_value_gets_a_clean_verdict(ch_id, name, kind):
    """The judge itself names these values; it does not fall back on the "could not be
    judged" guard."""
    n = len(disk_cache.cases(ch_id, name))
    verdict = verdict_for(ch_id, name, [NAMED[kind]] * n)
    assert verdict.finding is None or verdict.finding.key != "common.not_judged", verdict_message(verdict, "en")
    for lang in LANGUAGES:
        assert verdict.status == judging.PASS or verdict_message(verdict, lang)


@pytest.mark.parametrize("ch_id,name", ITEMS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(JSONISH, ARRAYS.map(encode)))
def test_any_value_gets_a_verdict(ch_id, name, value):
    n = len(disk_cache.cases(ch_id, name))
    verdict = verdict_for(ch_id, name, [value] * n)
    assert verdict.status in (judging.PASS, judging.FAIL)
    for lang in LANGUAGES:
        verdict_message(verdict, lang)


@pytest.mark.parametrize("ch_id,name", ITEMS)
def test_a_short_or_extra_record_never_passes(ch_id, name):
    ch = chapter(ch_id)
    item = ch.item(name)
    good = solution_facts(ch_id)[name]
    assert judging.judge_item(ch, item, good, disk_cache).status == judging.PASS
    for facts in ([], good[:-1], good + good[:1], "facts", None):
        assert judging.judge_item(ch, item, facts, disk_cache).finding.key == "common.bad_record"
    both = {"value": good[0].get("value"), "error": {"type": "", "message": "", "line": ""}}
    for forged in (both, {"value": {"__nd__": "bm90IGFuIGFycmF5"}}, {"error": "x"}, ["value"]):
        assert judging.judge_item(ch, item, [forged] + good[1:], disk_cache).finding.key == "common.malformed_record"
    assert judging.judge_records(ch, item, [good, good], disk_cache).finding.key == "common.bad_record"
    assert judging.judge_records(ch, item, [good], disk_cache).status == judging.PASS

"""The judge records a stub's hint as the stub raised it, in English, with the catalog key
of the function that raised it; every message built from it, the first and the later
ones, gives the hint in the reader's language."""
import pytest

from grader.expected_outputs import for_chapter
from grader.i18n import LANGUAGES, catalog, render
from grader.outcome import Finding
from grader.pipeline.judge.items import classify_error

CHAPTER = "03_pytorch"
FUNCTION, HINT_KEY = min(for_chapter(CHAPTER)["stub_hints"].items())


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("key", ["common.not_implemented", "common.not_implemented_again"])
def test_a_stubs_hint_is_given_in_the_readers_language(key, lang):
    error = {"type": "NotImplementedError", "message": catalog("en")[HINT_KEY], "line": "", "function": FUNCTION}
    finding = classify_error(error, (), chapter_id=CHAPTER)
    assert finding == Finding("common.not_implemented", {"message": catalog("en")[HINT_KEY], "message_key": HINT_KEY})
    assert catalog(lang)[HINT_KEY] in render(Finding(key, finding.params), lang)

"""The judge records a stub's hint as the stub raised it, in English; every message built
from it, the first and the later ones, gives the hint in the reader's language."""
import pytest

from grader.i18n import LANGUAGES, catalog, render
from grader.judge import classify_error
from grader.outcome import Finding

HINT_KEY = next(k for k in sorted(catalog("en")) if ".hint_" in k)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("key", ["common.not_implemented", "common.not_implemented_again"])
def test_a_stubs_hint_is_given_in_the_readers_language(key, lang):
    error = {"type": "NotImplementedError", "message": catalog("en")[HINT_KEY], "line": ""}
    finding = classify_error(error, ())
    assert finding == Finding("common.not_implemented", {"message": catalog("en")[HINT_KEY]})
    assert catalog(lang)[HINT_KEY] in render(Finding(key, finding.params), lang)

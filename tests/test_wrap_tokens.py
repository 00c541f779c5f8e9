"""The terminal report never splits a word: an address, an identifier or a quoted line
of code wider than the room goes on a line of its own, whole (issue 27: the wrapper cut
``https://docs.jax.dev/en/latest/errors.h`` / ``tml#...`` and ``TracerArrayConversionErr``
/ ``or``, which cannot be copied or searched)."""
from __future__ import annotations

import re

import pytest

from grader.i18n import LANGUAGES, text
from grader.outputs.report import width, wrap

URL = "https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError"
NAME = "jax.errors.TracerArrayConversionError"
CODE = "`embedding_init=nn.initializers.normal(stddev=0.02),`"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("columns, indent", [(80, 30), (40, 4), (20, 0)])
def test_an_address_an_identifier_or_code_stays_whole(lang, columns, indent):
    message = f"{text('ui.case', lang)} {URL} {NAME} {text('ui.total', lang)} {CODE} np.asarray(token_ids)"
    shown = wrap(message, columns - indent, indent)
    lines = shown.split("\n" + " " * indent)
    words = [w for line in lines for w in line.split(" ")]
    assert words == message.split(" "), shown  # no word cut, none lost, the order kept
    for line in lines:  # a line runs past the room only when it is one word wider than it
        assert width(line) <= columns - indent or (" " not in line and width(line) > columns - indent), shown


def test_words_that_fit_still_fill_the_lines():
    message = " ".join(["tied"] * 30)
    lines = wrap(message, 20, 0).splitlines()
    assert all(width(line) <= 20 for line in lines) and len(lines) == 8
    assert re.sub(r"\s", "", "".join(lines)) == "tied" * 30

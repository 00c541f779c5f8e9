"""Sphinx extension: glued numbers in the Spanish and Korean notes, in each language's form.

``{glue-es}`key:spec``` and ``{glue-ko}`key:spec``` paste a glued value as myst-nb's
``{glue:text}`` does (same key, same format spec), then write every number in it as the
language writes numbers (:func:`grader.i18n.number`, Babel): 23,440,896 and 23.7% in the
English text become 23 440 896 and 23,7 % in a Spanish note, 23,440,896 and 23.7% in a
Korean one.  The grader's messages use the same function, so a number reads the same in the
book and in the terminal.
"""
from __future__ import annotations

import re

from docutils import nodes
from myst_nb.ext.glue.roles import PasteTextRole
from sphinx.application import Sphinx

from grader.i18n import number, percent

# A number as Python's format() writes it: 23,440,896, 0.25, 3.2e-07, 23.7%.
ENGLISH_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w])"
                            r"|(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?(?![\w])")


def localise(text: str, lang: str) -> str:
    """Every number in ``text`` written in ``lang``'s form; a shape, ``(30522, 768)``, is
    code and stays as Python prints it."""
    if re.fullmatch(r"\s*(?:torch\.Size\()?[(\[].*[)\]]\s*", text):
        return text
    def one(match: re.Match) -> str:
        digits = match.group(0).replace(",", "")
        if digits.endswith("%"):
            decimals = len(digits.partition(".")[2].rstrip("%"))
            return percent(float(digits[:-1]) / 100, lang, decimals)
        return number(digits, lang)
    return ENGLISH_NUMBER.sub(one, text)


class LocaleGlueRole(PasteTextRole):
    """``{glue:text}`` for a note in ``lang``."""

    def __init__(self, lang: str):
        self.lang = lang

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        pasted, messages = super().run()
        for node in pasted:
            for text in list(node.findall(nodes.Text)):
                text.parent.replace(text, nodes.Text(localise(str(text), self.lang)))
        return pasted, messages


def setup(app: Sphinx) -> dict:
    for lang in ("es", "ko"):
        app.add_role(f"glue-{lang}", LocaleGlueRole(lang))
    return {"parallel_read_safe": True, "parallel_write_safe": True}

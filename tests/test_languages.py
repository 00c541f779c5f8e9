"""Every section of every chapter carries its Spanish and Korean note."""
import re

import pytest

from notebooks import ROOT

PAGES = sorted((ROOT / "book").glob("*.md"))
SECTION = re.compile(r"(?m)^## ")
NOTE = {
    "es": re.compile(r"```\{admonition\} 🇪🇸 Nota\n:class: [^\n]*\blang-es\b"),
    "ko": re.compile(r"```\{admonition\} 🇰🇷 참고\n:class: [^\n]*\blang-ko\b"),
}
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def sections(page):
    text = page.read_text(encoding="utf-8")
    parts = SECTION.split(text)
    intro, rest = parts[0], parts[1:]
    return [("(intro)", intro)] * ("# " in intro and bool(NOTE["es"].search(intro))) + \
        [(part.splitlines()[0], part) for part in rest]


@pytest.mark.parametrize("page", [p for p in PAGES if p.stem != "glossary"], ids=lambda p: p.stem)
def test_every_section_has_one_note_per_language(page):
    found = sections(page)
    assert found, f"{page.name} has no sections"
    for title, body in found:
        for lang, pattern in NOTE.items():
            assert len(pattern.findall(body)) == 1, f"{page.name}: section '{title}' needs one {lang} note"


@pytest.mark.parametrize("page", [p for p in PAGES if p.stem != "glossary"], ids=lambda p: p.stem)
def test_korean_notes_are_korean(page):
    text = page.read_text(encoding="utf-8")
    for block in re.findall(r"```\{admonition\} 🇰🇷 참고\n(.*?)```", text, re.S):
        assert len(HANGUL.findall(block)) > 20, block[:80]

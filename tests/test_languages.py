"""Every section of every chapter carries its Spanish and Korean note."""
import re

import pytest

from notebooks import ROOT

PAGES = sorted((ROOT / "book").glob("*.md"))
# Reference pages, not sections to explain: the glossary (in three languages itself) and
# the bibliography.
CHAPTERS = [page for page in PAGES if page.stem not in ("glossary", "bibliography")]
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


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_every_section_has_one_note_per_language(page):
    found = sections(page)
    assert found, f"{page.name} has no sections"
    for title, body in found:
        for lang, pattern in NOTE.items():
            assert len(pattern.findall(body)) == 1, f"{page.name}: section '{title}' needs one {lang} note"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_korean_notes_are_korean(page):
    text = page.read_text(encoding="utf-8")
    for block in re.findall(r"```\{admonition\} 🇰🇷 참고\n(.*?)```", text, re.S):
        assert len(HANGUL.findall(block)) > 20, block[:80]


# --- Chapter references: a note points to the pages its English section points to ---------

NOTE_BODY = re.compile(r"```\{admonition\} (?:🇪🇸 Nota|🇰🇷 참고)\n:class: [^\n]*\blang-(es|ko)\b[^\n]*\n(.*?)```", re.S)
CODE_CELL = re.compile(r"```\{code-cell\}.*?```", re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
DOC_LINK = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
# A page's id as the book writes it, 00 to 07 with an optional a/b: "chapter 00", "el 02b".
CHAPTER_ID = re.compile(r"(?<![\w.,\-/])(0[0-7][ab]?)(?![\w.])")
RANGE = re.compile(r"(?<![\w.])0?([0-7])\s+(?:to|al|부터)\s+0?([0-7])(?![\w.])")
# The same ids after the word, even without the leading zero: "chapters 4 and 5", "capítulo 6".
NAMED = re.compile(r"(?i)\b(?:chapters?|cap[ií]tulos?|p[aá]ginas?|pages?)\s+"
                   r"(0?[0-7][ab]?(?:(?:,\s*|\s+(?:and|or|y|o)\s+)0?[0-7][ab]?)*)(?![\w.])")
KOREAN_CHAPTER = re.compile(r"(?<![\d.])0?([0-7])([ab]?)장")
THIS_PAGE = re.compile(r"(?i)\bthis (?:chapter|page)\b|\beste capítulo\b|\besta página\b|이 (?:장|페이지)")


def page_id(stem: str) -> str:
    return stem.split("_")[0]


def references(text: str, here: str) -> set[str]:
    """The pages ``text`` refers to, by link, by chapter number or as "this chapter"."""
    found = {page_id(target.strip()) for target in DOC_LINK.findall(text)}
    prose = INLINE_CODE.sub(" ", DOC_LINK.sub(" ", text))
    found |= set(CHAPTER_ID.findall(prose))
    found |= {f"0{n.lstrip('0')[-2:] or '0'}" for names in NAMED.findall(prose)
              for n in re.findall(r"0?[0-7][ab]?", names)}
    found |= {f"0{n}" for a, b in RANGE.findall(prose) for n in range(int(a), int(b) + 1)}
    found |= {f"0{n}{part}" for n, part in KOREAN_CHAPTER.findall(prose)}
    return found | ({here} if THIS_PAGE.search(prose) else set())


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_notes_refer_to_the_pages_their_section_refers_to(page):
    """A note that names a chapter names one its English section names (or the page itself):
    a note left pointing at chapter 01 when its section moved to 01b fails here."""
    here, wrong = page_id(page.stem), []
    for title, body in sections(page):
        english = CODE_CELL.sub(" ", NOTE_BODY.sub(" ", body))
        allowed = references(english, here) | {here}
        for lang, note in NOTE_BODY.findall(body):
            extra = references(note, here) - allowed
            if extra:
                wrong.append(f"{title} [{lang}]: {sorted(extra)} not among {sorted(allowed)}")
    assert not wrong, f"{page.name}:\n" + "\n".join(wrong)


def test_references_are_read_in_every_form():
    assert references("{doc}`chapter 00 <00_why_tie>` and chapter 01; 02b compares", "x") == {"00", "01", "02b"}
    assert references("Chapters 01 to 03 tied", "x") == {"01", "02", "03"}
    assert references("chapters 4 and 5, capítulo 6, chapter 1b, chapter 0", "x") == {"04", "05", "06", "01b", "00"}
    assert references("0장과 1장, 4장과 5장, 이 장", "06") == {"00", "01", "04", "05", "06"}
    assert references("`exercises/01_linen.ipynb`, T5 v1.1, 0.02, 0,02, Llama 3 8B", "x") == set()


# --- Numbers in the notes follow the note's language ----------------------------------------

MATH = re.compile(r"\$[^$\n]+\$")
GLUE_ROLE = re.compile(r"\{glue(?::\w+|-\w+)\}`[^`]*`")
# Spanish writes 0,25 and 23 440 896, and a space before %; Korean writes 23.7%.
WRONG_NUMBER = {
    "es": [re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])"), re.compile(r"\d,\d{3},\d{3}"), re.compile(r"\d%")],
    "ko": [re.compile(r"\d %")],
}
# A version is not a quantity: "Llama 3.2", "PyTorch 2.6", "Python 3.12" keep their point.
VERSION = re.compile(r"\b[A-Z][\w-]*\s+\d+\.\d+")


def number_slips(lang: str, note: str) -> list[str]:
    prose = VERSION.sub(" ", MATH.sub(" ", INLINE_CODE.sub(" ", GLUE_ROLE.sub(" ", note))))
    return [m.group(0) for pattern in WRONG_NUMBER[lang] for m in pattern.finditer(prose)]


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_numbers_in_notes_follow_the_locale(page):
    """A glued number in a note goes through the locale's formatter ({glue-es}, {glue-ko},
    tools/locale_glue.py, Babel), and a number written by hand is written as the language
    writes it."""
    found = []
    for lang, note in NOTE_BODY.findall(page.read_text(encoding="utf-8")):
        found += [f"[{lang}] {{glue:text}} in a note: use {{glue-{lang}}}"] * note.count("{glue:text}")
        found += [f"[{lang}] {slip!r}" for slip in number_slips(lang, note)]
    assert not found, f"{page.name}:\n" + "\n".join(found)


def test_number_slips_are_caught():
    assert number_slips("es", "dropout 0.3, 23,440,896 tokens, un 24% más") == ["0.3", "3,440,896", "4%"]
    assert not number_slips("es", "dropout 0,3; Llama 3.2 1B; `0.02`; $0.02$; {glue-es}`x:.1%`; 24 %")
    assert number_slips("ko", "95 % 신뢰 구간") and not number_slips("ko", "95% 신뢰 구간, 드롭아웃 0.3")


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_no_backtick_in_a_directive_fenced_with_backticks(page):
    """A ```{admonition} title holding a backtick ends the fence's info string early:
    MyST then reads the rest of the page as text (02b's aside swallowed its notes)."""
    bad = [line for line in page.read_text(encoding="utf-8").splitlines()
           if line.startswith("```{") and "`" in line[3:]]
    assert not bad, bad

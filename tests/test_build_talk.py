"""No build or test talk in the prose a reader sees.

A page teaches its subject; how the book is built and checked is not part of it. Sentences
such as "a hidden cell checks it", "checked separately on torch 2.13", "made with Python
3.11.7", "this page's build" or "the test suite" speak of the machinery, and the reader can
do nothing with them. A hidden cell may still assert what the prose says; the prose does not
talk about it. What may say it is a folded aside (an admonition titled "Under the hood" with
the dropdown class), and code: both are left out before the search, as are math and inline
code. The Spanish and Korean notes are prose and are searched too.

Reads the built HTML (`make book` first; TIED_HTML points at another build).
"""
from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from built_book import HTML, pages

# Each pattern names one way of talking about the machinery. Teaching uses of the same words
# stay out: "a hidden case" (the grader's), "build the model", "a t-test", "PyTorch 2.13's
# nn.Linear" (an API fact, which the claims ledger covers).
LIB = r"(?:Python|PyTorch|torch|JAX|jax|jaxlib|Flax|flax|NumPy|numpy|transformers|Jupyter Book)"
VERSION = r"v?\d+\.\d+(?:\.\d+)?"
BUILD_TALK = {
    "a hidden cell": r"\bhidden (?:code )?cells?\b|\bhidden assert",
    "checked on a version": rf"\b(?:checked|verified|tested|confirmed)\b(?:\s+\w+){{0,3}}?"
                            rf"\s+(?:on|with|against|under|in)\s+{LIB}\s+{VERSION}",
    "made with a version": rf"\b(?:made|built|produced|generated|ran|run|computed|rendered) "
                           rf"(?:here )?(?:with|by|on|under) {LIB} {VERSION}",
    "a patch-level Python": r"\bPython 3\.\d+\.\d+",
    "this page's build": r"\b(?:this|the) (?:page's|book's) build\b|\bbuilt this page\b"
                         r"|\b(?:each time|every time|when) (?:it|(?:this|the) (?:page|book)) (?:is|was) built\b"
                         r"|\b(?:this|the) page (?:also )?(?:checks|asserts|verifies)\b",
    "at build time": r"\bat build time\b|\b(?:fails?|break|breaks|stop|stops) the build\b"
                     r"|\bthe build (?:fails|breaks|stops|checks|runs)\b",
    "the test suite": r"\btest[- ]suite\b|\bthe (?:book's )?tests? (?:check|checks|fail|fails|covers?|runs?)\b"
                      r"|\bunit tests?\b",
    "a test tool": r"\bnbval\b|\bpytest\b|\bmake test\b|\btests/\w+",
    "CI": r"\bCI\b|\bcontinuous integration\b",
    "es: celda oculta": r"\bceldas? ocultas?\b",
    "es: al construir el libro": r"\b(?:al|cada vez que se) (?:construir|compilar|construye|compila) "
                                 r"(?:el libro|esta página|la página)\b|\bbatería de pruebas\b",
    "ko: 숨긴 셀": r"숨(?:긴|겨진|은) (?:코드 )?셀",
    "ko: 빌드": r"빌드|테스트 스위트",
}
# What a reader does not read as prose: code, math, styles, scripts, inline code.
NOT_PROSE = ("style, script, .math, mjx-container, div.cell_input, div.highlight, pre, "
             "code.literal, code, kbd")
SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|(?<=다\.)\s*")


def folded_asides(article):
    """The folded "Under the hood" asides (sphinx-togglebutton's dropdown admonitions)."""
    for box in article.select("div.admonition.dropdown, details"):
        title = box.select_one(".admonition-title, summary")
        if title and title.get_text(" ", strip=True).lower().startswith("under the hood"):
            yield box


BLOCKS = ["p", "li", "td", "th", "dt", "dd", "figcaption", "caption", "h1", "h2", "h3", "h4"]


def shown_prose(html_text: str) -> list[str]:
    """The article's text blocks as the reader reads them (a paragraph, a list item, a table
    cell, a caption), without code, math or folded asides."""
    article = BeautifulSoup(html_text, "html.parser").find("article")
    if article is None:   # the redirect, search and index pages
        return []
    for box in list(folded_asides(article)):
        box.decompose()
    for tag in article.select(NOT_PROSE):
        tag.decompose()
    blocks = [tag for tag in article.find_all(BLOCKS) if not tag.find(BLOCKS)]
    return [text for tag in blocks if (text := re.sub(r"\s+", " ", tag.get_text(" ")).strip())]


def build_talk(html_text: str) -> list[tuple[str, str]]:
    """(kind, sentence) for each piece of build or test talk in the page's prose, once each."""
    found = []
    for text in shown_prose(html_text):
        matches = sorted(((m, kind) for kind, pattern in BUILD_TALK.items()
                          for m in re.finditer(pattern, text)), key=lambda hit: hit[0].start())
        for match, kind in matches:
            start = max((m.end() for m in SENTENCE_END.finditer(text, 0, match.start())), default=0)
            end = next((m.start() for m in SENTENCE_END.finditer(text, match.end())), len(text))
            if (kind, sentence := text[start:end].strip()[:300]) not in found:
                found.append((kind, sentence))
    return found


@pytest.mark.parametrize("html_text, kinds", [
    ("<article><p>The tie holds: a hidden cell checks it.</p></article>", ["a hidden cell"]),
    ("<article><p>The page also checks, each time it is built, that the cache is fresh.</p></article>",
     ["this page's build"]),
    ("<article><p>This was checked separately on torch 2.13.</p></article>", ["checked on a version"]),
    ("<article><p>The results below were made with Python 3.11.7, which built this page.</p></article>",
     ["made with a version", "a patch-level Python", "this page's build"]),
    ("<article><p>The test suite and CI run nbval at build time.</p></article>",
     ["the test suite", "CI", "a test tool", "at build time"]),
    ("<article><p>La igualdad la comprueba una celda oculta.</p><p>숨긴 셀이 확인합니다.</p>"
     "<p>Cada página se ejecuta al construir el libro.</p></article>",
     ["es: celda oculta", "ko: 숨긴 셀", "es: al construir el libro"]),
    ("<article><p>책을 빌드할 때 실행됩니다.</p></article>", ["ko: 빌드"]),
    # teaching that uses the same words
    ("<article><p>The grader runs hidden cases. We build the model; a t-test on the pairs. "
     "In PyTorch 2.13, nn.Linear stores (out, in). Circle the CIFAR numbers. "
     "The vocabulary is built from the training part.</p></article>", []),
    # code, math and folded asides are not prose
    ("<article><div class='cell_input'><pre># a hidden cell checks it</pre></div>"
     "<p>See <code class='literal'>tests/test_x.py</code>.</p>"
     "<div class='admonition dropdown'><p class='admonition-title'>Under the hood: how we checked it</p>"
     "<p>Checked on torch 2.13 by the test suite.</p></div></article>", []),
    # an aside that is not folded, or not "Under the hood", still counts
    ("<article><div class='admonition'><p class='admonition-title'>Under the hood: versions</p>"
     "<p>The test suite checks it.</p></div></article>", ["the test suite"]),
])
def test_build_talk_is_found_and_teaching_is_not(html_text, kinds):
    assert [kind for kind, _ in build_talk(html_text)] == kinds


def test_no_build_or_test_talk_in_the_prose():
    """Every sentence of build or test talk, page by page: reword it for the reader, or move
    it into a folded "Under the hood" aside (or say nothing: a hidden assert cell is enough)."""
    found = [f"{page.relative_to(HTML).as_posix()} [{kind}]: {sentence}"
             for page in pages() for kind, sentence in build_talk(page.read_text(encoding="utf-8"))]
    assert not found, f"{len(found)} sentences talk about the build or the tests:\n" + "\n".join(found)


def test_a_built_folded_aside_is_left_out():
    """On a real page (the notation page's "Under the hood" aside), as the theme renders it."""
    page = HTML / "book" / "notation.html"
    if not page.is_file():
        pages()   # fails with the message that says to build the book
    text = " ".join(shown_prose(page.read_text(encoding="utf-8")))
    assert "one letter per quantity" in text
    assert "trailing comma" not in text

"""What a reader sees on the book's pages: code that fits its box at a desk, outputs that keep
their columns within 80 of them, numbers rounded to what matters, and no machinery.

The first tests read the page sources (no build needed); the others read the built HTML
(`make book` first; TIED_HTML points at another build).
"""
from __future__ import annotations

import re
import sys

import jupytext
import pytest
from bs4 import BeautifulSoup

from built_book import pages
from conftest import chapters
from notebooks import ROOT
from tied_book.numbers import fmt
from tied_book.pages import show_exercise

sys.path.insert(0, str(ROOT / "tools"))
from long_code_lines import COLUMNS, HIDDEN, long_lines  # noqa: E402

SOURCES = sorted((ROOT / "book").glob("*.md"))
# Lines of a visible code cell that only the build needs: glue, nbval's markers, guards.
MACHINERY_LINE = re.compile(r"\bglue\b|\bmyst_nb\b|NBVAL_|^\s*assert\b|\.testing\.assert_")
# Prose that talks about the build, its machine or the test suite instead of the subject.
MACHINERY_PROSE = re.compile(
    r"this machine|shared with other jobs|\bcores shared\b|tests/test_\w+\.py|\bpytest\b"
    r"|\bmyst_nb\b|\bglue\(|NBVAL_", re.I)
# A number as written: digits, a decimal part, an exponent; not part of a word or a path.
NUMBER = re.compile(r"(?<![\w.:/-])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w/]|\.\d)", re.I)
# Numbers whose digits are the point, by page.
DELIBERATE = {
    # log-sum-exp of logits near 1e4, shifted: the fraction is what survives the shift
    "04_gpt_head": {"10000.313", "-20000.3133"},
}


def page_id(page):
    return page.stem


@pytest.mark.parametrize("page", SOURCES, ids=page_id)
def test_code_lines_fit_80_columns(page):
    """Every code line the page shows, its included files' too (tools/long_code_lines.py)."""
    found = [f"{path.name}:{number} ({columns}) {text}"
             for path, number, columns, text in long_lines(page)]
    assert not found, f"code lines over {COLUMNS} columns:\n" + "\n".join(found)


@pytest.mark.parametrize("chapter", chapters())
def test_the_exercise_stubs_fit_80_columns(chapter):
    long = [line for line in show_exercise(chapter).data.splitlines() if len(line) > COLUMNS]
    assert not long, "\n".join(long)


@pytest.mark.parametrize("page", SOURCES, ids=page_id)
def test_visible_code_holds_no_machinery(page):
    """glue, nbval markers and guard asserts go in cells tagged remove-input or remove-cell."""
    notebook = jupytext.reads(page.read_text(encoding="utf-8"), fmt="md:myst")
    found = [line.strip() for cell in notebook.cells if cell.cell_type == "code"
             and not HIDDEN & set(cell.metadata.get("tags", [])) - {"hide-input", "hide-cell"}
             for line in cell.source.splitlines() if MACHINERY_LINE.search(line)]
    assert not found, found


def test_the_long_line_finder_sees_included_code(tmp_path):
    shown = tmp_path / "shown.py"
    shown.write_text("def f():\n    return 1\n\n\ndef g():\n    return '" + "x" * 90 + "'\n")
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```{literalinclude} shown.py\n:pyobject: f\n```\n")
    assert long_lines(page) == []
    page.write_text("# A page\n\n```{literalinclude} shown.py\n:pyobject: g\n```\n")
    assert [(path.name, number) for path, number, _, _ in long_lines(page)] == [("shown.py", 6)]


@pytest.mark.parametrize("value, digits, shown", [
    (3.259629011154175e-09, 2, "3.3e-09"), (0.12051139026880264, 3, "0.121"), (0.0, 2, "0"),
    (-0.0, 2, "0"), (42.0, 2, "42"), (1234567, 2, "1,234,567"), (0.8968112468719482, 2, "0.90"),
    (10000.31326168752, 8, "10000.313"), (2.5e5 + 0.5, 2, "2.5e+05"), (-1.9e-6, 2, "-1.9e-06"),
])
def test_fmt_rounds_to_what_matters(value, digits, shown):
    assert fmt(value, digits) == shown


def significant_digits(number: str) -> int:
    mantissa = re.split(r"e", number.lstrip("-"), flags=re.I)[0]
    return len(mantissa.replace(".", "").lstrip("0")) if "." in mantissa else 0


def readable_text(page) -> str:
    """The article's prose and outputs: without code, math, styles and scripts."""
    article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find("article")
    if article is None:   # the redirect, search and index pages
        return ""
    for tag in article.select("style, script, .math, mjx-container, div.cell_input, "
                              "div.highlight:not(.cell_output div.highlight), code.literal"):
        tag.decompose()
    return article.get_text(" ")


@pytest.fixture(scope="module")
def built():
    return {page.stem: page for page in pages()}


def test_numbers_are_rounded(built):
    """No float with more than 5 significant digits, no zero written as 0.0e+00."""
    found = []
    for name, page in built.items():
        for m in NUMBER.finditer(readable_text(page)):
            number = m.group(0)
            zero = re.fullmatch(r"-?0(\.0+)?e[-+]?\d+", number, re.I)
            if (significant_digits(number) > 5 or zero) and number not in DELIBERATE.get(name, ()):
                found.append(f"{name}: {number}")
    assert not found, found


def test_outputs_fit_80_columns(built):
    """A printed line keeps its columns (tied.css does not wrap outputs): it must fit."""
    found = []
    for name, page in built.items():
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for pre in soup.select("article .cell_output pre"):
            if pre.find_parent("div", class_="highlight-python"):   # the exercise's stubs
                continue
            found += [f"{name}: ({len(line)}) {line}" for line in pre.get_text().splitlines()
                      if len(line) > COLUMNS]
    assert not found, "\n".join(found)


def test_no_machinery_in_prose(built):
    found = [f"{name}: {m.group(0)}" for name, page in built.items()
             for m in MACHINERY_PROSE.finditer(readable_text(page))]
    assert not found, found

"""The book's figures, in the built HTML: numbered, captioned, named by their number in the
text, described by their alt text, drawn as SVG whose text stays text, and legible on a phone.

Every page of the table of contents but the reference pages (notation, glossary,
bibliography) has a figure, and
every chapter (00, 01 with 01b, ...) two or more. Then, in headless chromium at 390×844
with the network off, each figure's SVG is drawn at the size the page gives its image, and
its smallest text must be 11 px or more.
"""
from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from built_book import HTML, served_book, toc_pages

# Reference pages, and the Start here page (setup and reading paths, nothing to draw).
NO_FIGURE = ("notation", "glossary", "bibliography", "start_here")
SMALLEST_TEXT_PX = 11


class Figures(HTMLParser):
    """The figures of a page (id, number, caption, images) and its links to a figure
    ([target id, link text])."""

    def __init__(self):
        super().__init__()
        self.figures, self.links, self._open, self._in_number = [], [], [], False
        self._in_link = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "figure":
            self._open.append({"id": attrs.get("id", ""), "number": "", "caption": "", "images": []})
        elif self._open and tag in ("img", "svg"):
            self._open[-1]["images"].append((tag, attrs.get("src", ""), attrs.get("alt")))
        elif tag == "span" and "caption-number" in attrs.get("class", ""):
            self._in_number = True
        elif tag == "a" and "#" in attrs.get("href", ""):
            self.links.append([attrs["href"].rsplit("#", 1)[-1], ""])
            self._in_link = True

    def handle_endtag(self, tag):
        if tag == "figure" and self._open:
            self.figures.append(self._open.pop())
        elif tag == "span":
            self._in_number = False
        elif tag == "a":
            self._in_link = False

    def handle_data(self, data):
        if self._in_link:
            self.links[-1][1] += data
        if self._open:
            key = "number" if self._in_number else "caption"
            self._open[-1][key] += data


def parsed(page: Path) -> Figures:
    parser = Figures()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def figure_pages() -> list[Path]:
    return [p for p in toc_pages() if not p.stem.startswith(NO_FIGURE)]


def chapter(page: Path) -> str:
    """01b_training_step -> 01; intro -> intro."""
    found = re.match(r"\d+", page.stem)
    return found.group() if found else page.stem


@pytest.fixture(scope="module")
def book() -> dict[str, Figures]:
    return {page.stem: parsed(page) for page in figure_pages()}


def test_every_page_has_a_numbered_captioned_figure(book):
    bare = [name for name, page in book.items()
            if not any(f["number"].strip() and f["caption"].strip() for f in page.figures)]
    assert not bare, f"pages with no numbered, captioned figure: {bare}"
    unnumbered = {name: [f["id"] or f["images"] for f in page.figures
                         if not (f["number"].strip() and f["caption"].strip() and f["id"])]
                  for name, page in book.items()}
    assert not {k: v for k, v in unnumbered.items() if v}, f"figures without a name, number or caption: {unnumbered}"


def test_every_chapter_has_two_figures():
    counts = Counter()
    for page in figure_pages():
        counts[chapter(page)] += len(parsed(page).figures)
    few = {name: n for name, n in counts.items() if n < 2 and name != "intro"}
    assert not few, f"chapters with fewer than two figures: {few}"


def test_figures_are_svg_with_alt_text_that_says_what_they_show(book):
    problems = []
    for name, page in book.items():
        for figure in page.figures:
            if not figure["images"]:
                problems.append(f"{name} #{figure['id']}: no image")
            for tag, src, alt in figure["images"]:
                if tag == "img" and not src.endswith(".svg"):
                    problems.append(f"{name} #{figure['id']}: {src} is not SVG")
                if tag == "img" and (not alt or len(alt.split()) < 5 or Path(src).name in alt
                                     or re.fullmatch(r"[\w./-]+\.(svg|png)", alt.strip())):
                    problems.append(f"{name} #{figure['id']}: alt text {alt!r}")
    assert not problems, problems


def test_the_text_refers_to_every_figure_by_its_number(book):
    """A link to the figure whose text is the figure's number ("Fig. 3"), as {numref} writes."""
    linked = {(target, " ".join(text.split())) for page in parsed_all() for target, text in page.links}
    unreferred = [f"{name} #{f['id']} ({f['number'].strip()})" for name, page in book.items()
                  for f in page.figures if (f["id"], " ".join(f["number"].split())) not in linked]
    assert not unreferred, f"figures that no {{numref}} names by their number: {unreferred}"


def parsed_all() -> list[Figures]:
    return [parsed(page) for page in toc_pages()]


# Draw each figure's SVG at the size the page gives its image, then measure its text.
TEXT_SIZES = """(async () => {
  const found = [];
  for (const img of document.querySelectorAll(".bd-article figure img")) {
    const box = img.getBoundingClientRect();
    const source = await (await fetch(img.src)).text();
    const svg = document.importNode(
      new DOMParser().parseFromString(source, "image/svg+xml").documentElement, true);
    svg.setAttribute("width", box.width);
    svg.setAttribute("height", box.height);
    const holder = document.createElement("div");
    holder.style.cssText = "position: absolute; left: 0; top: 0; visibility: hidden";
    holder.append(svg);
    document.body.append(holder);
    const sizes = [...svg.querySelectorAll("text, tspan")].filter(t => t.textContent.trim()).map(t => {
      const m = t.getScreenCTM();
      return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    });
    holder.remove();
    found.push({src: img.getAttribute("src"), width: box.width, texts: sizes.length,
                smallest: sizes.length ? Math.min(...sizes) : null});
  }
  return found;
})()"""


@pytest.fixture(scope="module")
def phone_text_sizes() -> dict[str, list[dict]]:
    seen = {}
    with served_book() as (browser, base):
        for page in figure_pages():
            tab = browser.tab(390, 844)
            tab.open(base + page.relative_to(HTML).as_posix())
            tab.wait_for("document.readyState === 'complete' && [...document.images].every(i => i.complete)")
            seen[page.stem] = tab.evaluate(TEXT_SIZES)
            tab.close()
    return seen


def test_figure_text_stays_text_and_is_legible_on_a_phone(phone_text_sizes):
    assert any(phone_text_sizes.values()), "no figure measured"
    textless = {name: [f["src"] for f in found if not f["texts"]]
                for name, found in phone_text_sizes.items()}
    assert not {k: v for k, v in textless.items() if v}, f"SVGs whose text is not text: {textless}"
    small = {name: [f"{f['src']}: {f['smallest']:.1f} px at {f['width']:.0f} px wide"
                    for f in found if f["smallest"] < SMALLEST_TEXT_PX]
             for name, found in phone_text_sizes.items()}
    small = {k: v for k, v in small.items() if v}
    assert not small, f"figure text under {SMALLEST_TEXT_PX} px at 390×844: {small}"

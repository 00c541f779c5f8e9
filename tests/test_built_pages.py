"""What every built page holds, read from its HTML (no browser): tables rendered as tables,
and a notebook to download wherever the page has code.

Runs on the build that ``make test`` makes first (``TIED_HTML`` for another one).
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import jupytext
import nbformat

from built_book import HTML, pages
from notebooks import ROOT

# A Markdown table row left as text: a line that starts and ends with a pipe, with a cell
# boundary between (myst-nb renders a cell's Markdown(...) as CommonMark by default, which
# has no tables: the rows come out as one paragraph of pipes).
PIPE_ROW = re.compile(r"^\s*\|[^\n]*\|[^\n]*\|\s*$", re.M)
# Where pipes are the text itself: code, scripts, styles, math.
VERBATIM = {"pre", "script", "style", "textarea"}


class ShownText(HTMLParser):
    """The text a reader sees as prose, one string per block (paragraph, list item, cell)."""

    BLOCKS = {"p", "li", "td", "th", "dd", "dt", "div", "section", "h1", "h2", "h3", "h4"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self._current = [], []
        self._skipped, self._depth = None, 0   # the verbatim element we are in, nested how deep

    def handle_starttag(self, tag, attrs):
        if self._skipped:
            self._depth += tag == self._skipped
        elif tag in VERBATIM or "math" in (dict(attrs).get("class") or "").split():
            self._skipped, self._depth = tag, 1
        elif tag in self.BLOCKS:
            self._flush()

    def handle_endtag(self, tag):
        if self._skipped:
            self._depth -= tag == self._skipped
            self._skipped = self._skipped if self._depth else None
        elif tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not self._skipped:
            self._current.append(data)

    def _flush(self):
        if text := "".join(self._current).strip():
            self.blocks.append(text)
        self._current = []


def raw_tables(page) -> list[str]:
    parser = ShownText()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return [block[:80] for block in parser.blocks if PIPE_ROW.search(block)]


def test_raw_pipe_tables_are_found():
    """The check itself: a table left as CommonMark text is caught, a rendered one is not."""
    parser = ShownText()
    parser.feed("<p>| a | <code>b</code> |\n|---|---|\n| 1 | 2 |</p><table><tr><td>a</td></tr></table>"
                "<pre>| x | y |</pre><p>x | y, a | b</p><div class=\"math\"><div>\n| a | b |\n</div></div>")
    assert [block for block in parser.blocks if PIPE_ROW.search(block)] == ["| a | b |\n|---|---|\n| 1 | 2 |"]


def test_no_page_shows_a_raw_pipe_table():
    found = {page.relative_to(HTML).as_posix(): rows for page in pages() if (rows := raw_tables(page))}
    assert not found, f"pages that show Markdown tables as text: {found}"


class NotebookLinks(HTMLParser):
    """The page's links to its own notebook (under _sources/; an exercise notebook offered
    with ``{download}`` sits under _downloads/ and is not the page's), and whether it shows
    code cells."""

    def __init__(self):
        super().__init__()
        self.notebooks, self.code_cells = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = {name: value or "" for name, value in attrs}
        href = attrs.get("href", "")
        if tag == "a" and href.endswith(".ipynb") and "_sources/" in href:
            self.notebooks.append(href)
        self.code_cells += "cell" in attrs.get("class", "").split() and tag == "div"


def test_every_page_with_code_downloads_as_its_notebook():
    """Each page with code cells links to an .ipynb made from its source, with the same code."""
    checked, problems = 0, {}
    for page in pages():
        links = NotebookLinks()
        links.feed(page.read_text(encoding="utf-8"))
        name = page.relative_to(HTML).as_posix()
        if not links.code_cells:
            continue
        if len(set(links.notebooks)) != 1:
            problems[name] = f"links to notebooks: {links.notebooks}"
            continue
        notebook = (page.parent / links.notebooks[0]).resolve()
        source = ROOT / page.relative_to(HTML).with_suffix(".md")
        if not notebook.is_file():
            problems[name] = f"{links.notebooks[0]} is not in the build"
            continue
        built = nbformat.read(notebook, as_version=4)
        nbformat.validate(built)
        expected = [cell.source for cell in jupytext.read(source).cells if cell.cell_type == "code"]
        if [cell.source for cell in built.cells if cell.cell_type == "code"] != expected:
            problems[name] = f"{links.notebooks[0]} does not hold the code cells of {source.name}"
        checked += 1
    assert not problems, problems
    assert checked >= 10, f"only {checked} pages with code cells"


# A paper in a page's References: a list item with an arXiv or ACL Anthology link.
PAPER_ITEM = re.compile(r"^- (?P<item>[^\n]*(?:\n  [^\n]*)*(?:arxiv\.org|aclanthology\.org)[^\n]*)", re.M)
BIB_KEY = re.compile(r"^@\w+\{(\w+),", re.M)
CITED = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")


def test_papers_are_cited_from_the_bibliography():
    """Every paper a page lists is a {cite} of references.bib, every entry of which is cited."""
    keys = set(BIB_KEY.findall((ROOT / "references.bib").read_text(encoding="utf-8")))
    cited, by_hand = set(), {}
    for source in sorted((ROOT / "book").glob("*.md")):
        text = source.read_text(encoding="utf-8")
        cited |= {key.strip() for roles in CITED.findall(text) for key in roles.split(",")}
        if found := [m["item"][:60] for m in PAPER_ITEM.finditer(text) if not m["item"].startswith("{cite")]:
            by_hand[source.name] = found
    assert not by_hand, f"papers written out by hand rather than cited: {by_hand}"
    assert cited <= keys, f"cited but not in references.bib: {cited - keys}"
    assert keys <= cited, f"in references.bib but cited nowhere: {keys - cited}"
    bibliography = (HTML / "book" / "bibliography.html").read_text(encoding="utf-8")
    assert bibliography.count('role="doc-biblioentry"') == len(keys), "the bibliography page lacks entries"


CAPTION_NUMBER = re.compile(r'class="caption-number">(?:Fig\.|Table) ([0-9a-z.]+)')
CHAPTER_NAME = re.compile(r"^(\d\d[a-z]?)_")
LOOKS_LIKE_A_CHAPTER = re.compile(r"^\d\d[a-z]?(\.|$)")


def test_figures_are_numbered_within_their_page():
    """A chapter's figures are Fig. 04b.1, 04b.2, ...; an unnumbered page (the intro) counts
    its own, so that its Fig. 1 is not taken for a figure of chapter 01."""
    wrong, numbered = {}, 0
    for page in pages():
        found = CAPTION_NUMBER.findall(page.read_text(encoding="utf-8"))
        if chapter := CHAPTER_NAME.match(page.name):
            bad = [n for n in found if not n.startswith(chapter.group(1) + ".")]
        else:
            bad = [n for n in found if LOOKS_LIKE_A_CHAPTER.match(n)]
        numbered += len(found)
        if bad:
            wrong[page.relative_to(HTML).as_posix()] = bad
    assert not wrong, f"figure numbers that name another chapter: {wrong}"
    assert numbered >= 10, f"only {numbered} numbered figures in the book"


def test_bibliography_is_labelled_and_ordered_as_cited():
    """The list says "Press and Wolf, 2017" as the text does, in the order of those names."""
    bibliography = (HTML / "book" / "bibliography.html").read_text(encoding="utf-8")
    labels = [html.unescape(label) for label in re.findall(
        r'class="label"><span class="fn-bracket">\[</span>(.*?)<span', bibliography)]
    assert labels and all(re.search(r", \d{4}[a-z]?$", label) for label in labels), labels
    assert labels == sorted(labels, key=str.casefold), labels


INLINE_CODE = re.compile(r'<code class="([^"]*\bliteral\b[^"]*)">(.*?)</code>', re.S)


def test_short_inline_code_is_kept_on_one_line():
    """Inline code of at most 24 characters ("--lang es") carries the class that tied.css
    keeps unbroken; longer code does not, so that it can still break at a phone's width.
    (The article only: the sidebars' titles come from the table of contents.)"""
    wrong, short = [], 0
    for page in pages():
        article = page.read_text(encoding="utf-8").partition('<article class="bd-article"')[2]
        for classes, inner in INLINE_CODE.findall(article.partition("</article>")[0]):
            text = html.unescape(re.sub(r"<[^>]+>", "", inner))
            marked = "tied-short" in classes.split()
            short += marked
            if marked != (len(text) <= 24):
                wrong.append(f"{page.name}: {text!r}")
    assert not wrong, wrong[:10]
    assert short > 100, f"only {short} short inline code elements"

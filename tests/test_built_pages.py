"""What every built page holds, read from its HTML (no browser): tables rendered as tables.

Runs on the build that ``make test`` makes first (``TIED_HTML`` for another one).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser

from built_book import HTML, pages

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

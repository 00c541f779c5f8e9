"""The built book is self-contained: no page or stylesheet loads a script, stylesheet, font
or image from another site, and every local one it names was copied into the build.

Runs on the build that ``make test`` makes first (``TIED_HTML`` for another one).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from built_book import HTML, pages

REMOTE = re.compile(r"^\s*(https?:)?//", re.I)
LOADED_LINKS = {"stylesheet", "preload", "modulepreload", "icon", "apple-touch-icon"}
CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.I)


class Resources(HTMLParser):
    """What a page makes the browser fetch: (kind, url) pairs, and its stylesheets; whether
    it holds math (for MathJax) and widget state (for the widget manager)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self.stylesheets, self._in_style = [], [], False
        self.has_math = self.has_widgets = False

    def handle_starttag(self, tag, attrs):
        attrs = {name: value or "" for name, value in attrs}
        self.has_math |= "math" in attrs.get("class", "").split()
        self.has_widgets |= attrs.get("type") == "application/vnd.jupyter.widget-state+json"
        if attrs.get("src"):
            self.found.append((f"<{tag} src>", attrs["src"]))
        rel = set(attrs.get("rel", "").lower().split())
        if tag == "link" and rel & LOADED_LINKS and attrs.get("href"):
            self.found.append((f"<link rel={attrs['rel']}>", attrs["href"]))
            if "stylesheet" in rel:
                self.stylesheets.append(attrs["href"])
        if attrs.get("style"):
            self.found += [("style attribute url()", url) for url in css_urls(attrs["style"])]
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.found += [("<style> url()/@import", url) for url in css_urls(data)]


def css_urls(text: str) -> list[str]:
    return [m.group(2) or m.group(4) for m in CSS_URL.finditer(CSS_COMMENT.sub("", text))]


def local_file(base: Path, url: str) -> Path | None:
    """The file a relative URL names, or None for data: and other non-file URLs."""
    parts = urlsplit(url)
    if parts.scheme or not parts.path:
        return None
    return (base.parent / unquote(parts.path)).resolve()


def parse(page: Path) -> Resources:
    parser = Resources()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def stylesheets() -> set[Path]:
    """Every local stylesheet the pages link, and those they @import, transitively."""
    todo = {local_file(page, href) for page in pages() for href in parse(page).stylesheets}
    found = set()
    while todo:
        sheet = todo.pop()
        if sheet is None or sheet in found or not sheet.is_file():
            continue
        found.add(sheet)
        text = CSS_COMMENT.sub("", sheet.read_text(encoding="utf-8", errors="replace"))
        todo |= {local_file(sheet, m.group(4)) for m in CSS_URL.finditer(text) if m.group(4)}
    return found


def test_pages_load_nothing_remote():
    remote = [f"{page.relative_to(HTML)}: {kind} {url}"
              for page in pages() for kind, url in parse(page).found if REMOTE.match(url)]
    assert not remote, "pages load from the network:\n" + "\n".join(remote)


def test_pages_name_only_files_in_the_build():
    missing = [f"{page.relative_to(HTML)}: {kind} {url}"
               for page in pages() for kind, url in parse(page).found
               if (path := local_file(page, url)) is not None and not path.is_file()]
    assert not missing, "pages name files that are not in the build:\n" + "\n".join(missing)


def test_stylesheets_load_nothing_remote():
    sheets = stylesheets()
    assert any(sheet.name.startswith("pydata-sphinx-theme") for sheet in sheets), sorted(sheets)
    remote, missing = [], []
    for sheet in sorted(sheets):
        for url in css_urls(sheet.read_text(encoding="utf-8", errors="replace")):
            where = f"{sheet.relative_to(HTML)}: url({url})"
            if REMOTE.match(url):
                remote.append(where)
            elif (path := local_file(sheet, url)) is not None and not path.is_file():
                missing.append(where)
    assert not remote, "stylesheets load fonts or images from the network:\n" + "\n".join(remote)
    assert not missing, "stylesheets name files that are not in the build:\n" + "\n".join(missing)


def test_math_and_widgets_use_the_copies_in_the_build():
    """MathJax, require.js and the widget manager: from npm (package.json), copied into _static."""
    needs = {"math": ["vendor/mathjax/tex-mml-chtml.js"],
             "widgets": ["vendor/requirejs/require.js", "vendor/html-manager/embed-amd.js"]}
    seen, wrong = set(), []
    for page in pages():
        found = parse(page)
        scripts = {urlsplit(url).path for kind, url in found.found if kind == "<script src>"}
        for what in [what for what in needs if getattr(found, f"has_{what}")]:
            seen.add(what)
            wrong += [f"{page.relative_to(HTML)} has {what} but does not load _static/{name}"
                      for name in needs[what] if not any(path.endswith(f"_static/{name}") for path in scripts)]
    assert "math" in seen, "no page has math: is the dollarmath extension still on?"
    assert not wrong, "\n".join(wrong)

"""Sphinx extension: fixes to what the theme and its extensions put in every page.

- Flags as text badges: a flag emoji in an admonition's title ("🇪🇸 Nota", "🇰🇷 참고") is
  two regional-indicator letters that draw as two empty boxes without a colour-emoji font.
  It becomes a badge naming the note's language (its ``lang-xx`` class: ES, KO), or the
  flag's two letters, ``<span class="tied-flag tied-flag-ko">KO</span>``, styled in
  ``book/_static/tied.css``.
- The notes of a section in one place: the Spanish and Korean notes that follow each other
  go in a ``div.tied-notes-pair`` that starts with a button naming their languages
  ("ES · KO"). Readers whose browser prefers neither language see that button only, and
  it opens the notes in place (book/_static/tied.js, tied.css).
- Short inline code on one line: a ``literal`` of at most SHORT_CODE characters gets the
  class ``tied-short``, which tied.css keeps unbroken (a hyphen is a break opportunity, so
  ``--lang`` could end a line after "--"); longer code may still break anywhere, so that
  nothing is wider than a phone's column.
- Each inline script once: Sphinx 7.4 keeps an inline script that an extension adds after
  the builder starts (sphinx-thebe's ``const THEBE_JS_URL = ...``, sphinx-togglebutton's
  selector) under the file name ``None`` and adds it again from its registry under ``''``
  before writing, so every page ran it twice; a ``const`` declared twice is a SyntaxError.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

# A flag is two regional-indicator symbols, U+1F1E6 (A) to U+1F1FF (Z).
FLAG = re.compile("([\U0001F1E6-\U0001F1FF]{2})\\s*")


def badge(flag: str, admonition: nodes.Element) -> nodes.inline:
    languages = [c.removeprefix("lang-") for c in admonition["classes"] if c.startswith("lang-")]
    name = languages[0] if languages else "".join(chr(ord(c) - 0x1F1E6 + ord("a")) for c in flag)
    return nodes.inline(name.upper(), name.upper(), classes=["tied-flag", f"tied-flag-{name}"])


def flags_as_badges(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for title in doctree.findall(nodes.title):
        if not isinstance(title.parent, nodes.Admonition):
            continue
        for text in list(title.findall(nodes.Text)):
            parts = FLAG.split(str(text))
            if len(parts) == 1:
                continue
            # split() alternates plain text and flags: text, flag, text, flag, ..., text
            replacement = [badge(part, title.parent) if i % 2 else nodes.Text(part)
                           for i, part in enumerate(parts) if part]
            text.parent.replace(text, replacement)


def note_language(node: nodes.Node) -> str | None:
    if isinstance(node, nodes.Admonition):
        return next((c.removeprefix("lang-") for c in node["classes"] if c.startswith("lang-")), None)
    return None


def toggle(languages: list[str]) -> nodes.raw:
    badges = " · ".join(f'<span class="tied-flag tied-flag-{lang}">{lang.upper()}</span>'
                        for lang in languages)
    html = (f'<button type="button" class="tied-notes-open" aria-expanded="false">{badges}'
            f'<span class="tied-notes-what">notes</span></button>')
    return nodes.raw("", html, format="html")


def pair_the_notes(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for first in list(doctree.findall(note_language)):
        parent = first.parent
        if "tied-notes-pair" in parent.get("classes", []):
            continue   # already grouped with the note before it
        index = parent.index(first)
        run = [first]
        for sibling in parent.children[index + 1:]:
            if not note_language(sibling):
                break
            run.append(sibling)
        pair = nodes.container(classes=["tied-notes-pair"])
        pair += toggle([note_language(note) for note in run])
        for note in run:
            parent.remove(note)
            pair += note
        parent.insert(index, pair)


def drop_repeated_scripts(app: Sphinx, pagename: str, templatename: str, context: dict,
                          doctree: nodes.document | None) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept   # in place: the builder restores its own list after each page


SHORT_CODE = 24   # about 200 px of the theme's inline monospace: well within 390 px


def short_code_unbroken(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for literal in doctree.findall(nodes.literal):
        if len(literal.astext()) <= SHORT_CODE:
            literal["classes"].append("tied-short")


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", flags_as_badges)
    app.connect("doctree-resolved", short_code_unbroken)
    app.connect("doctree-resolved", pair_the_notes)
    # Late, after the theme and myst-nb have added their scripts for the page.
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: chapters numbered as the book names them (00, 01, 01b, ..., 07b).

The book, the exercises and the grader call a chapter by the start of its file name:
``book/04b_tied_gradient.md`` is chapter 04b, whose exercises are in
``exercises/04_gpt_head.ipynb``. A numbered toctree (``numbered: true`` in _toc.yml) counts
the pages 1, 2, 3, ... instead, so that the sidebar would say 9 where the text says 04b.
Once Sphinx has numbered the sections and figures, this replaces each page's first number
with its name's: the page's title reads "04b. The gradient ...", its sections 04b.1, 04b.2,
and its figures Fig. 04b.1 (Sphinx writes a number as ``".".join(map(str, parts))``).
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

CHAPTER = re.compile(r"^(\d+[a-z]?)_")


def renumbered(number: tuple, names: dict) -> tuple:
    return (names.get(number[0], number[0]), *number[1:]) if number else number


def name_the_chapters(app: Sphinx, env: BuildEnvironment) -> list[str]:
    # Sphinx's count for each page whose file name carries a chapter name.
    names = {}
    for docname, numbers in env.toc_secnumbers.items():
        chapter = CHAPTER.match(docname.rsplit("/", 1)[-1])
        if chapter and numbers.get(""):
            names[numbers[""][0]] = chapter.group(1)
    if not names:
        return []
    for numbers in env.toc_secnumbers.values():
        numbers.update({anchor: renumbered(n, names) for anchor, n in numbers.items()})
    # A page without a chapter name (the intro) counts its figures 1, 2, ... on its own:
    # its Fig. 1 is not chapter 1's, so only the chapters' figures take the chapter's name.
    chapters = {docname for docname, numbers in env.toc_secnumbers.items() if numbers.get("")}
    for docname, kinds in env.toc_fignumbers.items():
        if docname not in chapters:
            continue
        for figures in kinds.values():
            figures.update({name: renumbered(n, names) for name, n in figures.items()})
    # The sidebar's entries carry their numbers on the reference nodes of each page's toc,
    # the previous and next links on the pages' title nodes.
    for toc in env.tocs.values():
        for reference in toc.findall(nodes.reference):
            if reference.get("secnumber"):
                reference["secnumber"] = renumbered(tuple(reference["secnumber"]), names)
    for title in env.titles.values():
        if title.get("secnumber"):
            title["secnumber"] = renumbered(tuple(title["secnumber"]), names)
    return []


def setup(app: Sphinx) -> dict:
    # After Sphinx's own handler (priority 500), which counts the sections and figures.
    app.connect("env-get-updated", name_the_chapters, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

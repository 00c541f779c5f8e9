"""Sphinx extension: every page with code cells can be downloaded as a notebook.

The pages are MyST Markdown notebooks (a jupytext header). At build time jupytext turns each
one with code cells into ``_sources/<page>.ipynb`` in the build, next to the ``.md`` the
theme already offers; the page's context then names it (``ipynb_source``), so that
sphinx-book-theme lists ".ipynb" first in its download menu. The notebook holds the page's
cells without outputs: they are made by running it, next to the book's helper modules.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath

import jupytext
from docutils import nodes
from sphinx.application import Sphinx

SOURCES = "_sources"


def notebook_name(docname: str) -> str:
    """Where the page's notebook is, relative to the build's root: _sources/book/01_linen.ipynb."""
    return f"{SOURCES}/{docname}.ipynb"


def notebook_url(docname: str) -> str:
    """The page's notebook, relative to the page itself (the link a page can hold)."""
    depth = len(PurePosixPath(docname).parts) - 1
    return "../" * depth + notebook_name(docname)


def has_code(doctree: nodes.document | None) -> bool:
    return doctree is not None and any(node.get("nb_element") == "cell_code"
                                       for node in doctree.findall(nodes.container))


def write_notebook(app: Sphinx, pagename: str, templatename: str, context: dict,
                   doctree: nodes.document | None) -> None:
    source = Path(app.env.doc2path(pagename)) if pagename in app.env.all_docs else None
    if source is None or source.suffix != ".md" or not has_code(doctree):
        return
    target = Path(app.outdir) / notebook_name(pagename)
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(jupytext.read(source), target, fmt="ipynb")
    context["ipynb_source"] = f"{pagename}.ipynb"   # under _sources/, as the theme expects


def setup(app: Sphinx) -> dict:
    # Before sphinx-book-theme draws its header buttons (priority 501) from the context.
    app.connect("html-page-context", write_notebook, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

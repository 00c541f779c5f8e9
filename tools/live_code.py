"""Sphinx extension: a "Run code" button on every page with code cells, for the Jupyter
server that ``make serve`` starts on this machine (tools/serve.py), never Binder.

The button and the cells are ``book/_static/live_code.js``, which loads thebe's bundle from
the book itself (``_static/vendor/thebe``, copied from npm by tools/offline_assets.py) only
when the reader presses it.  This extension gives that script what the HTML alone does not:

- which notebook cell each code cell on the page is: a ``tied-cell-<index>`` class;
- the code of the cells the reader does not see (``remove-cell``, ``remove-input``: glue,
  imports, helpers, figure code), so that it runs, in its place, before the cells after it;
- where the kernel starts: the page's folder, as at build time (``book/`` imports its
  helper modules);
- where the page's notebook is (tools/notebook_download.py), offered where no server runs.

sphinx-thebe (which jupyter-book always adds) writes a Binder configuration and a script
that fetches thebe from unpkg into every page; both are dropped here.
"""
from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from myst_nb.core.read import read_myst_markdown_notebook
from sphinx.application import Sphinx

from notebook_download import notebook_url

HIDDEN_TAGS = {"remove-cell", "remove_cell", "remove-input", "remove_input"}
# What sphinx-thebe adds: raw nodes at the end of each page; its files and config in <head>.
THEBE_RAW = ("text/x-thebe-config", "<script>kernelName =")
THEBE_FILES = ("sphinx-thebe.js", "sphinx-thebe.css")


def code_cells(path: Path, app: Sphinx) -> list[dict]:
    """The page's code cells, with their index among all the notebook's cells."""
    if path.suffix != ".md":
        return []
    notebook = read_myst_markdown_notebook(path.read_text(encoding="utf-8"),
                                           config=getattr(app.env, "myst_config", None), path=path)
    return [{"index": index, "source": cell.source, "tags": set(cell.metadata.get("tags", []))}
            for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


def prepare_page(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for raw in list(doctree.findall(nodes.raw)):
        if any(marker in raw.astext() for marker in THEBE_RAW):
            raw.parent.remove(raw)
    containers = [node for node in doctree.findall(nodes.container)
                  if node.get("nb_element") == "cell_code"]
    cells = code_cells(Path(app.env.doc2path(docname)), app) if containers else []
    if not cells:
        return
    for container in containers:
        container["classes"].append(f"tied-cell-{container['cell_index']}")
    config = {
        "path": docname,   # the server starts the kernel in this path's folder
        "notebook": notebook_url(docname),
        "hidden": {cell["index"]: cell["source"] for cell in cells if cell["tags"] & HIDDEN_TAGS},
    }
    # "</" cannot end the script early: JSON allows "<\/".
    text = json.dumps(config).replace("</", "<\\/")
    doctree.append(nodes.raw("", f'<script type="application/json" id="tied-live">{text}</script>',
                             format="html"))


def add_button_script(app: Sphinx, pagename: str, templatename: str, context: dict,
                      doctree: nodes.document | None) -> None:
    for key in ("script_files", "css_files"):
        assets = context.get(key) or []
        # In place: the builder restores its own lists after each page.
        assets[:] = [a for a in assets if not (a.filename and a.filename.endswith(THEBE_FILES))
                     and "THEBE_JS_URL" not in a.attributes.get("body", "")]
    if doctree is not None and any(raw.astext().startswith('<script type="application/json" id="tied-live"')
                                   for raw in doctree.findall(nodes.raw)):
        app.add_js_file("live_code.js", defer="defer")


def setup(app: Sphinx) -> dict:
    # After sphinx-thebe's own doctree-resolved handler (priority 500), which adds its config.
    app.connect("doctree-resolved", prepare_page, priority=600)
    app.connect("html-page-context", add_button_script, priority=800)
    app.add_css_file("live_code.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

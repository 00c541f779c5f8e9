"""Live code in the built book, as a reader uses it: ``make serve``'s script, a chapter in
headless chromium (network off but for 127.0.0.1), "Run code", a cell edited and run.

tools/serve.py serves the build on 127.0.0.1 with a Jupyter server from .venv and prints
the address to open; the test opens it, goes on to chapter 01, presses "Run code", edits
the first cell that builds a model (other sizes, and a line that reads a name only a hidden
setup cell defines), runs it with its run button and reads the new output, then shows a
widget in it; nothing comes from the network, and MathJax is loaded once.  Without a
Jupyter server (the build served as static files), or with the address of one that has
stopped, the button says how to start one.
Screenshots are kept under test-artifacts/live/.
"""
from __future__ import annotations

import json
import re
import select
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from built_book import HTML, Chromium, find_chromium, pages, serve
from notebooks import ROOT

ARTIFACTS = ROOT / "test-artifacts" / "live"
CHAPTER = "book/01_linen.html"
OLD, NEW = "TiedLogits(vocab_size=4, d_model=3)", "TiedLogits(vocab_size=7, d_model=5)"
# `glue` is imported by a remove-cell cell of chapter 01: only the hidden setup defines it.
HIDDEN_NAME_LINE = 'print("hidden setup ran:", glue.__name__)'
WIDGET = 'import ipywidgets\nipywidgets.IntSlider(value=7, description="V")'
STATUS = "(document.querySelector('.tied-live-status') || {dataset: {}}).dataset.state"


@pytest.fixture(scope="module")
def served():
    """tools/serve.py on the build: yields the one address it prints; Ctrl-C at the end."""
    pages()   # fails with a clear line when there is no build
    process = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), "--html", str(HTML)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    printed, deadline = b"", time.monotonic() + 120
    while not (found := re.search(rb"Open the book with live code: (\S+)", printed)):
        if process.poll() is not None or time.monotonic() > deadline \
                or not select.select([process.stdout], [], [], deadline - time.monotonic())[0]:
            process.kill()
            pytest.fail(f"tools/serve.py printed no address:\n{printed.decode(errors='replace')}")
        printed += process.stdout.read1(4096)
    address = found.group(1).decode()
    yield address
    process.send_signal(signal.SIGINT)   # Ctrl-C
    try:
        assert process.wait(timeout=30) == 0, "tools/serve.py did not exit cleanly on Ctrl-C"
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("tools/serve.py did not stop on Ctrl-C")
    for port in (urlsplit(address).port, urlsplit(parse_qs(urlsplit(address).fragment)["jupyter"][0]).port):
        with pytest.raises(ConnectionRefusedError):   # both servers are gone
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


@pytest.fixture(scope="module")
def browser():
    chrome = Chromium(find_chromium(), timeout=60)
    yield chrome
    chrome.close()


def requests_of(tab) -> list[str]:
    return [e["params"]["request"]["url"] for e in tab.events if e["method"] == "Network.requestWillBeSent"]


def test_every_page_with_code_has_the_button_and_no_binder_or_cdn():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        has_code = re.search(r'<div class="cell[ "]', text) is not None   # a code cell's container
        assert ("live_code.js" in text) == has_code, page.name
        assert "THEBE_JS_URL" not in text and "x-thebe-config" not in text and "unpkg.com" not in text, page.name
    assert (HTML / "_static" / "vendor" / "thebe" / "index.js").is_file()


def test_a_chapter_cell_edited_and_run_shows_its_new_output(served, browser):
    tab = browser.tab(1280, 900)
    try:
        tab.open(served)   # the first page takes the server's address from the fragment...
        assert "token" not in tab.evaluate("location.href"), "the token stays in the address bar"
        tab.open(urlsplit(served)._replace(path="/" + CHAPTER, fragment="").geturl())   # ...for every page
        tab.click("button.tied-live-button")
        assert tab.wait_for(f"{STATUS} === 'ready' || {STATUS} === 'no-server' || {STATUS} === 'error'",
                            timeout=90)
        assert tab.evaluate(STATUS) == "ready", tab.evaluate("document.querySelector('.tied-live-status').innerText")
        tab.screenshot(ARTIFACTS / "01_linen_live.png", whole=False)
        cell = f"""[...document.querySelectorAll('.thebe-cell')]
          .find(c => c.querySelector('.CodeMirror').CodeMirror.getValue().includes({json.dumps(OLD)}))"""
        source = tab.evaluate(f"({cell}).querySelector('.CodeMirror').CodeMirror.getValue()")
        edited = source.replace(OLD, NEW) + "\n" + HIDDEN_NAME_LINE
        tab.evaluate(f"""(() => {{ const box = {cell};
          box.querySelector('.CodeMirror').CodeMirror.setValue({json.dumps(edited)});
          box.scrollIntoView({{block: 'start'}}); }})()""")
        edited_cell = f"""[...document.querySelectorAll('.thebe-cell')]
          .find(c => c.querySelector('.CodeMirror').CodeMirror.getValue().includes({json.dumps(NEW)}))"""
        tab.evaluate(f"({edited_cell}).querySelector('.thebe-run-button').id = 'tied-test-run'")
        tab.click("#tied-test-run")
        output = f"({edited_cell}).closest('.cell').querySelector('[data-output]').innerText"
        shown = tab.wait_for(f"(() => {{ const t = {output}; return t.includes('hidden setup ran') ? t : ''; }})()",
                             timeout=120)
        tab.evaluate(f"({edited_cell}).scrollIntoView({{block: 'start'}})")
        tab.wait_for(f"getComputedStyle(({edited_cell}).querySelector('.thebe-busy')).display === 'none'", timeout=5)
        tab.screenshot(ARTIFACTS / "01_linen_edited_cell.png", whole=False)
        assert shown, f"no new output; the cell shows {tab.evaluate(output)!r}"
        assert "logits shape  : (2, 7)" in shown and "(7, 5)" in shown, shown
        assert "hidden setup ran: glue" in shown, shown
        assert "(2, 4)" not in shown, "the old output is still there"

        # A widget too (thebe fetches require.js for the first one: the book's copy).
        tab.evaluate(f"""(() => {{ const box = {edited_cell};
          box.querySelector('.CodeMirror').CodeMirror.setValue({json.dumps(WIDGET)}); }})()""")
        tab.click("#tied-test-run")
        assert tab.wait_for("!!document.querySelector('#tied-test-run').closest('.cell')"
                            ".querySelector('[data-output] .widget-hslider')", timeout=30), "no slider"

        # Nothing from the network, no uncaught exception, and MathJax once: the book's
        # MathJax 3, never the MathJax 2 that thebe loads by default.
        requested = requests_of(tab)
        remote = [u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                  and urlsplit(u).hostname != "127.0.0.1"]
        assert not remote, remote
        assert not [e for e in tab.events if e["method"] == "Runtime.exceptionThrown"]
        assert sum("tex-mml-chtml.js" in u for u in requested) == 1, [u for u in requested if "mathjax" in u.lower()]
        assert not [u for u in requested if "/MathJax.js" in u]
        assert tab.evaluate("document.querySelectorAll('script[src*=\"mathjax\" i]').length") == 1
        assert tab.evaluate("window.MathJax.version").startswith("3")
    finally:
        tab.close()


def test_without_a_server_the_button_says_how_to_start_one(browser):
    with serve(HTML) as base:   # the build as static files: no Jupyter server
        tab = browser.tab(1280, 900)
        try:
            tab.open(base + CHAPTER)
            tab.click("button.tied-live-button")
            assert tab.wait_for(f"{STATUS} === 'no-server'", timeout=10), tab.evaluate(STATUS)
            message = tab.evaluate("document.querySelector('.tied-live-status').innerText")
            tab.screenshot(ARTIFACTS / "01_linen_no_server.png", whole=False)
            assert "make serve" in message, message
            assert not tab.evaluate("document.querySelector('.thebe-cell')"), "cells turned live with no server"
            # The page as a notebook instead, from the build.
            notebook = tab.evaluate("document.querySelector('.tied-live-status a[download]').href")
            assert notebook.endswith(".ipynb") and "notebook" in message, message
            assert tab.evaluate(f"fetch({json.dumps(notebook)}).then(r => r.ok)"), notebook
            # An address from a `make serve` that has stopped since (nothing listens on port 9);
            # the query makes it a new page load, not a jump within the page.
            tab.open(base + CHAPTER + "?stale#jupyter=http%3A%2F%2F127.0.0.1%3A9&token=0123abcd")
            tab.click("button.tied-live-button")
            assert tab.wait_for(f"{STATUS} === 'no-server'", timeout=10), tab.evaluate(STATUS)
            message = tab.evaluate("document.querySelector('.tied-live-status').innerText")
            assert "http://127.0.0.1:9 does not answer" in message and "make serve" in message, message
        finally:
            tab.close()

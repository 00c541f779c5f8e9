"""The exercise loop in a real JupyterLab, as a student sees it.

JupyterLab from .venv serves a temporary copy of the notebooks on 127.0.0.1 (with a
token); headless chromium, with the network off but for this machine, opens one, runs
its cells one by one as a student does (an unsolved stub raises, and the student goes
on), and reads the check panel that the last cell draws.  Screenshots are kept under
test-artifacts/lab/.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from built_book import Chromium, find_chromium
from grader.i18n import text
from grader.registry import chapter as chapter_of
from notebooks import ROOT

ARTIFACTS = ROOT / "test-artifacts" / "lab"
CHAPTERS = ("01_linen", "04_gpt_head")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over exercises and solutions (copies): its address and token."""
    root = tmp_path_factory.mktemp("lab")
    for chapter in CHAPTERS:
        shutil.copy(ROOT / "exercises" / f"{chapter}.ipynb", root / f"exercise_{chapter}.ipynb")
        shutil.copy(ROOT / "solutions" / f"{chapter}.ipynb", root / f"solution_{chapter}.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    # No "get notified about Jupyter news?" toast over the notebook, and nothing fetched.
    settings = root / ".lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / ".jupyter"), "TIED_LANG": "en",
           "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings")}
    env.pop("TIED_GRADING", None)
    log = open(root / "lab.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--allow-root"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=root, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:  # wait for the server to answer
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{(root / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.2)
    yield base, token
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)
    log.close()


@pytest.fixture(scope="module")
def browser():
    chrome = Chromium(find_chromium(), timeout=60)
    yield chrome
    chrome.close()


# The notebook's panel, found by its path (JupyterLab may restore other tabs).
PANEL = "[...jupyterapp.shell.widgets('main')].find(w => w.context && w.context.path === %s)"

RUN_ALL_ONE_BY_ONE = """(async () => {
  const panel = %s;
  jupyterapp.shell.activateById(panel.id);
  const notebook = panel.content;
  for (let i = 0; i < notebook.widgets.length; i++) {
    notebook.activeCellIndex = i;
    await jupyterapp.commands.execute('notebook:run-cell');
    while (panel.sessionContext.session.kernel.status !== 'idle') {
      await new Promise(r => setTimeout(r, 50));
    }
  }
  return notebook.widgets.length;
})()"""

SHOW_LAST_CELL = """(() => {
  const notebook = (%s).content;
  const cell = notebook.widgets[notebook.widgets.length - 1];
  cell.node.scrollIntoView({block: 'end'});
  return true;
})()"""

LAST_OUTPUT = """(() => {
  const notebook = (%s).content;
  const last = notebook.widgets[notebook.widgets.length - 1];
  return last ? last.node.querySelector('.jp-OutputArea').innerText : '';
})()"""

SET_LAST_CELL = """(() => {
  const notebook = (%s).content;
  const cell = notebook.widgets[notebook.widgets.length - 1];
  cell.model.sharedModel.setSource(%s);
  return cell.model.sharedModel.getSource();
})()"""


def open_notebook(browser, base, token, name):
    """A tab with JupyterLab showing ``name`` in a workspace of its own, its kernel idle."""
    tab = browser.tab(1280, 900)
    tab.name = name
    tab.call("Page.navigate", url=f"{base}/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset&token={token}")
    panel = PANEL % json.dumps(name)
    ready = (f"window.jupyterapp && (() => {{ const p = {panel}; return p && p.sessionContext.session"
             " && p.sessionContext.session.kernel && p.sessionContext.session.kernel.status === 'idle'; })()")
    assert tab.wait_for(ready, timeout=120), f"{name} did not open with an idle kernel"
    return tab


def run_and_read_panel(tab, chapter, lang) -> str:
    """Run every cell, then wait for the check panel (the widget, drawn: a row per item)."""
    panel = PANEL % json.dumps(tab.name)
    tab.evaluate(RUN_ALL_ONE_BY_ONE % panel, timeout=300)
    title = text("ui.check_title", lang, chapter=chapter)
    last = LAST_OUTPUT % panel
    drawn = f"(() => {{ const t = {last}; return t.includes({json.dumps(title)}) && /^[✔✘]/m.test(t) ? t : ''; }})()"
    output = tab.wait_for(drawn, timeout=60)
    assert output, f"no check panel; the last cell shows: {tab.evaluate(last)!r}"
    tab.evaluate(SHOW_LAST_CELL % panel)
    return output


def panel_rows(output: str) -> list[str]:
    """The panel's item rows: each starts with its mark, ✔ or ✘."""
    return [line for line in output.splitlines() if line.startswith(("✔", "✘"))]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_an_untouched_exercise_shows_every_item_not_implemented(lab, browser, chapter):
    base, token = lab
    tab = open_notebook(browser, base, token, f"exercise_{chapter}.ipynb")
    try:
        output = run_and_read_panel(tab, chapter, "en")
        tab.screenshot(ARTIFACTS / f"exercise_{chapter}.png", max_height=2400)
        hint = text("common.not_implemented", "en").split(":")[0]
        rows = panel_rows(output)
        assert len(rows) == len(chapter_of(chapter).items), output
        assert all(line.startswith("✘") for line in rows), output
        assert output.count(hint) == len(rows), output
    finally:
        tab.close()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_solution_passes_every_item(lab, browser, chapter):
    base, token = lab
    tab = open_notebook(browser, base, token, f"solution_{chapter}.ipynb")
    try:
        output = run_and_read_panel(tab, chapter, "en")
        tab.screenshot(ARTIFACTS / f"solution_{chapter}.png", max_height=2400)
        rows = panel_rows(output)
        assert rows and all(line.startswith("✔") for line in rows), output
    finally:
        tab.close()


def test_the_panel_speaks_korean_when_asked(lab, browser):
    base, token = lab
    tab = open_notebook(browser, base, token, "exercise_04_gpt_head.ipynb")
    try:
        korean_check = json.dumps('from grader import check\n\ncheck("04_gpt_head", lang="ko")')
        tab.evaluate(SET_LAST_CELL % (PANEL % json.dumps(tab.name), korean_check))
        output = run_and_read_panel(tab, "04_gpt_head", "ko")
        tab.screenshot(ARTIFACTS / "exercise_04_gpt_head_ko.png", max_height=2400)
        assert text("common.not_implemented", "ko").split(":")[0] in output
        assert text("ui.total", "ko") in output
    finally:
        tab.close()

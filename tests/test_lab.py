"""The exercise loop in a real JupyterLab, as a student sees it.

JupyterLab from .venv serves a temporary copy of the notebooks on 127.0.0.1 (with a
token); headless chromium, with the network off but for this machine, opens one, runs
its cells one by one as a student does (an unsolved stub raises, and the student goes
on), and reads the check panel that the last cell draws.  The student's usual accidents
(a partly solved notebook, a debug print, a function that never returns, check()
before Run All, a language typo) are each read from the page and compared with what
`grader check --json` says of the notebook JupyterLab saved.  Screenshots are kept
under test-artifacts/lab/.
"""
from __future__ import annotations

import contextlib
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
from conftest import grader
from grader.chapters import chapter as chapter_of
from grader.i18n import LANGUAGES, text
from notebooks import ROOT, replace_regions, write

ARTIFACTS = ROOT / "test-artifacts" / "lab"
CHAPTERS = ("01_linen", "04_gpt_head")
FLAX_CALL = """ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), ids), ids).reshape(-1)
"""
# The accidents, as notebooks of chapter 01: the solution with some regions rewritten.
ACCIDENTS = {
    "partly_solved": {"SharedEmbedLM.setup": "raise NotImplementedError('create one nn.Embed named embed')\n",
                      "SharedEmbedLM.__call__": "raise NotImplementedError('look up, mix, then attend')\n"},
    "debug_print": {"tied_io_embed": "print('debug', token_ids)\n" + FLAX_CALL},
    "never_returns": {"tied_io_embed": "while len(token_ids) > 2:  # the hidden cases are longer\n    pass\n"
                                       + FLAX_CALL},
}


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
    for name, regions in ACCIDENTS.items():
        write(replace_regions("01_linen", regions), root / f"{name}.ipynb")
    shutil.copy(ROOT / "solutions" / "01_linen.ipynb", root / "before_run_all.ipynb")  # a kernel of its own
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
    yield base, token, root
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
  const area = last && last.node.querySelector('.jp-OutputArea');  // none until the cell is drawn
  return area ? area.innerText : '';
})()"""

SET_LAST_CELL = """(() => {
  const notebook = (%s).content;
  const cell = notebook.widgets[notebook.widgets.length - 1];
  cell.model.sharedModel.setSource(%s);
  return cell.model.sharedModel.getSource();
})()"""


@contextlib.contextmanager
def open_notebook(browser, base, token, name):
    """A tab with JupyterLab showing ``name`` in a workspace of its own, its kernel idle;
    closed when the block ends, however it ends."""
    tab = browser.tab(1280, 900)
    try:
        tab.name = name
        tab.call("Page.navigate", url=f"{base}/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset&token={token}")
        panel = PANEL % json.dumps(name)
        ready = (f"window.jupyterapp && (() => {{ const p = {panel}; return p && p.sessionContext.session"
                 " && p.sessionContext.session.kernel && p.sessionContext.session.kernel.status === 'idle'; })()")
        assert tab.wait_for(ready, timeout=120), f"{name} did not open with an idle kernel"
        yield tab
    finally:
        tab.close()


def run_and_read_panel(tab, chapter, lang) -> str:
    """Run every cell, then wait for the check panel (its HTML, drawn: a row per item)."""
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
    base, token, _ = lab
    with open_notebook(browser, base, token, f"exercise_{chapter}.ipynb") as tab:
        output = run_and_read_panel(tab, chapter, "en")
        tab.screenshot(ARTIFACTS / f"exercise_{chapter}.png", max_height=2400)
        hint = text("common.not_implemented", "en").split(":")[0]
        rows = panel_rows(output)
        assert len(rows) == len(chapter_of(chapter).items) + 1, output  # and the notebook item
        assert all(line.startswith("✘") for line in rows), output
        assert output.count(hint) == len(rows), output
        assert output.count(text("common.not_implemented", "en").split("(")[0].strip()) == 1, output  # advice once


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_solution_passes_every_item(lab, browser, chapter):
    base, token, _ = lab
    with open_notebook(browser, base, token, f"solution_{chapter}.ipynb") as tab:
        output = run_and_read_panel(tab, chapter, "en")
        tab.screenshot(ARTIFACTS / f"solution_{chapter}.png", max_height=2400)
        rows = panel_rows(output)
        assert rows and all(line.startswith("✔") for line in rows), output


def test_the_panel_speaks_korean_when_asked(lab, browser):
    base, token, _ = lab
    with open_notebook(browser, base, token, "exercise_04_gpt_head.ipynb") as tab:
        korean_check = json.dumps('from grader import check\n\ncheck("04_gpt_head", lang="ko")')
        tab.evaluate(SET_LAST_CELL % (PANEL % json.dumps(tab.name), korean_check))
        output = run_and_read_panel(tab, "04_gpt_head", "ko")
        tab.screenshot(ARTIFACTS / "exercise_04_gpt_head_ko.png", max_height=2400)
        assert text("common.not_implemented", "ko").split(":")[0] in output
        assert text("ui.total", "ko") in output


# ---------------------------------------------------------------- the accidents

RUN_LAST_CELL = """(async () => {
  const panel = %s;
  jupyterapp.shell.activateById(panel.id);
  const notebook = panel.content;
  notebook.activeCellIndex = notebook.widgets.length - 1;
  await jupyterapp.commands.execute('notebook:run-cell');
  while (panel.sessionContext.session.kernel.status !== 'idle') {
    await new Promise(r => setTimeout(r, 50));
  }
  return true;
})()"""

SAVE = """(async () => {
  const panel = %s;
  jupyterapp.shell.activateById(panel.id);
  await jupyterapp.commands.execute('docmanager:save');
  return !panel.context.model.dirty;
})()"""


def saved_verdicts(tab, root, *options) -> dict:
    """What `grader check --json` says of the notebook as JupyterLab saved it."""
    assert tab.evaluate(SAVE % (PANEL % json.dumps(tab.name)), timeout=60)
    done = grader("check", str(root / tab.name), "--json", "--lang", "en", *options, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def row(item: dict) -> str:
    return f"{'✔' if item['verdict'] == 'pass' else '✘'} {item['item']} {item['points']}/{item['max_points']}"


def set_check_cell(tab, call: str) -> None:
    tab.evaluate(SET_LAST_CELL % (PANEL % json.dumps(tab.name), json.dumps(f"from grader import check\n\n{call}")))


@pytest.mark.parametrize("accident", ["partly_solved", "debug_print"])
def test_the_panel_and_the_terminal_agree(lab, browser, accident):
    base, token, root = lab
    with open_notebook(browser, base, token, f"{accident}.ipynb") as tab:
        output = run_and_read_panel(tab, "01_linen", "en")
        tab.screenshot(ARTIFACTS / f"{accident}.png", max_height=2400)
        report = saved_verdicts(tab, root)
        assert len(panel_rows(output)) == len(report["items"])
        for item in report["items"]:  # the same row, and the same message under it
            assert row(item) in output and item["message"] in output, (item, output)
        assert f"{text('ui.total', 'en')}: {report['points']}/{report['max_points']}" in output
        assert report["passed"] is False


def test_a_function_that_never_returns_stops_at_the_time_limit(lab, browser):
    """check() stops the stuck item at its time limit and judges the others; the
    terminal charges the stuck item and those after it, and names --timeout."""
    base, token, root = lab
    with open_notebook(browser, base, token, "never_returns.ipynb") as tab:
        set_check_cell(tab, 'check("01_linen", timeout=3)')
        output = run_and_read_panel(tab, "01_linen", "en")
        tab.screenshot(ARTIFACTS / "never_returns.png", max_height=2400)
        assert "✘ tied_io_embed 0/3 · timed out" in output and "your line: while len(token_ids) > 2:" in output
        assert "timeout=" in output and "✔ SharedEmbedLM.__call__ 2/2" in output
        report = saved_verdicts(tab, root, "--timeout", "60")
        items = {item["item"]: item for item in report["items"]}
        stuck = items["tied_io_embed"]
        assert stuck["key"] == "common.timeout_in_check" and "--timeout" in stuck["message"]
        for name in ("notebook", "TiedIO.params", "TiedIO.__call__", "TiedIO.gradient"):  # they ran: judged
            assert row(items[name]) in output and items[name]["verdict"] == "pass"


def test_check_before_run_all_says_run_the_cells_above(lab, browser):
    base, token, root = lab
    with open_notebook(browser, base, token, "before_run_all.ipynb") as tab:
        assert tab.evaluate(RUN_LAST_CELL % (PANEL % json.dumps(tab.name)), timeout=300)
        last = LAST_OUTPUT % (PANEL % json.dumps(tab.name))
        output = tab.wait_for(f"(() => {{ const t = {last}; return /^✘/m.test(t) ? t : ''; }})()", timeout=120)
        tab.evaluate(SHOW_LAST_CELL % (PANEL % json.dumps(tab.name)))
        tab.screenshot(ARTIFACTS / "before_run_all.png", max_height=2400)
        report = saved_verdicts(tab, root)
        assert report["passed"]  # run from the top, the solution passes
        rows = panel_rows(output)
        assert [r.split()[1] for r in rows] == [item["item"] for item in report["items"]]
        assert output.count("Not run yet in this kernel") == len(rows) and "Run All Cells" in output


def test_a_language_typo_is_one_line_in_the_notebook_as_in_the_terminal(lab, browser):
    base, token, root = lab
    with open_notebook(browser, base, token, "exercise_01_linen.ipynb") as tab:
        set_check_cell(tab, 'check("01_linen", lang="kr")')
        assert tab.evaluate(RUN_LAST_CELL % (PANEL % json.dumps(tab.name)), timeout=300)
        # The kernel is idle once the cell ran; its output is drawn a moment later.
        output = tab.wait_for(f"({LAST_OUTPUT % (PANEL % json.dumps(tab.name))}).trim()")
        tab.evaluate(SHOW_LAST_CELL % (PANEL % json.dumps(tab.name)))
        tab.screenshot(ARTIFACTS / "lang_kr.png", max_height=1200, whole=False)
        assert len(output.splitlines()) == 1 and "Traceback" not in output, output
        terminal = grader("check", str(root / tab.name), "--lang", "kr")
        assert terminal.returncode == 2 and "Traceback" not in terminal.stderr
        assert all(lang in output and lang in terminal.stderr for lang in LANGUAGES)

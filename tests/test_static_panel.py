"""The check panel is readable outside Jupyter (issue 25): ``check()``'s output holds,
beside the widget, the same panel as static HTML and the table as text, so that a
notebook converted by nbconvert (or shown on GitHub, which draws no widget either)
still shows every verdict."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from grader.outcome import FAIL, PASS, Finding, Verdict
from grader.selfcheck.panel import CheckResult
from notebooks import ROOT, replace_regions, write

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CHAPTER = "04_gpt_head"  # plain NumPy: its kernel starts in a second or two


def test_outside_a_kernel_the_output_is_the_static_panel_and_the_table():
    result = CheckResult(Path("x.ipynb"), CHAPTER, verdicts=[
        Verdict("tied_head_forward", 3, 3, PASS), Verdict("sample_next", 0, 2, FAIL, Finding("common.not_flattened"))])
    bundle = result._repr_mimebundle_()
    assert WIDGET_VIEW not in bundle  # no kernel, no widget
    assert bundle["text/plain"] == repr(result)
    assert "✔ tied_head_forward" in bundle["text/html"] and "✘ sample_next" in bundle["text/html"]


def test_an_executed_notebook_converted_to_html_shows_every_verdict(tmp_path):
    # sample_next wrong: the panel has a ✘ row with its message as well as ✔ rows
    nb = replace_regions(CHAPTER, {"sample_next": "return int(np.argmax(logits))"})
    path = write(nb, tmp_path / f"{CHAPTER}.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "TIED_GRADING"}  # the check cell runs, as for a student
    jupyter = [sys.executable, "-m", "jupyter", "nbconvert"]
    # As JupyterLab saves a notebook by default: the outputs, not the widgets' state.
    subprocess.run([*jupyter, "--to", "notebook", "--execute", "--inplace", "--ExecutePreprocessor.timeout=300",
                    "--ExecutePreprocessor.store_widget_state=False", str(path)],
                   check=True, capture_output=True, env=env, cwd=ROOT, timeout=600)
    executed = nbformat.read(path, as_version=4)
    outputs = [o for cell in executed.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    # No widget: offline, nbconvert would pick its view (a script from unpkg) over the HTML.
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    panel = [o for o in outputs if "✔ tied_head_forward" in o.get("data", {}).get("text/html", "")]
    assert len(panel) == 1 and set(panel[0]["data"]) == {"text/html", "text/plain"}, panel
    # the "Checking…" line, if shown, leaves no empty text behind (an empty <pre> in HTML)
    assert not [o for o in outputs if o.get("data", {}).get("text/plain") == ""]
    subprocess.run([*jupyter, "--to", "html", str(path)], check=True, capture_output=True, env=env, cwd=ROOT,
                   timeout=300)
    page = path.with_suffix(".html").read_text(encoding="utf-8")
    # as HTML, not quoted in a widget's text: the tags are tags
    assert ">✔ tied_head_forward</b>" in page and ">✘ sample_next</b>" in page, page[-3000:]
    assert "<pre></pre>" not in page


def test_in_a_kernel_the_output_is_the_static_panel_and_the_table_too(monkeypatch):
    monkeypatch.setattr("grader.selfcheck.panel.in_kernel", lambda: True)
    result = CheckResult(Path("x.ipynb"), CHAPTER, verdicts=[Verdict("tied_head_forward", 3, 3, PASS)])
    assert set(result._repr_mimebundle_()) == {"text/html", "text/plain"}


def test_the_checking_line_is_blanked_without_an_empty_text(monkeypatch):
    import threading

    import grader.selfcheck.check as selfcheck

    shown, updates = threading.Event(), []

    class Handle:
        def update(self, data, raw=False):
            updates.append(data)

    def display(message):
        shown.set()
        return Handle()

    monkeypatch.setattr(selfcheck, "kernel_display", display)
    monkeypatch.setattr(selfcheck, "QUIET", 0.0)
    with selfcheck.saying_what_it_does("Checking…"):
        assert shown.wait(30)
    assert updates and all("text/plain" not in u for u in updates)

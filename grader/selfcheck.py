"""``check()``: the chapter's checks inside the running notebook.

It runs the very probes and judges that ``grader check`` uses, only in this
process instead of a separate one, so the verdicts agree, and returns the same
``Result``: in Jupyter it shows as an ipywidgets panel (``panel``), elsewhere it
prints as a table.
"""
from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

from . import judge
from .i18n import detect_lang, text
from .judge import PASS
from .probe_kernel import run_in_process
from .registry import chapter_of_item, chapters
from .report import status_text, verdict_message
from .result import Result

COLOURS = {PASS: "#1a7f37"}
KEEP_ALL = "word-break:keep-all"  # Korean breaks between words, not inside them
FAIL_COLOUR = "#cf222e"


def panel(result: Result, lang: str):
    from html import escape

    import ipywidgets as w

    rows = []
    for v in result.verdicts:
        colour = COLOURS.get(v.status, FAIL_COLOUR)
        mark = "✔" if v.status == PASS else "✘"
        rows.append(w.HTML(
            f"<div style='padding:2px 0'><b style='color:{colour}'>{mark} {escape(v.item)}</b> "
            f"<span>{v.points}/{v.max_points} · {escape(status_text(v.status, lang))}</span>"
            f"<div style='margin-left:1.4em;color:#444;{KEEP_ALL if lang == 'ko' else ''}'>"
            f"{escape(verdict_message(v, lang))}</div></div>"
        ))
    title = w.HTML(f"<b>{escape(text('ui.check_title', lang, chapter=result.chapter))}</b> — "
                   f"{text('ui.total', lang)}: {result.points}/{result.max_points}")
    return w.VBox([title, *rows], layout=w.Layout(border="1px solid #d0d7de", padding="6px"))


def _resolve(target):
    """A chapter id, or a graded function/class (or its name) → (chapter, only)."""
    known = chapters()
    if isinstance(target, str) and target in known:
        return known[target], None
    name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
    return chapter_of_item(name), name


def check(target, lang: str | None = None, namespace: dict | None = None):
    """Run a chapter's checks (``check("01_linen")``) or one exercise's (``check(tied_io_embed)``)."""
    lang = lang or detect_lang()
    if os.environ.get("TIED_GRADING"):
        print(text("ui.graded_outside", lang))
        return None
    try:
        ch, only = _resolve(target)
    except KeyError:
        print(text("ui.unknown_chapter", lang, name=target, known=", ".join(chapters())), file=sys.stderr)
        return None
    if namespace is None:
        frame = inspect.currentframe()  # check()'s own; its caller's globals are the notebook's
        caller = frame.f_back if frame is not None else None
        namespace = caller.f_globals if caller is not None else {}
    facts = run_in_process(ch, namespace, only)
    verdicts = [judge.judge_item(ch, ch.item(name), found) for name, found in facts.items()]
    return Result(Path("<notebook>"), ch.id, verdicts=verdicts, lang=lang)

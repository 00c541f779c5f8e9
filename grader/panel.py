"""A ``Result`` as Jupyter shows it: a panel of ipywidgets, one row per verdict, with
the same messages as the terminal's table (``grader.report``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .i18n import text
from .outcome import PASS
from .report import status_text, verdict_messages

if TYPE_CHECKING:
    from .result import Result

COLOURS = {PASS: "#1a7f37"}
KEEP_ALL = "word-break:keep-all"  # Korean breaks between words, not inside them
FAIL_COLOUR = "#cf222e"


def panel(result: Result, lang: str):
    from html import escape

    import ipywidgets as w

    rows = []
    for v, message in zip(result.verdicts, verdict_messages(result.verdicts, lang)):
        colour = COLOURS.get(v.status, FAIL_COLOUR)
        mark = "✔" if v.status == PASS else "✘"
        rows.append(w.HTML(
            f"<div style='padding:2px 0'><b style='color:{colour}'>{mark} {escape(v.item)}</b> "
            f"<span>{v.points}/{v.max_points} · {escape(status_text(v.status, lang))}</span>"
            f"<div style='margin-left:1.4em;color:#444;{KEEP_ALL if lang == 'ko' else ''}'>"
            f"{escape(message)}</div></div>"
        ))
    title = w.HTML(f"<b>{escape(text('ui.check_title', lang, chapter=result.chapter))}</b> — "
                   f"{text('ui.total', lang)}: {result.points}/{result.max_points}")
    return w.VBox([title, *rows], layout=w.Layout(border="1px solid #d0d7de", padding="6px"))

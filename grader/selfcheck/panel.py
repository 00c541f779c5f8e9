"""A ``Result`` as a notebook shows it: a panel of static HTML, one row per verdict,
with the same messages as the terminal's table (``grader.outputs.report``).  No widget: offline,
nbconvert would draw a widget's view (a script from the network) instead of the HTML.
``check()`` returns a ``CheckResult``, which shows itself so, with the table as text
beside it: both survive in a notebook on GitHub or converted by nbconvert, offline."""
from __future__ import annotations

from grader.i18n import text
from grader.outcome import PASS
from grader.outputs.report import item_label, status_text, table, verdict_messages
from grader.result import Result

COLOURS = {PASS: "#1a7f37"}
KEEP_ALL = "word-break:keep-all"  # Korean breaks between words, not inside them
FAIL_COLOUR = "#cf222e"


def panel_html(result: Result, lang: str) -> str:
    """The check panel as static HTML: what JupyterLab shows, and a notebook on GitHub
    or converted by nbconvert."""
    from html import escape

    rows = []
    for v, message in zip(result.verdicts, verdict_messages(result.verdicts, lang)):
        colour = COLOURS.get(v.status, FAIL_COLOUR)
        mark = "✔" if v.status == PASS else "✘"
        rows.append(
            f"<div style='padding:2px 0'><b style='color:{colour}'>{mark} {escape(item_label(v.item, lang))}</b> "
            f"<span>{v.points}/{v.max_points} · {escape(status_text(v.status, lang))}</span>"
            f"<div style='margin-left:1.4em;color:#444;{KEEP_ALL if lang == 'ko' else ''}'>"
            f"{escape(message)}</div></div>"
        )
    title = (f"<div><b>{escape(text('ui.check_title', lang, chapter=result.chapter))}</b> — "
             f"{text('ui.total', lang)}: {result.points}/{result.max_points}</div>")
    return f"<div style='border:1px solid #d0d7de;padding:6px'>{title}{''.join(rows)}</div>"


def in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return hasattr(get_ipython(), "kernel")


class CheckResult(Result):
    """``check()``'s result: printed, the terminal's table; in Jupyter, the panel."""

    def __repr__(self) -> str:
        return table(self, self.lang)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/html": panel_html(self, self.lang), "text/plain": repr(self)}

"""``grader report GRADEBOOK``: one offline HTML page about a graded class.

It answers a teacher's questions in the order they come: how did the class score on
each chapter, which items did it pass, what each student got on each item (a table
sorted by clicking a heading, with their key mistake), which mistakes it made on each
item (with the message the students read, which holds that item's hint), and which
submissions were slow or could not be graded.  A table with no rows is left out.  The
plots are PNGs inside the page, so it opens anywhere, with no network.
"""
from __future__ import annotations

import base64
import io
import json
from collections import Counter, defaultdict
from html import escape
from pathlib import Path

from .atomic import write_atomic
from .i18n import text
from .outcome import NOTEBOOK_ITEM
from .report import item_message

TOP = 10  # rows in the mistakes and slowest tables


def load(gradebook: Path) -> dict[str, dict]:
    return json.loads((gradebook / "gradebook.json").read_text(encoding="utf-8"))["submissions"]


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def score_plots(graded: list[dict], lang: str) -> list[tuple[str, str]]:
    """(chapter, picture): the distribution of the class's scores on each chapter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_chapter = defaultdict(list)
    for entry in graded:
        by_chapter[entry["chapter"]].append(entry)
    found = []
    with matplotlib.rc_context({"font.family": ["DejaVu Sans", *cjk_fonts()]}):
        for chapter, entries in sorted(by_chapter.items()):
            found.append((chapter, score_plot(plt, chapter, entries, lang)))
    return found


def cjk_fonts() -> list[str]:
    """The Noto Sans CJK fonts of this machine (fonts-noto-cjk), registered with
    matplotlib, for its font fallback: Korean labels then show as letters, not boxes.
    Matplotlib's font cache may predate their install, so they are added by file."""
    from matplotlib import font_manager

    names = []
    for path in sorted(font_manager.findSystemFonts()):
        if "NotoSansCJK-Regular" in Path(path).name:
            font_manager.fontManager.addfont(path)
            names.append(font_manager.FontProperties(fname=path).get_name())
    return names


def score_plot(plt, chapter: str, entries: list[dict], lang: str) -> str:
    """One chapter's distribution of scores, as a PNG data URL."""
    from matplotlib.ticker import MaxNLocator

    top = entries[0]["max_points"]
    fig, ax = plt.subplots(figsize=(5.5, 2.6))
    counts = Counter(e["points"] for e in entries)
    ax.bar(range(top + 1), [counts.get(p, 0) for p in range(top + 1)], color="#3b6ea8")
    ax.set_xlabel(text("ui.points", lang))
    ax.set_ylabel(text("ui.report_submissions", lang))
    ax.set_xticks(range(top + 1))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of submissions
    ax.set_title(chapter)
    picture = _png(fig)
    plt.close(fig)
    return picture


def pass_rates(graded: list[dict]) -> list[tuple[str, str, float, int]]:
    """(chapter, item, share passed, submissions) in chapter and item order."""
    seen: dict[tuple[str, str], list[bool]] = {}
    for entry in graded:
        for item in entry["items"]:
            seen.setdefault((entry["chapter"], item["item"]), []).append(item["verdict"] == "pass")
    return [(c, i, sum(v) / len(v), len(v)) for (c, i), v in seen.items()]


def item_mistakes(graded: list[dict], lang: str) -> dict[tuple[str, str], list[tuple[str, int, str]]]:
    """For each (chapter, item) that some submission failed: (message key, how many
    submissions, one message as students read it), most frequent first."""
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    example: dict[tuple[str, str, str], str] = {}
    for entry in graded:
        for item in entry["items"]:
            if item["verdict"] != "pass" and item["key"]:
                where = (entry["chapter"], item["item"])
                counts[where][item["key"]] += 1
                example.setdefault((*where, item["key"]), item_message(item, lang))
    return {where: [(key, n, example[(*where, key)]) for key, n in found.most_common(TOP)]
            for where, found in counts.items()}


def key_mistake(entry: dict, lang: str) -> str:
    """A submission's key mistake, as HTML: its first failed item and that item's
    message in ``lang`` (later failures often follow from the first).  The notebook's
    own check (its outputs) comes last: when an item fails, that item names the mistake."""
    failed = [i for i in entry["items"] if i["verdict"] != "pass"]
    first = next((i for i in failed if i["item"] != NOTEBOOK_ITEM), failed[0] if failed else None)
    if first is None:
        return ""
    return f"<b>{escape(first['item'])}</b>: {escape(item_message(first, lang))}"


def table(headers: list[str], rows: list[list[str]], sortable: bool = False) -> str:
    """An HTML table of already escaped cells, in a box that scrolls sideways when the
    table is wider than the screen; nothing at all when there are no rows."""
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    kind = " class='sortable'" if sortable else ""
    return f"<div class='wide'><table{kind}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def render_html(entries: dict[str, dict], lang: str) -> str:
    graded = [e for e in entries.values() if "error" not in e]
    bad = [e for e in entries.values() if "error" in e]
    t = lambda key, **kw: escape(text(key, lang, **kw))
    parts = [f"<h1>{t('ui.report_title')}</h1>",
             f"<p>{t('ui.report_summary', graded=len(graded), bad=len(bad))}</p>"]
    plots = score_plots(graded, lang)
    if plots:
        parts.append(f"<h2>{t('ui.report_scores')}</h2>")
        parts += [f"<figure><img alt='{escape(c)}' src='{src}'></figure>" for c, src in plots]
    rates = [[f"{escape(c)} · {escape(i)}", f"<span class='bar' style='width:{share * 12:.1f}em'></span> "
              f"{t('ui.report_n_of', passed=round(share * n), total=n)}"] for c, i, share, n in pass_rates(graded)]
    if rates:
        parts += [f"<h2>{t('ui.report_pass_rate')}</h2>", table([t("ui.item"), t("ui.report_passed")], rates)]
    for chapter in sorted({e["chapter"] for e in graded}):
        students = sorted((e for e in graded if e["chapter"] == chapter), key=lambda e: e["student"])
        items = [i["item"] for i in students[0]["items"]]
        rows = [[escape(e["student"]), str(e["points"]), key_mistake(e, lang), *(str(i["points"]) for i in e["items"])]
                for e in students]  # the key mistake before the items' columns, which may scroll
        parts += [f"<h2>{t('ui.report_per_student', chapter=chapter)}</h2><p>{t('ui.report_sort_hint')}</p>",
                  table([t("ui.report_student"), t("ui.total"), t("ui.report_key_mistake"), *map(escape, items)],
                        rows, sortable=True)]
    per_item = item_mistakes(graded, lang)
    if per_item:
        parts.append(f"<h2>{t('ui.report_mistakes')}</h2>")
    for (chapter, item), found in per_item.items():
        parts += [f"<h3>{escape(chapter)} · {escape(item)}</h3>",
                  table([t("ui.report_message"), t("ui.report_submissions")],
                        [[escape(message), str(n)] for _, n, message in found])]
    slowest = sorted(graded, key=lambda e: -e.get("seconds", 0))[:TOP]
    rows = [[f"{escape(e['student'])} · {escape(e['chapter'])}", f"{e.get('seconds', 0):.1f}",
             f"{e['points']}/{e['max_points']}"] for e in slowest]
    if rows:
        parts += [f"<h2>{t('ui.report_slowest')}</h2>",
                  table([t("ui.report_student"), t("ui.report_seconds"), t("ui.points")], rows)]
    unfinished = [(e["student"], e["message"]) for e in bad]
    unfinished += [(e["student"], i["message"]) for e in graded for i in e["items"]
                   if i["verdict"] in ("timeout", "oom", "not_reached")][:TOP]
    if unfinished:
        parts += [f"<h2>{t('ui.report_failed')}</h2>",
                  table([t("ui.report_student"), t("ui.report_message")],
                        [[escape(student), escape(message)] for student, message in unfinished])]
    return PAGE.format(lang=lang, title=t("ui.report_title"), body="\n".join(parts), script=SORTING)


def write_report(gradebook: Path, out: Path, lang: str) -> Path:
    write_atomic(out, render_html(load(gradebook), lang))
    return out


PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #1f2328; overflow-wrap: anywhere; }}
:lang(ko) {{ word-break: keep-all; }}
th {{ white-space: nowrap; }}
table {{ border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; }}
th, td {{ text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #d0d7de; vertical-align: top; }}
.bar {{ display: inline-block; height: .8em; background: #3b6ea8; }}
figure {{ display: inline-block; margin: 0 1rem 1rem 0; }} img {{ max-width: 100%; }}
.sortable th {{ cursor: pointer; text-decoration: underline dotted; }}
.wide {{ overflow-x: auto; max-width: 100%; }} td code {{ white-space: nowrap; }}
td, th {{ overflow-wrap: normal; }} .sortable td:first-child {{ white-space: nowrap; }}
.sortable td:nth-child(3) {{ min-width: 22rem; }}
@media (max-width: 40rem) {{ th {{ white-space: normal; }} .sortable td:nth-child(3) {{ min-width: 14rem; }} }}
pre {{ overflow-x: auto; background: #f6f8fa; padding: .6rem; }} pre.output {{ background: #eef6ee; }}
</style></head><body>
{body}
<script>{script}</script>
</body></html>
"""

# Clicking a heading of a sortable table sorts its rows by that column (numbers as
# numbers), a second click the other way round.
SORTING = """
document.querySelectorAll("table.sortable th").forEach((th, col) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0];
  const key = r => { const v = r.cells[col].textContent; return isNaN(parseFloat(v)) ? v : parseFloat(v); };
  const down = th.dataset.down !== "1";
  th.dataset.down = down ? "1" : "0";
  [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * (down ? -1 : 1))
    .forEach(r => body.appendChild(r));
}));
"""

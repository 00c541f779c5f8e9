"""``grader report GRADEBOOK``: one offline HTML page about a graded class.

It answers a teacher's questions in the order they come: how did the class score on
each chapter, which items did it pass, which mistakes did it make most (with the
message the students read), and which submissions were slow or could not be graded.
The plots are PNGs inside the page, so it opens anywhere, with no network.
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
    from matplotlib.ticker import MaxNLocator

    by_chapter = defaultdict(list)
    for entry in graded:
        by_chapter[entry["chapter"]].append(entry)
    found = []
    for chapter, entries in sorted(by_chapter.items()):
        top = entries[0]["max_points"]
        fig, ax = plt.subplots(figsize=(5.5, 2.6))
        counts = Counter(e["points"] for e in entries)
        ax.bar(range(top + 1), [counts.get(p, 0) for p in range(top + 1)], color="#3b6ea8")
        ax.set_xlabel(text("ui.points", lang))
        ax.set_ylabel(text("ui.report_submissions", lang))
        ax.set_xticks(range(top + 1))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of submissions
        ax.set_title(chapter)
        found.append((chapter, _png(fig)))
        plt.close(fig)
    return found


def pass_rates(graded: list[dict]) -> list[tuple[str, str, float, int]]:
    """(chapter, item, share passed, submissions) in chapter and item order."""
    seen: dict[tuple[str, str], list[bool]] = {}
    for entry in graded:
        for item in entry["items"]:
            seen.setdefault((entry["chapter"], item["item"]), []).append(item["verdict"] == "pass")
    return [(c, i, sum(v) / len(v), len(v)) for (c, i), v in seen.items()]


def mistakes(graded: list[dict]) -> list[tuple[str, int, str]]:
    """(message key, how many submissions, one message as students read it), most frequent first."""
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for entry in graded:
        for item in entry["items"]:
            if item["verdict"] != "pass" and item["key"]:
                counts[item["key"]] += 1
                example.setdefault(item["key"], item["message"])
    return [(key, n, example[key]) for key, n in counts.most_common(TOP)]


def render_html(entries: dict[str, dict], lang: str) -> str:
    graded = [e for e in entries.values() if "error" not in e]
    bad = [e for e in entries.values() if "error" in e]
    t = lambda key, **kw: escape(text(key, lang, **kw))
    parts = [f"<h1>{t('ui.report_title')}</h1>",
             f"<p>{t('ui.report_summary', graded=len(graded), bad=len(bad))}</p>",
             f"<h2>{t('ui.report_scores')}</h2>"]
    parts += [f"<figure><img alt='{escape(c)}' src='{src}'></figure>" for c, src in score_plots(graded, lang)]
    parts.append(f"<h2>{t('ui.report_pass_rate')}</h2><table><tr><th>{t('ui.item')}</th>"
                 f"<th>{t('ui.report_passed')}</th></tr>")
    for chapter, item, share, n in pass_rates(graded):
        parts.append(f"<tr><td>{escape(chapter)} · {escape(item)}</td><td><span class='bar' "
                     f"style='width:{share * 12:.1f}em'></span> {share:.0%} ({n})</td></tr>")
    parts.append(f"</table><h2>{t('ui.report_mistakes')}</h2><table><tr><th>{t('ui.report_mistake')}</th>"
                 f"<th>{t('ui.report_submissions')}</th><th>{t('ui.report_message')}</th></tr>")
    for key, n, message in mistakes(graded):
        parts.append(f"<tr><td><code>{escape(key)}</code></td><td>{n}</td><td>{escape(message)}</td></tr>")
    slowest = sorted(graded, key=lambda e: -e.get("seconds", 0))[:TOP]
    parts.append(f"</table><h2>{t('ui.report_slowest')}</h2><table><tr><th>{t('ui.report_student')}</th>"
                 f"<th>{t('ui.report_seconds')}</th><th>{t('ui.points')}</th></tr>")
    for e in slowest:
        parts.append(f"<tr><td>{escape(e['student'])} · {escape(e['chapter'])}</td><td>{e.get('seconds', 0):.1f}</td>"
                     f"<td>{e['points']}/{e['max_points']}</td></tr>")
    parts.append(f"</table><h2>{t('ui.report_failed')}</h2><table><tr><th>{t('ui.report_student')}</th>"
                 f"<th>{t('ui.report_message')}</th></tr>")
    unfinished = [(e["student"], e["message"]) for e in bad]
    unfinished += [(e["student"], i["message"]) for e in graded for i in e["items"]
                   if i["verdict"] in ("timeout", "oom", "not_reached")][:TOP]
    for student, message in unfinished:
        parts.append(f"<tr><td>{escape(student)}</td><td>{escape(message)}</td></tr>")
    parts.append("</table>")
    return PAGE.format(lang=lang, title=t("ui.report_title"), body="\n".join(parts))


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
</style></head><body>
{body}
</body></html>
"""

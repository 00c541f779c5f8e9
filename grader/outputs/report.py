"""Showing results: a table for people, JSON for machines."""
from __future__ import annotations

import json
import shutil
import unicodedata
from dataclasses import replace

from grader.i18n import render, text
from grader.outcome import NOTEBOOK_ITEM, Finding, Verdict

NARROWEST = 30  # columns of a message beside the table; with fewer, it goes below its row
BELOW = 4  # the indent of a message below its row


def width(s: str) -> int:
    """Terminal columns: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def pad(s: str, columns: int) -> str:
    return s + " " * (columns - width(s))


def status_text(status: str, lang: str) -> str:
    return text(f"ui.{status}", lang)


def item_label(item: str, lang: str) -> str:
    """An item's name as a table shows it: the ``notebook`` item in the reader's language
    (the others are the code's own names)."""
    return text("ui.notebook_item", lang) if item == NOTEBOOK_ITEM else item


def finding_message(finding: Finding, case: str, shown: dict, lang: str) -> str:
    """A finding's message in ``lang``, with the case it failed on (its kind and sizes)."""
    message = " ".join(render(finding, lang).splitlines())  # a library's message may run over lines
    if case:
        message += f" [{text('ui.case', lang)}: {text(case, lang, **shown)}]"
    return message


def verdict_message(v: Verdict, lang: str) -> str:
    return "" if v.finding is None else finding_message(v.finding, v.case, v.shown, lang)


def recorded(params: dict) -> dict:
    """A finding's parameters as the gradebook keeps them (JSON), so that a page in
    another language can render the message again from its key."""
    return json.loads(json.dumps(params, default=str))


def item_message(item: dict, lang: str) -> str:
    """A gradebook item's message in ``lang``, rendered again from its key and
    parameters; as recorded (the gradebook's language) when it kept none."""
    if not item.get("key") or "params" not in item:
        return item["message"]
    return finding_message(Finding(item["key"], item["params"]), item["case"], item.get("shown", {}), lang)


def verdict_messages(verdicts: list[Verdict], lang: str) -> list[str]:
    """Each verdict's message.  The advice on a stub left alone is given in full once;
    later stubs show only their hint (an untouched notebook has one per item)."""
    out, told = [], False
    for v in verdicts:
        if v.finding is not None and v.finding.key == "common.not_implemented":
            if told:
                v = replace(v, finding=replace(v.finding, key="common.not_implemented_again"))
            told = True
        out.append(verdict_message(v, lang))
    return out


def terminal_columns() -> int:
    """The terminal's width: ``COLUMNS``, else the real one, else 80 (not a terminal)."""
    return shutil.get_terminal_size((80, 24)).columns


def wrap(message: str, columns: int, indent: int) -> str:
    """``message`` in lines of at most ``columns`` terminal columns, broken between words
    (Korean included: it is written with spaces), continued under ``indent`` spaces.  A
    word is never split: an address, an identifier or a quoted line of code wider than a
    line goes on a line of its own, whole, and runs past the edge (a broken address
    cannot be copied, a broken identifier reads as two)."""
    lines, line = [], ""
    for word in message.split(" "):
        if line and width(line) + 1 + width(word) > columns:
            lines.append(line)
            line = ""
        line = f"{line} {word}" if line else word
    lines.append(line)
    return ("\n" + " " * indent).join(lines)


def table(result, lang: str, columns: int | None = None) -> str:
    """The terminal report of one graded submission, ``columns`` wide (the terminal's
    by default): each message beside its row, or below it when the row leaves too
    little room, broken between words."""
    columns = columns or terminal_columns()
    if result.bad is not None:
        return wrap(render(result.bad, lang), columns, 0)
    rows = [(item_label(v.item, lang), f"{v.points}/{v.max_points}", status_text(v.status, lang), message)
            for v, message in zip(result.verdicts, verdict_messages(result.verdicts, lang))]
    heads = (text("ui.item", lang), text("ui.points", lang), text("ui.verdict", lang))
    widths = [max(width(h), *(width(r[i]) for r in rows)) for i, h in enumerate(heads)]
    gap = 2 if sum(widths) + 2 * (len(widths) - 1) <= columns else 1  # narrow: one space between columns
    line = lambda cells: wrap((" " * gap).join(pad(c, w) for c, w in zip(cells, widths)).rstrip(), columns, 0)
    out = [wrap(f"{result.path}  ({result.chapter})", columns, 0), line(heads), line("-" * w for w in widths)]
    indent = sum(widths) + gap * len(widths)
    beside = columns - indent >= NARROWEST
    for row in rows:
        if not row[3]:
            out.append(line(row[:3]))
        elif beside:
            out.append(pad(line(row[:3]), indent - gap) + " " * gap + wrap(row[3], columns - indent, indent))
        else:
            out.append(line(row[:3]))
            out.append(" " * BELOW + wrap(row[3], columns - BELOW, BELOW))
    out.append(f"{text('ui.total', lang)}: {result.points}/{result.max_points}")
    return "\n".join(out)


def as_dict(result, lang: str) -> dict:
    if result.bad is not None:
        return {"path": str(result.path), "error": result.bad.key, "params": recorded(result.bad.params),
                "message": render(result.bad, lang)}
    return {
        "path": str(result.path),
        "chapter": result.chapter,
        "sha256": result.sha256,
        "points": result.points,
        "max_points": result.max_points,
        "passed": result.passed,
        "seconds": round(result.seconds, 2),
        "items": [
            {
                "item": v.item,
                "points": v.points,
                "max_points": v.max_points,
                "verdict": v.status,
                "key": v.finding.key if v.finding else "",
                "params": recorded(v.finding.params) if v.finding else {},
                "case": v.case,
                "shown": recorded(v.shown),
                "visibility": v.visibility,
                "message": message,
            }
            for v, message in zip(result.verdicts, verdict_messages(result.verdicts, lang))
        ],
    }


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


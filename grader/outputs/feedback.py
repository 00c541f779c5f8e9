"""``grader feedback GRADEBOOK --out DIR``: one offline HTML page per student.

What nbgrader's ``generate_feedback`` gives a class: each student's own page, in the
gradebook's language, with their score on each item, each message as the grader wrote
it, the worked example they broke (where the failing case is one of the notebook's),
and, given the published book's address (``--book``), a link to the chapter that
teaches it.  The pages hold no script
and load nothing: a teacher can mail them or put them on the course's site.
"""
from __future__ import annotations

import re
from collections import defaultdict
from html import escape
from pathlib import Path

from grader import chapters, expected_outputs
from grader.atomic import write_atomic
from grader.i18n import text
from grader.outputs.class_report import PAGE, load, table
from grader.outputs.report import item_message

WORKED = "case.worked_example"  # the case key of a failure on the notebook's own example


def page_name(student: str) -> str:
    """A file name for the student's page (their folder's name, made safe)."""
    return re.sub(r"[^\w.-]+", "_", student).strip("._") or "student"


def chapter_link(book: str, chapter: str) -> str:
    return f"{book.rstrip('/')}/book/{chapter}.html"


def chapter_title(chapter: str) -> str:
    """The chapter's title as the book shows it (its id for a chapter this grader lacks)."""
    try:
        return chapters.chapter(chapter).title
    except KeyError:
        return chapter


def worked_example(chapter: str, item: str) -> dict | None:
    """The chapter's first worked example (a checked cell, with the solution's output)
    that calls the item's function or class."""
    name = re.escape(item.split(".")[0])
    return next((ex for ex in expected_outputs.for_chapter(chapter)["worked_examples"]
                 if re.search(rf"\b{name}\b", ex["source"])), None)


def student_page(student: str, entries: list[dict], lang: str, book: str) -> str:
    t = lambda key, **kw: escape(text(key, lang, **kw))
    parts = [f"<h1>{t('ui.feedback_title', student=student)}</h1>"]
    for entry in sorted(entries, key=lambda e: e.get("chapter", "")):
        if "error" in entry:  # a file that could not be graded
            message = item_message({"key": entry["error"], "case": "", **entry}, lang)
            parts.append(f"<p>{escape(message)}</p>")
            continue
        chapter = entry["chapter"]
        parts.append(f"<h2>{t('ui.feedback_score', chapter=chapter, points=entry['points'], total=entry['max_points'])}"
                     "</h2>")
        rows = [[escape(item["item"]), f"{item['points']}/{item['max_points']}", t(f"ui.{item['verdict']}")]
                for item in entry["items"]]
        parts.append(table([t("ui.item"), t("ui.points"), t("ui.verdict")], rows))
        for item in entry["items"]:  # each message under its item, then the example it broke
            if not item["message"]:
                continue
            parts.append(f"<h3>{escape(item['item'])}</h3><p>{escape(item_message(item, lang))}</p>")
            example = worked_example(chapter, item["item"]) if item["case"] == WORKED else None
            if example is not None:
                parts.append(f"<p>{t('ui.feedback_example')}:</p><pre>{escape(example['source'])}</pre>"
                             f"<pre class='output'>{escape(expected_outputs.output_text(example['outputs']))}</pre>")
        if book:  # only to a book the students can open, never to a file of the teacher's machine
            parts.append(f"<p><a href='{escape(chapter_link(book, chapter))}'>"
                         f"{t('ui.feedback_book', chapter=chapter_title(chapter))}</a></p>")
    return PAGE.format(lang=lang, title=t("ui.feedback_title", student=student), body="\n".join(parts), script="")


def write_feedback(gradebook: Path, out: Path, lang: str, book: str) -> list[Path]:
    """One page per student of the gradebook in ``out``; the pages written."""
    by_student: dict[str, list[dict]] = defaultdict(list)
    for entry in load(gradebook).values():
        by_student[entry["student"]].append(entry)
    written = []
    for student, entries in sorted(by_student.items()):
        path = out / f"{page_name(student)}.html"
        write_atomic(path, student_page(student, entries, lang, book))
        written.append(path)
    return written

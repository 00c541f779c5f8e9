"""The formats of the platforms teachers already use, written from a graded submission.

- **Gradescope** runs ``/autograder/run_autograder`` in one container per submission,
  with the files under ``/autograder/submission`` and the results expected in
  ``/autograder/results/results.json`` (its "Autograder Specifications": a top-level
  ``score`` and ``tests``, each with ``name``, ``score``, ``max_score``, ``status``,
  ``output`` and ``visibility``).
- **PrairieLearn**'s external grader runs one container per submission with the
  student's files under ``/grade/student`` and reads ``/grade/results/results.json``
  (``gradable``, ``score`` in [0, 1], ``message``, ``tests`` with ``points`` and
  ``max_points``).
- **Canvas** imports a gradebook CSV with the columns ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section`` and one column per assignment.

Each function takes what ``report.as_dict`` gives for one submission, so the three
formats say exactly what ``grader check`` says, in the course's language.
"""
from __future__ import annotations

import csv
import io
import json
import os
import stat
import zipfile
from pathlib import Path

from .atomic import write_atomic
from .i18n import render, text
from .registry import Finding

GRADESCOPE_VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")
CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def item_output(item: dict, lang: str, before_due_date: bool = False) -> str:
    """What a student reads under one test: the verdict word and the message.  Before
    the due date, a failure on an "after_due_date" case says only that it failed."""
    word = text(f"ui.{item['verdict']}", lang)
    if before_due_date and withheld(item):
        return f"{word}: {text('ui.withheld', lang)}"
    return f"{word}: {item['message']}" if item["message"] else word


def withheld(item: dict) -> bool:
    """Whether the item failed on a case whose feedback waits for the due date."""
    return item["verdict"] != "pass" and item.get("visibility") == "after_due_date"


def gradescope_tests(item: dict, number: int, lang: str, visibility: str) -> list[dict]:
    """One test per item, with its score.  Where the failing case is "after_due_date",
    the test says only that it failed, and a second test without points, shown after
    the due date, holds the message (Gradescope sets visibility per test)."""
    test = {
        "name": item["item"],
        "number": str(number),
        "score": float(item["points"]),
        "max_score": float(item["max_points"]),
        "status": "passed" if item["verdict"] == "pass" else "failed",
        "output": item_output(item, lang, before_due_date=True),
        "visibility": visibility,
    }
    if not withheld(item):
        return [test]
    details = {"name": f"{item['item']} ({text('ui.details', lang)})", "number": f"{number}.1",
               "status": "failed", "output": item_output(item, lang), "visibility": "after_due_date"}
    return [test, details]


def gradescope_results(entry: dict, lang: str, seconds: float = 0.0, visibility: str = "visible") -> dict:
    """A submission's results.json for Gradescope."""
    if "error" in entry:  # a file that could not be graded: zero, and the one-line reason
        return {"score": 0.0, "output": entry["message"], "visibility": visibility, "tests": [],
                "execution_time": round(seconds)}
    return {
        "score": float(entry["points"]),
        "execution_time": round(seconds or entry.get("seconds", 0.0)),
        "output": f"{text('ui.total', lang)}: {entry['points']}/{entry['max_points']}",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": [test for n, item in enumerate(entry["items"], 1)
                  for test in gradescope_tests(item, n, lang, visibility)],
    }


def prairielearn_results(entry: dict, lang: str) -> dict:
    """A submission's results.json for PrairieLearn's external grader."""
    if "error" in entry:
        return {"gradable": False, "score": 0.0, "message": entry["message"], "tests": []}
    total = entry["max_points"] or 1
    return {
        "gradable": True,
        "score": entry["points"] / total,
        "message": f"{text('ui.total', lang)}: {entry['points']}/{entry['max_points']}",
        "tests": [
            {
                "name": item["item"],
                "points": item["points"],
                "max_points": item["max_points"],
                "message": item_output(item, lang, before_due_date=True),  # PrairieLearn shows it at once
            }
            for item in entry["items"]
        ],
    }


def no_notebook(folder: Path, lang: str) -> dict:
    """The entry for a submission folder without the chapter's notebook."""
    return {"path": str(folder), "error": "bad.missing",
            "message": render(Finding("bad.missing", {"path": str(folder)}), lang)}


def find_submission(folder: Path, chapter: str) -> Path | None:
    """The notebook a platform put in ``folder``: the chapter's file name first, else the
    only notebook there (students rename files)."""
    named = folder / f"{chapter}.ipynb"
    if named.is_file() and not named.is_symlink():
        return named
    found = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return found[0] if len(found) == 1 else None


def canvas_csv(entries: dict[str, dict], chapters: list[str], column) -> str:
    """A Canvas gradebook import: one row per student, one column per chapter
    (``column(chapter)`` names it as the course's assignment), a chapter's best score."""
    scores: dict[str, dict[str, int]] = {}
    for entry in entries.values():
        if "error" in entry or entry.get("chapter") not in chapters:
            scores.setdefault(entry["student"], {})
            continue
        best = scores.setdefault(entry["student"], {})
        best[entry["chapter"]] = max(best.get(entry["chapter"], 0), entry["points"])
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([*CANVAS_FIXED, *(column(c) for c in chapters)])
    for student in sorted(scores):
        writer.writerow([student, "", "", student, "", *(scores[student].get(c, 0) for c in chapters)])
    return buf.getvalue()


# ---------------------------------------------------------------- grading in a container

def grade_folder(folder: Path, chapter: str, lang: str) -> dict:
    """Grade the chapter's notebook found in ``folder``: ``report.as_dict``'s entry."""
    from . import disk_cache
    from .report import as_dict
    from .runner import Limits, grade

    notebook = find_submission(folder, chapter)
    if notebook is None:
        return no_notebook(folder, lang)
    with disk_cache.compiled_programs() as compiled:
        return as_dict(grade(notebook, Limits(jax_cache=compiled), chapter), lang)


def run_gradescope(root: Path, chapter: str, lang: str) -> int:
    """``run_autograder``: grade ``root/submission`` into ``root/results/results.json``."""
    entry = grade_folder(root / "submission", chapter, lang)
    (root / "results").mkdir(parents=True, exist_ok=True)
    write_atomic(root / "results" / "results.json", json.dumps(gradescope_results(entry, lang), ensure_ascii=False))
    return 0


def run_prairielearn(root: Path, chapter: str, lang: str) -> int:
    """The external grader's entry point: ``root/student`` into ``root/results/results.json``."""
    entry = grade_folder(root / "student", chapter, lang)
    (root / "results").mkdir(parents=True, exist_ok=True)
    write_atomic(root / "results" / "results.json", json.dumps(prairielearn_results(entry, lang), ensure_ascii=False))
    return 0


# ---------------------------------------------------------------- exporting the autograder

SOURCE_FILES = ("pyproject.toml", "constraints.txt", "README.md")

GRADESCOPE_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (choose the Ubuntu
# 24.04 base image: Python 3.12).  It installs Tied's grader at the tested versions.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -c /autograder/source/tied/constraints.txt /autograder/source/tied
"""

PRAIRIELEARN_IMAGE = """# The external grader's image: docker build -t <course>/tied-grader . (in this folder),
# then name it in the question's info.json: "externalGradingOptions": {"image":
# "<course>/tied-grader", "entrypoint": "/grade/serverFilesCourse/<this folder>/run.sh"}.
FROM python:3.11-slim
COPY tied /opt/tied
RUN pip install --no-cache-dir -c /opt/tied/constraints.txt /opt/tied
"""

RUN_SCRIPT = """#!/usr/bin/env bash
# {platform} runs this once per submission, in a fresh container.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")"{up} && pwd)"
exec "{python}" -m grader {command} --root "{root}" --chapter {chapter} --lang {lang}
"""


def source_files(source: Path) -> list[tuple[Path, str]]:
    """The package's files to ship: (file, name inside ``tied/``)."""
    found = [(source / name, name) for name in SOURCE_FILES]
    for path in sorted((source / "grader").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            found.append((path, str(path.relative_to(source))))
    return found


def _executable(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    return info


def export_gradescope(chapter: str, lang: str, out: Path, source: Path) -> Path:
    """An autograder zip: ``setup.sh`` and ``run_autograder`` at its root, the package in ``tied/``."""
    run = RUN_SCRIPT.format(platform="Gradescope", up="", python="$ROOT/venv/bin/python", command="gradescope",
                            root="$ROOT", chapter=chapter, lang=lang)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(_executable(zipfile.ZipInfo("setup.sh")), GRADESCOPE_SETUP)
        z.writestr(_executable(zipfile.ZipInfo("run_autograder")), run)
        for path, name in source_files(source):
            z.write(path, f"tied/{name}")
    write_atomic(out, buf.getvalue())
    return out


def export_prairielearn(chapter: str, lang: str, out: Path, source: Path) -> Path:
    """A folder for the course's ``serverFilesCourse``: ``run.sh`` (the external grader's
    entry point, in an image with this package installed) and the package in ``tied/``."""
    run = RUN_SCRIPT.format(platform="PrairieLearn", up="/../..", python="python3", command="prairielearn",
                            root="$ROOT", chapter=chapter, lang=lang)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.sh").write_text(run, encoding="utf-8")
    os.chmod(out / "run.sh", 0o755)
    (out / "Dockerfile").write_text(PRAIRIELEARN_IMAGE, encoding="utf-8")
    for path, name in source_files(source):
        target = out / "tied" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return out

"""The formats of the platforms teachers already use, written from a graded submission.

- **Gradescope** runs ``/autograder/run_autograder`` in one container per submission,
  with the files under ``/autograder/submission`` and the results expected in
  ``/autograder/results/results.json`` (its "Autograder Specifications": a top-level
  ``score`` and ``tests``, each with ``name``, ``score``, ``max_score``, ``status``,
  ``output`` and ``visibility``).
- **PrairieLearn**'s external grader runs one container per submission, for a question
  whose ``info.json`` enables it (``externalGradingOptions``: ``enabled``, ``image``,
  ``serverFilesCourse``, the folders it copies to ``/grade/serverFilesCourse``,
  ``entrypoint`` and ``timeout``, 30 s unless set, at most 600), with the student's
  files under ``/grade/student``, and reads ``/grade/results/results.json``
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
import math
import os
import stat
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

from grader.atomic import write_atomic
from grader.i18n import render, text
from grader.outcome import Finding
from grader.outputs.grading_requirements import requirements

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
    if "error" in entry:  # PrairieLearn shows a submission it cannot grade by its format_errors
        return {"gradable": False, "score": 0.0, "format_errors": [entry["message"]], "tests": []}
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


def best_scores(entries: dict[str, dict], chapters: list[str]) -> dict[str, dict[str, int]]:
    """Each submission folder's best score per chapter (a folder with no graded
    notebook is there, with no score)."""
    scores: dict[str, dict[str, int]] = {}
    for entry in entries.values():
        best = scores.setdefault(entry["student"], {})
        if "error" not in entry and entry.get("chapter") in chapters:
            best[entry["chapter"]] = max(best.get(entry["chapter"], 0), entry["points"])
    return scores


def read_roster(path: Path) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The students of a Canvas gradebook export and its own "Points Possible" row
    (empty when it has none); a ValueError names the columns it lacks."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CANVAS_FIXED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a Canvas gradebook export (no column {', '.join(missing)})")
        rows = [row for row in reader if row["Student"].strip()]
    possible = next((row for row in rows if row["Student"].strip() == "Points Possible"), {})
    return [row for row in rows if row is not possible], possible


def points_differ(roster_possible: dict[str, str], possible: dict[str, int], column) -> list[tuple[str, str, int]]:
    """The assignments whose Points Possible in the course's gradebook differ from the
    chapter's points: (column, the course's value, the chapter's).  Canvas would then
    read a full score as a partial one, or the reverse."""
    differ = []
    for chapter, points in sorted(possible.items()):
        theirs = (roster_possible.get(column(chapter)) or "").strip()
        try:
            same = not theirs or float(theirs) == points
        except ValueError:
            same = False
        if not same:
            differ.append((column(chapter), theirs, points))
    return differ


def roster_match(scores: dict[str, dict[str, int]], roster: list[dict[str, str]]):
    """Each roster row's submission folder, matched by SIS login, SIS user id or Canvas
    user id (a bulk download's files are named by it; case ignored); the folders no row
    claims; the rows without a folder."""
    folders = {name.casefold(): name for name in scores}
    matched = []
    for row in roster:
        keys = [row[k].strip().casefold() for k in ("SIS Login ID", "SIS User ID", "ID") if row[k].strip()]
        matched.append((row, next((folders[k] for k in keys if k in folders), None)))
    claimed = {folder for _, folder in matched}
    return (matched, sorted(set(scores) - claimed),
            [row["Student"] for row, folder in matched if folder is None])


def points_possible(entries: dict[str, dict], chapters: list[str]) -> dict[str, int]:
    """Each chapter's points, as the gradebook records them."""
    return {e["chapter"]: e["max_points"] for e in entries.values()
            if "error" not in e and e.get("chapter") in chapters}


def canvas_csv(entries: dict[str, dict], chapters: list[str], column, roster: list[dict] | None = None):
    """A Canvas gradebook import: the fixed columns, one column per chapter
    (``column(chapter)`` names it as the course's assignment), a "Points Possible" row,
    then one row per student with the chapter's best score.  With a ``roster`` (the
    course's gradebook export) its rows are the students, filled in from their folders;
    without one, each folder is a student named after it.  Returns the CSV text, the
    folders no roster row claims, the students without a submission and the folders
    with a notebook that could not be graded (a broken file: the gradebook says why).
    A cell with no graded notebook behind it is left empty, never 0: Canvas then changes
    nothing, where a 0 would read as a graded zero."""
    scores = best_scores(entries, chapters)
    possible = points_possible(entries, chapters)
    if roster is None:
        roster = [{"Student": s, "ID": "", "SIS User ID": "", "SIS Login ID": s, "Section": ""} for s in sorted(scores)]
    matched, unmatched, absent = roster_match(scores, roster)
    broken = {e["student"] for e in entries.values() if "error" in e}
    ungraded = sorted({folder for _, folder in matched
                       if folder in broken and any(c not in scores[folder] for c in chapters)})
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([*CANVAS_FIXED, *(column(c) for c in chapters)])
    writer.writerow(["Points Possible", "", "", "", "", *(possible.get(c, "") for c in chapters)])
    for row, folder in matched:
        cells = [scores[folder].get(c, "") if folder is not None else "" for c in chapters]
        writer.writerow([*(row[k] for k in CANVAS_FIXED), *cells])
    return buf.getvalue(), unmatched, absent, ungraded


# ---------------------------------------------------------------- results in a container

def write_results(root: Path, platform: str, entry: dict, lang: str) -> None:
    """``root/results/results.json`` in ``platform``'s format ("gradescope" or
    "prairielearn"), from ``report.as_dict``'s entry of the graded notebook."""
    results = gradescope_results(entry, lang) if platform == "gradescope" else prairielearn_results(entry, lang)
    (root / "results").mkdir(parents=True, exist_ok=True)
    write_atomic(root / "results" / "results.json", json.dumps(results, ensure_ascii=False))


# ---------------------------------------------------------------- exporting the autograder

SOURCE_FILES = ("pyproject.toml", "constraints.txt", "README.md")

CPU_WHEELS = "https://download.pytorch.org/whl/cpu"  # PyTorch's own index of CPU-only wheels

GRADESCOPE_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (choose the Ubuntu
# 24.04 base image: Python 3.12).  It installs only what grading {chapter} needs, at the
# tested versions, then locks the image down (lock_down.sh).
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv
python3 -m venv /autograder/venv
{install}
bash /autograder/source/lock_down.sh /autograder
"""

# Run as root after the install, with the autograder's root as its argument: the student's
# notebook will run as an unprivileged user (run_autograder), who must not read the
# secret, the references (the chapter modules, in the source and in the installed
# package) or the grader's caches, nor write the results or the installed grader.
LOCK_DOWN = """#!/usr/bin/env bash
set -euo pipefail
ROOT="$1"
if [ -f "$ROOT/source/secret" ]; then
  install -m 600 "$ROOT/source/secret" "$ROOT/secret"
  rm -f "$ROOT/source/secret"
fi
chmod -R go-rwx "$ROOT/source"
find "$ROOT/venv/" -path '*/site-packages/grader/chapters/*.py' ! -name 'probe.py' \\
  ! -name '__init__.py' -exec chmod 600 {} +
# The compiled files too: Python imports a module from its .pyc without reading the
# .py.  Root's later imports write .pyc files into these root-only folders.
find "$ROOT/venv/" -path '*/site-packages/grader/chapters*' -type d ! -name __pycache__ \\
  -exec mkdir -p {}/__pycache__ \\; -exec chmod 700 {}/__pycache__ \\;
mkdir -p "$ROOT/results"
chmod 755 "$ROOT/results"
"""

GRADESCOPE_RUN = """#!/usr/bin/env bash
# Gradescope runs this once per submission, in a fresh container, as root.  The grader
# stays root; the notebook runs as an unprivileged user, made here if need be.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
STUDENT="${{TIED_STUDENT_USER:-student}}"
id -u "$STUDENT" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$STUDENT"
SECRET=()
if [ -f "$ROOT/secret" ]; then SECRET=(--secret "$ROOT/secret"); fi
mkdir -p "$ROOT/results"
chmod 755 "$ROOT/results"
exec "$ROOT/venv/bin/python" -m grader gradescope --root "$ROOT" --chapter {chapter} --lang {lang} \\
  --user "$STUDENT" ${{SECRET[@]+"${{SECRET[@]}}"}}
"""

PRAIRIELEARN_IMAGE = """# The external grader's image (see README.md): docker build -t {image} image/
# Only what grading {chapter} needs, at the tested versions.
FROM python:3.12-slim
COPY tied /opt/tied
{install}
"""


def install_commands(chapter: str, source: Path, pip: str, package: str) -> list[str]:
    """The pip commands that install what grading ``chapter`` needs (torch from
    PyTorch's CPU wheel index), then the package itself without its dependencies."""
    pypi, cpu_index = requirements(chapter, source)
    constrained = f"{pip} install --no-cache-dir -c {package}/constraints.txt"
    commands = [f"{constrained} --index-url {CPU_WHEELS} {' '.join(cpu_index)}"] if cpu_index else []
    quoted = " ".join(f"'{r}'" if "<" in r else r for r in pypi)
    return commands + [f"{constrained} {quoted}", f"{pip} install --no-cache-dir --no-deps {package}"]

RUN_SCRIPT = """#!/usr/bin/env bash
# {platform} runs this once per submission, in a fresh container.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")"{up} && pwd)"
exec "{python}" -m grader {command} --root "{root}" --chapter {chapter} --lang {lang}{extra}
"""

PRAIRIELEARN_FOLDER = "tied-grader"  # in the course's serverFilesCourse
PRAIRIELEARN_QUESTION = """<pl-question-panel>
  <p>Upload your notebook <code>{chapter}.ipynb</code> from Tied's exercises.</p>
</pl-question-panel>
<pl-file-upload file-names="{chapter}.ipynb"></pl-file-upload>
<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""
PRAIRIELEARN_README = """# Tied's grader for PrairieLearn: chapter {chapter}

Copy `serverFilesCourse/` and `questions/` into your course repository and build the
image from `image/`:

- `serverFilesCourse/{folder}/` holds `run.sh`, the external grader's entry point;
- `questions/{question}/` holds the question: `info.json` (external grading enabled)
  and `question.html` (an upload of `{chapter}.ipynb` and the grader's results);
- `image/` is the image's build context: `docker build -t {image} image/`, then push
  it to Docker Hub under your course's name and put that name in `info.json`'s
  `externalGradingOptions.image` (or export again with `--image`).

PrairieLearn copies `serverFilesCourse/{folder}/` to `/grade/serverFilesCourse/{folder}/`
and the student's file to `/grade/student/`, runs `run.sh`, and reads
`/grade/results/results.json`.  The job's timeout is {timeout} s: a cold grade of the
chapter's solution took {cold:.1f} s on the machine that exported this (no cache of
references or compiled programs, as in a fresh container), times three, plus 30 s;
the notebook itself gets {notebook_timeout} s, so that a student whose notebook runs
too long reads why rather than a killed job.  Messages are in "{lang}".

**What this image does not protect** (unlike the Gradescope export): the notebook runs
as the same user as the grader, next to the chapter modules that compute the
references and next to `/grade/results/`, and there is no teacher's secret, so the
hidden cases are those of the public repository.  A student who writes code to that
end can read the references or write their own `results.json`.  Use it for practice
and formative work; grade what counts with `grader grade --sandbox --secret FILE` or
the Gradescope export.
"""


def cold_grade_seconds(chapter: str, source: Path) -> float:
    """Seconds a cold ``grader check`` of the chapter's solution takes here, as in a fresh
    container: an empty disk cache of references and no JAX compilation cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "grader", "check", str(source / "solutions" / f"{chapter}.ipynb"),
                               "--json"], env={**env, "TIED_CACHE_DIR": cache}, cwd=source, capture_output=True,
                              text=True, timeout=600)
        if done.returncode:
            raise ValueError(f"the cold grade of the {chapter} solution failed: {done.stderr.strip()[-300:]}")
        return time.monotonic() - start


def prairielearn_timeout(cold: float) -> int:
    """The job's timeout from a cold grade: three times as long, plus 30 s, at most
    PrairieLearn's 600 s."""
    return min(600, math.ceil(3 * cold) + 30)


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


def export_gradescope(chapter: str, lang: str, out: Path, source: Path, secret: bytes | None = None) -> Path:
    """An autograder zip: ``setup.sh``, ``lock_down.sh`` and ``run_autograder`` at its
    root, the package in ``tied/``, and the teacher's ``secret`` when given (setup moves
    it where only root reads it)."""
    install = install_commands(chapter, source, "/autograder/venv/bin/pip", "/autograder/source/tied")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(_executable(zipfile.ZipInfo("setup.sh")),
                   GRADESCOPE_SETUP.format(chapter=chapter, install="\n".join(install)))
        z.writestr(_executable(zipfile.ZipInfo("lock_down.sh")), LOCK_DOWN)
        z.writestr(_executable(zipfile.ZipInfo("run_autograder")), GRADESCOPE_RUN.format(chapter=chapter, lang=lang))
        if secret is not None:
            z.writestr("secret", secret)
        for path, name in source_files(source):
            z.write(path, f"tied/{name}")
    write_atomic(out, buf.getvalue(), private=secret is not None)
    return out


def export_prairielearn(chapter: str, lang: str, out: Path, source: Path, image: str,
                        cold: float | None = None) -> Path:
    """A ready course piece (``PRAIRIELEARN_README`` says what goes where): the question
    with external grading enabled, the entry point for ``serverFilesCourse``, the
    image's build context, and a README for the course staff.  ``cold`` is a cold
    grade's seconds, measured here when not given."""
    cold = cold_grade_seconds(chapter, source) if cold is None else cold
    timeout = prairielearn_timeout(cold)
    question = f"tied-{chapter}"
    server = out / "serverFilesCourse" / PRAIRIELEARN_FOLDER
    run = RUN_SCRIPT.format(platform="PrairieLearn", up="/../..", python="python3", command="prairielearn",
                            root="$ROOT", chapter=chapter, lang=lang, extra=f" --timeout {timeout - 15}")
    info = {
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"tied-book/{chapter}")),
        "title": f"Tied: {chapter}",
        "topic": "Tied",
        "tags": ["tied"],
        "type": "v3",
        "gradingMethod": "External",
        "singleVariant": True,
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "serverFilesCourse": [f"{PRAIRIELEARN_FOLDER}/"],
            "entrypoint": f"/grade/serverFilesCourse/{PRAIRIELEARN_FOLDER}/run.sh",
            "timeout": timeout,
        },
    }
    files = {
        server / "run.sh": run,
        out / "questions" / question / "info.json": json.dumps(info, indent=2) + "\n",
        out / "questions" / question / "question.html": PRAIRIELEARN_QUESTION.format(chapter=chapter),
        out / "image" / "Dockerfile": PRAIRIELEARN_IMAGE.format(image=image, chapter=chapter, install="\n".join(
            f"RUN {command}" for command in install_commands(chapter, source, "pip", "/opt/tied"))),
        out / "README.md": PRAIRIELEARN_README.format(
            chapter=chapter, folder=PRAIRIELEARN_FOLDER, question=question, image=image, timeout=timeout,
            cold=cold, notebook_timeout=timeout - 15, lang=lang),
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    os.chmod(server / "run.sh", 0o755)
    for path, name in source_files(source):
        target = out / "image" / "tied" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return out

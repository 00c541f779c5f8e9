"""``grader grade``'s gradebook: one row per item of every submission graded.

``grader grade`` grades the submissions in parallel (``grader.pipeline.batch``) and
adds each result here as it comes.  The gradebook (CSV and JSON) is written first, then rewritten atomically after every
submission, so an interrupted run leaves a valid one; a rerun skips files whose
content is unchanged and that were graded with the same settings (``settings()``:
the sandbox, the secret's hash, the grader's fingerprint, the language).  A
submission the grader crashes on gets a one-line row and the batch goes on.  For a
submission whose checks did not all run (a timeout, a crash), the worker's log is
kept in ``<out>/logs/``.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

from grader.atomic import write_atomic
from grader.outcome import NOT_REACHED, OOM, TIMEOUT
from grader.outputs.report import as_dict, dumps
from grader.pipeline.submission import BadSubmission, read_bytes
from grader.result import GRADER_ERROR, grader_error

FIELDS = ("student", "chapter", "item", "points", "max_points", "verdict", "message", "path")
UNFINISHED = (TIMEOUT, OOM, NOT_REACHED)  # verdicts of items whose checks did not run


# A Canvas bulk download: one flat folder, each file named login_userid_submissionid_name
# (login_LATE_userid_... for a late one). The user id is the roster's "ID" column.
CANVAS_FILE = re.compile(r"^[^_]+_(?:LATE_)?(\d+)_\d+_.+\.ipynb$")
NBGRADER = "submitted"  # nbgrader's tree: submitted/<student>/<assignment>/<notebook>


def student_of(root: Path, notebook: Path) -> str:
    """Who handed ``notebook`` in, under the folder ``root``: the first folder under it
    (nbgrader's ``submitted/<student>/``: the folder after it).  A file in ``root``
    itself is its own student by its Canvas user id when Canvas named it; else, where
    ``root`` has student folders too (a class folder), by its file name; else ``root``
    is one student's folder, and names the student."""
    parts = notebook.relative_to(root).parts
    if parts[0] == NBGRADER and len(parts) > 2:
        return parts[1]
    if len(parts) > 1:
        return parts[0]
    canvas = CANVAS_FILE.match(notebook.name)
    if canvas:
        return canvas.group(1)
    has_folders = any(d.is_dir() and not d.is_symlink() and d.name != ".ipynb_checkpoints" for d in root.iterdir())
    return notebook.stem if has_folders else root.name


def find_notebooks(paths: list[Path]) -> list[tuple[str, Path]]:
    """(student, notebook) pairs (``student_of``; a file named on the command line is
    its folder's).

    Folders are walked without following symbolic links and without opening
    anything: every entry named like a notebook is listed whatever it is (a FIFO, a
    link), and grading gives one that is not a regular file a bad file's row.  A
    link to a folder is listed too, so that the student it stands for gets a row.
    """
    found = []
    for path in paths:
        if not path.is_dir():
            found.append((path.parent.name or ".", path))
            continue
        for folder, dirs, files in os.walk(path):
            here = Path(folder)
            links = {d for d in dirs if (here / d).is_symlink()}
            dirs[:] = sorted(d for d in dirs if d not in links and d != ".ipynb_checkpoints")
            found += [(student_of(path, here / f), here / f) for f in files if f.endswith(".ipynb")]
            found += [(student_of(path, here / d) if here != path else d, here / d) for d in links]
    return sorted(found, key=lambda pair: pair[1])


def empty_folders(paths: list[Path], found: list[tuple[str, Path]]) -> list[str]:
    """The student folders of ``paths`` that hold no notebook: they get no row, so the
    run says so."""
    students = {student for student, _ in found}
    empty = []
    for path in (p for p in paths if p.is_dir()):
        tops = [d for d in sorted(path.iterdir()) if d.is_dir() and not d.is_symlink()
                and d.name not in (".ipynb_checkpoints", NBGRADER)]
        if (path / NBGRADER).is_dir():
            tops += [d for d in sorted((path / NBGRADER).iterdir()) if d.is_dir()]
        empty += [str(d) for d in tops if d.name not in students]
    return empty


def several(entries: dict[str, dict], paths: set[str]) -> list[str]:
    """The students with more than one graded notebook of one chapter among ``paths``
    (each is graded, and the exports keep the best): "student (chapter, n)"."""
    counts = Counter((e["student"], e.get("chapter")) for p, e in entries.items() if p in paths and "error" not in e)
    return [f"{student} ({chapter}, {n})" for (student, chapter), n in sorted(counts.items()) if n > 1]


def settings(sandbox: bool, lang: str) -> dict:
    """What a grade depends on besides the notebook's bytes: a rerun regrades a
    submission graded with other settings.  The secret is named by a hash, never kept."""
    from grader.disk_cache import fingerprint
    from grader.drawing import secret_id

    return {"sandbox": sandbox, "secret": secret_id(), "grader": fingerprint(), "lang": lang}


class Gradebook:
    def __init__(self, out: Path, lang: str, fresh: bool = False, graded_with: dict | None = None,
                 shard: tuple[int, int] | None = None):
        """The gradebook in ``out``: what an earlier run recorded there, unless ``fresh``.
        ``graded_with`` (``settings()``) is recorded with each submission graded now;
        ``shard`` (K, N) in the file, for ``grader merge``."""
        self.out, self.lang = out, lang
        self.graded_with, self.shard = graded_with or {}, shard
        self.limits: dict = {}  # the time and memory the submissions graded now get
        self.json_path, self.csv_path = out / "gradebook.json", out / "gradebook.csv"
        self.entries: dict[str, dict] = {}
        if self.json_path.exists() and not fresh:
            try:
                self.entries = json.loads(self.json_path.read_text(encoding="utf-8"))["submissions"]
            except (ValueError, KeyError, TypeError):
                self.entries = {}

    def is_current(self, path: Path, limits: dict | None = None) -> bool:
        """Is the recorded grade of ``path`` still the one a run would give: the same
        bytes, the same settings, and, where its checks did not all run (a timeout, out
        of memory), no more time or memory than it had (``limits``: "timeout" in seconds,
        "memory" in bytes)?"""
        entry = self.entries.get(str(path))
        if entry is None or entry.get("settings") != self.graded_with:
            return False
        if limits and stopped_by_limits(entry) and any(
                limits[k] > (entry.get("limits") or {}).get(k, 0) for k in limits):
            return False
        try:
            return entry.get("sha256") == hashlib.sha256(read_bytes(path)).hexdigest()
        except BadSubmission:
            return False

    def add(self, student: str, result) -> None:
        try:
            record = as_dict(result, self.lang)
        except Exception as exc:  # a message that cannot be shown is the grader's fault too
            result = grader_error(result.path, exc)
            record = as_dict(result, self.lang)
        if result.bad is not None and result.bad.key != GRADER_ERROR:  # graded: a rerun skips it
            try:
                record["sha256"] = hashlib.sha256(read_bytes(result.path)).hexdigest()
            except BadSubmission:
                record["sha256"] = ""
        self.entries[str(result.path)] = {"student": student, **record, "settings": self.graded_with,
                                          **({"limits": self.limits} if self.limits else {})}
        self.save()
        if result.log and any(v.status in UNFINISHED for v in result.verdicts):
            write_atomic(self.log_path(student, result.path), result.log)

    def log_path(self, student: str, path: Path) -> Path:
        """Where the worker's log of a submission whose checks did not all run is kept."""
        return self.out / "logs" / f"{student}.{path.stem}.log"

    def rows(self):
        for path, e in sorted(self.entries.items()):
            if "error" in e:
                verdict = "grader_error" if e["error"] == GRADER_ERROR else "bad_file"
                yield dict(student=e["student"], chapter="", item="", points=0, max_points=0,
                           verdict=verdict, message=e["message"], path=path)
                continue
            for it in e["items"]:
                yield dict(student=e["student"], chapter=e["chapter"], item=it["item"], points=it["points"],
                           max_points=it["max_points"], verdict=it["verdict"], message=it["message"], path=path)

    def save(self) -> None:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, FIELDS)
        writer.writeheader()
        writer.writerows(self.rows())
        write_atomic(self.csv_path, buf.getvalue())
        header = {"lang": self.lang, "settings": self.graded_with}
        if self.shard:
            header["shard"] = list(self.shard)
        write_atomic(self.json_path, dumps({**header, "submissions": self.entries}))


def stopped_by_limits(entry: dict) -> bool:
    """Did a recorded submission's grading stop at a limit (an item timed out or ran out
    of memory)?"""
    return any(i.get("verdict") in (TIMEOUT, OOM) for i in entry.get("items", []) if isinstance(i, dict))


def recorded_lang(out: Path) -> str:
    """The language a gradebook's messages are in ("" when it does not say)."""
    lang = json.loads((out / "gradebook.json").read_text(encoding="utf-8")).get("lang", "")
    return lang if isinstance(lang, str) else ""


def progress(done: int, total: int, label: str) -> None:
    if sys.stderr.isatty():
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[-40:]:<40}")
        if done == total:
            sys.stderr.write("\n")
    else:
        sys.stderr.write(f"{done}/{total} {label}\n")
    sys.stderr.flush()

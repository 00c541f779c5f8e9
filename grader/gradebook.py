"""``grader grade``: many submissions in parallel, into one gradebook.

The gradebook (CSV and JSON) is rewritten atomically after every submission, so an
interrupted run leaves a valid one; a rerun skips files whose content is unchanged.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from . import disk_cache, runner
from .atomic import write_atomic
from .report import as_dict, dumps
from .submission import BadSubmission, read_bytes

FIELDS = ("student", "chapter", "item", "points", "max_points", "verdict", "message", "path")


def find_notebooks(paths: list[Path]) -> list[tuple[str, Path]]:
    """(student, notebook) pairs: a folder's name is its student; a file's, its parent's."""
    found = []
    for path in paths:
        if path.is_dir():
            for nb in sorted(path.rglob("*.ipynb")):
                if ".ipynb_checkpoints" in nb.parts:
                    continue
                rel = nb.relative_to(path).parts
                found.append((rel[0] if len(rel) > 1 else path.name, nb))
        else:
            found.append((path.parent.name or ".", path))
    return found


class Gradebook:
    def __init__(self, out: Path, lang: str):
        self.out, self.lang = out, lang
        self.json_path, self.csv_path = out / "gradebook.json", out / "gradebook.csv"
        self.entries: dict[str, dict] = {}
        if self.json_path.exists():
            try:
                self.entries = json.loads(self.json_path.read_text(encoding="utf-8"))["submissions"]
            except (ValueError, KeyError, TypeError):
                self.entries = {}

    def is_current(self, path: Path) -> bool:
        entry = self.entries.get(str(path))
        if entry is None:
            return False
        try:
            return entry.get("sha256") == hashlib.sha256(read_bytes(path)).hexdigest()
        except BadSubmission:
            return False

    def add(self, student: str, result) -> None:
        record = as_dict(result, self.lang)
        if result.bad is not None:  # a bad file is still graded: it gets its row
            try:
                record["sha256"] = hashlib.sha256(read_bytes(result.path)).hexdigest()
            except BadSubmission:
                record["sha256"] = ""
        self.entries[str(result.path)] = {"student": student, **record}
        self.save()

    def rows(self):
        for path, e in sorted(self.entries.items()):
            if "error" in e:
                yield dict(student=e["student"], chapter="", item="", points=0, max_points=0,
                           verdict="bad_file", message=e["message"], path=path)
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
        write_atomic(self.json_path, dumps({"submissions": self.entries}))


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


def grade_all(paths: list[Path], out: Path, jobs: int, limits: runner.Limits, lang: str) -> Gradebook:
    book = Gradebook(out, lang)
    todo = [(s, p) for s, p in find_notebooks(paths) if not book.is_current(p)]
    book.save()
    with disk_cache.compiled_programs() as compiled:
        # Share the cores among the kernels that run at once, and compiled programs
        # among all the kernels of this batch (and of earlier ones).
        limits = replace(limits, threads=max(1, (os.cpu_count() or 1) // jobs), jax_cache=compiled)
        run_pool(book, todo, jobs, limits)
    return book


def run_pool(book: Gradebook, todo: list[tuple[str, Path]], jobs: int, limits: runner.Limits) -> None:
    done = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = {pool.submit(runner.grade, p, limits): (s, p) for s, p in todo}
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    student, path = pending.pop(future)
                    book.add(student, future.result())
                    done += 1
                    progress(done, len(todo), str(path))
        except KeyboardInterrupt:
            for future in pending:
                future.cancel()
            runner.stop_all()
            raise

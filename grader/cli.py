"""Command line: ``grader check``, ``grader grade`` and ``grader release``.

Exit codes: 0 when every item passes, 1 when any fails, 2 for usage errors and
files that cannot be graded (with a one-line message, never a traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .i18n import LANGUAGES, detect_lang, render

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def positive(kind):
    def parse(value: str):
        number = kind(value)
        if number <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {value}")
        return number

    return parse


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="grader", description="Grade Tied exercise notebooks.")
    sub = top.add_subparsers(dest="command", required=True, metavar="{check,grade,release}")

    def limits(p):
        p.add_argument("--timeout", type=positive(float), default=120.0, help="seconds per notebook (default 120)")
        p.add_argument("--memory", type=positive(float), default=4.0, help="GiB per notebook (default 4)")
        p.add_argument("--lang", choices=LANGUAGES, default=None, help="message language (default: from the locale)")

    check = sub.add_parser("check", help="grade one notebook and show a report")
    check.add_argument("notebook", type=Path)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--out", type=Path, help="also write the JSON report to this file")
    check.add_argument("--chapter", help="fail unless the notebook is of this chapter")
    limits(check)

    grade = sub.add_parser("grade", help="grade files and folders in parallel into a gradebook")
    grade.add_argument("paths", type=Path, nargs="+")
    grade.add_argument("--jobs", type=positive(int), default=os.cpu_count() or 1)
    grade.add_argument("--out", type=Path, default=Path("gradebook"), help="folder of gradebook.csv/.json")
    limits(grade)

    release = sub.add_parser("release", help="write exercises/ from solutions/")
    release.add_argument("--check", action="store_true", help="fail if exercises/ is out of date")
    release.add_argument("--root", type=Path, default=Path("."))
    return top


def run_check(args) -> int:
    from . import disk_cache
    from .atomic import write_atomic
    from .report import as_dict, dumps, table
    from .runner import Limits, grade

    with disk_cache.compiled_programs() as compiled:
        limits = Limits(args.timeout, int(args.memory * 2**30), jax_cache=compiled)
        result = grade(args.notebook, limits, args.chapter)
    if result.bad is not None:
        print(render(result.bad, args.lang), file=sys.stderr)
        return EXIT_USAGE
    report = as_dict(result, args.lang)
    if args.out:
        write_atomic(args.out, dumps(report))
    print(dumps(report) if args.json else table(result, args.lang), end="" if args.json else "\n")
    return EXIT_OK if result.passed else EXIT_FAIL


def run_grade(args) -> int:
    from .gradebook import grade_all
    from .runner import Limits

    try:
        book = grade_all(args.paths, args.out, args.jobs, Limits(args.timeout, int(args.memory * 2**30)), args.lang)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {args.out / 'gradebook.csv'} holds the submissions finished so far", file=sys.stderr)
        return 130
    print(f"{book.csv_path}\n{book.json_path}")
    ok = all("error" not in e and e["passed"] for e in book.entries.values())
    return EXIT_OK if ok else EXIT_FAIL


def run_release(args) -> int:
    from .release import MarkerError, release

    try:
        differ = release(args.root, check=args.check)
    except (MarkerError, OSError) as exc:
        print(f"grader release: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.check and differ:
        print("out of date (run 'grader release'): " + ", ".join(differ), file=sys.stderr)
        return EXIT_FAIL
    for name in differ:
        print(f"wrote {name}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "lang", None) is None:
        args.lang = detect_lang()
    return {"check": run_check, "grade": run_grade, "release": run_release}[args.command](args)

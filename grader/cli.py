"""Command line: ``grader check``, ``grader grade`` and ``grader release``.

Exit codes: 0 when every item passes, 1 when any fails, 2 for usage errors and
files that cannot be graded (with a one-line message, never a traceback), 130
after Ctrl-C (one line, a valid gradebook, no process left).
"""
from __future__ import annotations

from .stopping import Interrupted, catch_ctrl_c, requested

catch_ctrl_c()  # before the other imports: a Ctrl-C during them is a request to stop too

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NoReturn  # noqa: E402

from .i18n import LANGUAGES, detect_lang, render, text  # noqa: E402
from .registry import Finding  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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
    check.add_argument("--keep-log", type=Path, metavar="FILE",
                       help="write the worker's log (pytest's report, errors outside the cells) to FILE")
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


def interrupted(message: str) -> NoReturn:
    """Say so in one line and exit 130 at once.  Every result is saved by now and
    every process killed; a thread that cannot be stopped (one importing a framework
    or computing references) is not waited for, nor is the interpreter's shutdown,
    which took seconds on a loaded machine."""
    print(message, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def crashed(exc: Exception, lang: str) -> int:
    """The grader's own failure, in one line: never a traceback."""
    finding = Finding("common.grader_error", {"type": type(exc).__name__, "message": str(exc)[:200]})
    print(render(finding, lang), file=sys.stderr)
    return EXIT_USAGE


def run_check(args) -> int:
    try:
        return check_notebook(args)
    except Interrupted:
        return interrupted(text("common.interrupted", args.lang))
    except Exception as exc:
        return crashed(exc, args.lang)


def check_notebook(args) -> int:
    from . import disk_cache
    from .atomic import write_atomic
    from .report import as_dict, dumps, table
    from .runner import Limits, grade

    with disk_cache.compiled_programs() as compiled:
        limits = Limits(args.timeout, int(args.memory * 2**30), jax_cache=compiled)
        result = grade(args.notebook, limits, args.chapter)
    if args.keep_log:
        write_atomic(args.keep_log, result.log)
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
    except Interrupted:
        if sys.stderr.isatty():  # after the progress bar
            print(file=sys.stderr)
        return interrupted(text("common.interrupted_batch", args.lang, path=args.out / "gradebook.csv"))
    except Exception as exc:
        return crashed(exc, args.lang)
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
    if args.command == "release":  # quick, and writes no gradebook: Ctrl-C stops it as usual
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if requested():
            return EXIT_INTERRUPTED
    # check and grade stop at their first safe point after a Ctrl-C, even one pressed
    # during the imports: grade writes its (empty) gradebook first.
    return {"check": run_check, "grade": run_grade, "release": run_release}[args.command](args)

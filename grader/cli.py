"""Command line: ``grader check``, ``grade``, ``merge``, ``report``, ``feedback``, ``export``,
``release``, and the platforms' entry points ``gradescope`` and ``prairielearn``.

Exit codes: 0 when every item passes, 1 when any fails, 2 for usage errors and
files that cannot be graded (with a one-line message, never a traceback), 130
after Ctrl-C (one line, a valid gradebook, no process left).
"""
from __future__ import annotations

from grader.stopping import Interrupted, catch_ctrl_c, requested

catch_ctrl_c()  # before the other imports: a Ctrl-C during them is a request to stop too

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NoReturn  # noqa: E402

from grader.i18n import LANGUAGES, detect_lang, language_code, render, text, unknown_language  # noqa: E402
from grader.outcome import Finding  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CLOSED_PIPE = 128 + 13  # as a shell reports a command that SIGPIPE ended
INBOXES = (("gradescope", "submission"), ("prairielearn", "student"))  # where each platform puts the notebook


def positive(kind):
    def parse(value: str):
        try:
            number = kind(value)
        except ValueError:  # argparse would say "invalid parse value"
            raise argparse.ArgumentTypeError(f"invalid number: {value!r}") from None
        if number <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {value}")
        return number

    return parse


def chapter_argument(value: str) -> str:
    """A chapter's id, or the one line naming the choices."""
    from grader.chapters import chapters

    if value not in chapters():
        raise argparse.ArgumentTypeError(f"unknown chapter {value}, choose from {', '.join(chapters())}")
    return value


class UsageError(Exception):
    """What argparse would print before exiting 2, raised for ``main`` to print."""

    def __init__(self, parser: argparse.ArgumentParser, message: str):
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def lang_argument(value: str) -> str:
    """``--lang``'s value: our codes in any case ("ES" is es); "kr" asks "did you mean ko?"."""
    code = language_code(value)
    if code is None:
        key, params = unknown_language(value)
        raise argparse.ArgumentTypeError(text(key, detect_lang(), **params))
    return code


def parser() -> argparse.ArgumentParser:
    top = Parser(prog="grader", description="Grade Tied exercise notebooks.")
    sub = top.add_subparsers(dest="command", required=True,
                             metavar="{check,grade,merge,report,feedback,export,release,gradescope,prairielearn}")

    def language(p):
        p.add_argument("--lang", type=lang_argument, choices=LANGUAGES, default=None,
                       help="message language (default: from the locale)")

    def secret(p):
        p.add_argument("--secret", type=Path, metavar="FILE",
                       help="a teacher's secret that seeds the hidden cases (or set TIED_SECRET)")

    def limits(p):
        p.add_argument("--timeout", type=positive(float), default=120.0,
                       help="seconds per notebook (default 120); a cell or an item's checks still running after "
                            "half of it (after a first one, half of what is left) is stopped, and the rest goes on")
        p.add_argument("--memory", type=positive(float), default=4.0, help="GiB per notebook (default 4)")
        p.add_argument("--sandbox", action="store_true",
                       help="run each notebook in its own namespaces and cgroups (needs bubblewrap)")
        language(p)
        secret(p)

    check = sub.add_parser("check", help="grade one notebook and show a report")
    check.add_argument("notebook", type=Path)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--out", type=Path, help="also write the JSON report to this file")
    check.add_argument("--chapter", type=chapter_argument, help="fail unless the notebook is of this chapter")
    check.add_argument("--keep-log", type=Path, metavar="FILE",
                       help="write the worker's log (pytest's report, errors outside the cells) to FILE")
    limits(check)

    grade = sub.add_parser("grade", help="grade files and folders in parallel into a gradebook")
    grade.add_argument("paths", type=Path, nargs="+")
    grade.add_argument("--jobs", type=positive(int), default=os.cpu_count() or 1,
                       help="notebooks graded at once, each in its own kernel (default: the number of CPUs)")
    grade.add_argument("--out", type=Path, default=Path("gradebook"),
                       help="folder where gradebook.csv and gradebook.json are written (default: ./gradebook)")
    grade.add_argument("--shard", metavar="K/N", help="grade only share K of N of the submissions (a cluster job)")
    grade.add_argument("--force", action="store_true",
                       help="grade every notebook again, even those the gradebook holds unchanged")
    grade.add_argument("--regrade", metavar="STUDENT", action="append", default=[],
                       help="grade this student's notebooks again (a folder name, or a notebook's path); repeatable")
    limits(grade)

    merge = sub.add_parser("merge", help="join the gradebooks of shards into one")
    merge.add_argument("out", type=Path, help="folder of the merged gradebook")
    merge.add_argument("shards", type=Path, nargs="+", help="folders of the shards' gradebooks")
    language(merge)

    report = sub.add_parser("report", help="write an offline HTML page about a graded class")
    report.add_argument("gradebook", type=Path, help="folder of gradebook.json")
    report.add_argument("--out", type=Path, default=Path("report.html"),
                        help="the page to write (default: report.html)")
    language(report)

    feedback = sub.add_parser("feedback", help="write one offline HTML page of feedback per student")
    feedback.add_argument("gradebook", type=Path, help="folder of gradebook.json")
    feedback.add_argument("--out", type=Path, default=Path("feedback"),
                          help="folder of the pages, one per student (default: ./feedback)")
    feedback.add_argument("--lang", type=lang_argument, choices=LANGUAGES, default=None, dest="page_lang",
                          help="the pages' language (default: the gradebook's)")
    feedback.add_argument("--book", metavar="URL", default="",
                          help="the published book's address: each page links to URL/book/<chapter>.html "
                               "(default: no link)")

    export = sub.add_parser("export", help="write what Gradescope, PrairieLearn or Canvas take")
    formats = export.add_subparsers(dest="format", required=True, metavar="{gradescope,prairielearn,canvas}")
    for name, out, what in (("gradescope", "autograder.zip", "an autograder zip"),
                            ("prairielearn", "tied-prairielearn", "a course piece: question, entry point, image")):
        platform = formats.add_parser(name, help=what)
        platform.add_argument("chapter")
        platform.add_argument("--out", type=Path, default=Path(out), help=f"where to write it (default: {out})")
        language(platform)
        if name == "gradescope":
            platform.add_argument("--secret", type=Path, dest="export_secret",
                                  help="the teacher's secret file, for the hidden cases (only the grader reads it)")
        if name == "prairielearn":
            platform.add_argument("--image", default="tied/grader",
                                  help="the image's name on Docker Hub, for info.json (default tied/grader)")
    canvas = formats.add_parser("canvas", help="a gradebook import CSV")
    canvas.add_argument("--gradebook", type=Path, default=Path("gradebook"),
                        help="folder of gradebook.json, as grader grade --out wrote it (default: ./gradebook)")
    canvas.add_argument("--out", type=Path, default=Path("canvas.csv"), help="the CSV to write (default: canvas.csv)")
    canvas.add_argument("--column", default="Tied {chapter}", help="assignment column name (default 'Tied {chapter}')")
    canvas.add_argument("--roster", type=Path, help="the course's Canvas gradebook export (CSV), to match students")
    language(canvas)

    for name, inbox in INBOXES:
        entry = sub.add_parser(name, help=f"grade ROOT/{inbox} into ROOT/results/results.json ({name}'s layout)")
        entry.add_argument("--root", type=Path, required=True)
        entry.add_argument("--chapter", required=True)
        entry.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default 120)")
        entry.add_argument("--user", default="", help="run the notebook as this unprivileged user (the grader as root)")
        language(entry)
        secret(entry)

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


@contextmanager
def progress_line(message: str):
    """On a terminal, say on stderr what is running while it runs, then clear the line
    (a pipe or a file gets nothing: only the report)."""
    shown = sys.stderr.isatty()
    if shown:
        from grader.outputs.report import terminal_columns, width

        columns = terminal_columns() - 1
        while width(message) > columns:  # one line, so that it can be cleared
            message = message[:-2] + "…"
        print(message, end="", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def run_check(args) -> int:
    try:
        return check_notebook(args)
    except Interrupted:
        return interrupted(text("common.interrupted", args.lang))
    except Exception as exc:
        return crashed(exc, args.lang)


def check_notebook(args) -> int:
    from grader import disk_cache
    from grader.atomic import write_atomic
    from grader.outputs.report import as_dict, dumps, table
    from grader.pipeline.runner import grade
    from grader.pipeline.supervise.supervisor import Limits

    with disk_cache.compiled_programs() as compiled, progress_line(
            text("ui.running", args.lang, path=args.notebook, seconds=f"{args.timeout:g}")):
        limits = Limits(args.timeout, int(args.memory * 2**30), jax_cache=compiled, sandbox=args.sandbox)
        result = grade(args.notebook, limits, args.chapter)
    if args.keep_log:
        write_atomic(args.keep_log, result.log)
    if result.bad is not None:
        return usage_error(render(result.bad, args.lang), args.json)
    report = as_dict(result, args.lang)
    if args.out:
        write_atomic(args.out, dumps(report))
    print(dumps(report) if args.json else table(result, args.lang), end="" if args.json else "\n")
    return EXIT_OK if result.passed else EXIT_FAIL


def class_summary(entries: dict[str, dict], paths: set[str], lang: str) -> str:
    """One line per chapter of the class's notebooks in ``paths`` (those graded now and
    those kept): how many were graded, could not be, and the mean and median score."""
    import statistics

    lines = []
    graded = [e for p, e in entries.items() if p in paths and "error" not in e]
    for chapter in sorted({e["chapter"] for e in graded}):
        scores = [e["points"] for e in graded if e["chapter"] == chapter]
        lines.append(text("ui.summary_chapter", lang, chapter=chapter, count=len(scores),
                          mean=f"{statistics.mean(scores):.1f}", median=f"{statistics.median(scores):g}",
                          max_points=next(e["max_points"] for e in graded if e["chapter"] == chapter)))
    bad = sum(1 for p, e in entries.items() if p in paths and "error" in e)
    if bad:
        lines.append(text("ui.summary_not_read", lang, count=bad))
    return "\n".join(lines)


class NotFound(Exception):
    """A command line that names a submission that is not there (said in one line, exit 2)."""


def grade_all(paths: list[Path], out: Path, jobs: int, limits, lang: str, shard: tuple[int, int] | None = None,
              force: bool = False, regrade: tuple[str, ...] = ()):
    """Grade every notebook under ``paths`` (only share K of N with ``shard``) into
    ``out``'s gradebook, which is saved first and after each submission.  A notebook
    the gradebook already holds, unchanged and graded with the same settings, is
    skipped, unless ``force``, or its student (folder) or path is in ``regrade``, or its
    grading stopped at a limit that is now higher.  Each graded submission's line and
    the run's counts go to standard error."""
    from grader.outputs.gradebook import Gradebook, empty_folders, find_notebooks, progress, settings, several
    from grader.outputs.shards import in_shard
    from grader.pipeline.batch import grade_batch

    book = Gradebook(out, lang, graded_with=settings(limits.sandbox, lang), shard=shard)
    book.limits = {"timeout": limits.timeout, "memory": limits.memory}
    book.save()  # first: even a run stopped at once leaves a valid gradebook
    if requested():
        raise Interrupted
    found = find_notebooks(paths)
    mine = [(s, p) for s, p in found if shard is None or in_shard(s, p, shard)]
    asked = set(regrade)
    unknown = sorted(asked - {s for s, _ in mine} - {str(p) for _, p in mine})
    if unknown:
        raise NotFound(text("ui.regrade_unknown", lang, names=", ".join(unknown)))
    todo = [(s, p) for s, p in mine
            if force or s in asked or str(p) in asked or not book.is_current(p, book.limits)]
    skipped = len(mine) - len(todo)

    def record(student: str, path: Path, result, done: int) -> None:
        book.add(student, result)
        progress(done, len(todo), str(path))
        entry = book.entries[str(path)]
        said = (f"{entry['points']}/{entry['max_points']}" if "error" not in entry
                else text("ui.summary_not_graded", lang))
        print(f"{student}  {path}  {said}", file=sys.stderr, flush=True)

    grade_batch(todo, jobs, limits, record)
    print(text("ui.summary_run", lang, graded=len(todo), skipped=skipped), file=sys.stderr)
    print(class_summary(book.entries, {str(p) for _, p in mine}, lang), file=sys.stderr)
    for key, listed in (("ui.layout_empty", empty_folders(paths, found) if shard is None else []),
                        ("ui.layout_several", several(book.entries, {str(p) for _, p in mine}))):
        if listed:
            print(text(key, lang, names="; ".join(listed)), file=sys.stderr)
    return book


def run_grade(args) -> int:
    from grader.outputs.shards import ShardError, parse_shard
    from grader.pipeline.supervise.supervisor import Limits

    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ShardError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    missing = [p for p in args.paths if not p.exists()]
    if missing:  # before anything is written: a mistyped class folder is no student named "."
        print(f"grader grade: {text('common.no_such_path', args.lang, path=missing[0])}", file=sys.stderr)
        return EXIT_USAGE
    limits = Limits(args.timeout, int(args.memory * 2**30), sandbox=args.sandbox)
    try:
        book = grade_all(args.paths, args.out, args.jobs, limits, args.lang, shard, args.force, tuple(args.regrade))
    except NotFound as exc:
        print(f"grader grade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Interrupted:
        if sys.stderr.isatty():  # after the progress bar
            print(file=sys.stderr)
        return interrupted(text("common.interrupted_batch", args.lang, path=args.out / "gradebook.csv"))
    except Exception as exc:
        return crashed(exc, args.lang)
    print(f"{book.csv_path}\n{book.json_path}")
    ok = all("error" not in e and e["passed"] for e in book.entries.values())
    return EXIT_OK if ok else EXIT_FAIL


def run_merge(args) -> int:
    from grader.outputs.gradebook import Gradebook
    from grader.outputs.shards import ShardError, ShardSetError, merged_entries

    try:
        entries, graded_with = merged_entries(args.shards)
    except ShardSetError as exc:
        print(f"grader merge: {text(exc.key, args.lang, **exc.params)}", file=sys.stderr)
        return EXIT_USAGE
    except (ShardError, OSError, ValueError, KeyError) as exc:
        print(f"grader merge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    book = Gradebook(args.out, args.lang, fresh=True, graded_with=graded_with)
    book.entries = entries
    book.save()
    print(f"{book.csv_path}\n{book.json_path}")
    return EXIT_OK


def plain(exc: Exception) -> str:
    """An error as a reader takes it: a file's error as "FILE: reason", never Python's
    "[Errno 2] ..." form."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


def no_gradebook(args, command: str) -> bool:
    """Whether ``--gradebook``/GRADEBOOK holds no gradebook.json (said in one line)."""
    if (args.gradebook / "gradebook.json").is_file():
        return False
    lang = getattr(args, "page_lang", None) or args.lang  # feedback's --lang names its pages' language
    print(f"grader {command}: {text('common.no_gradebook', lang, path=args.gradebook)}", file=sys.stderr)
    return True


def run_report(args) -> int:
    from grader.outputs.class_report import write_report

    if no_gradebook(args, "report"):
        return EXIT_USAGE
    try:
        print(write_report(args.gradebook, args.out, args.lang))
    except (OSError, ValueError, KeyError) as exc:
        print(f"grader report: {args.gradebook / 'gradebook.json'}: {plain(exc)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def run_feedback(args) -> int:
    from grader.outputs.feedback import write_feedback
    from grader.outputs.gradebook import recorded_lang

    if no_gradebook(args, "feedback"):
        return EXIT_USAGE
    try:
        lang = args.page_lang or recorded_lang(args.gradebook) or args.lang
        written = write_feedback(args.gradebook, args.out, lang, args.book)
    except (OSError, ValueError, KeyError) as exc:
        print(f"grader feedback: {args.gradebook / 'gradebook.json'}: {plain(exc)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{args.out}: {len(written)}")
    return EXIT_OK


def run_export(args) -> int:
    import grader.outputs.platforms as platforms
    from grader.atomic import write_atomic
    from grader.chapters import chapters
    from grader.outputs.class_report import load

    source = Path(__file__).resolve().parent.parent  # the checkout: the grader package's folder's parent
    try:
        if args.format == "canvas":
            if no_gradebook(args, "export"):
                return EXIT_USAGE
            entries = load(args.gradebook)
            names = sorted({e["chapter"] for e in entries.values() if "error" not in e})
            roster, roster_possible = platforms.read_roster(args.roster) if args.roster else (None, {})
            column = lambda c: args.column.format(chapter=c)
            table, unmatched, absent, ungraded = platforms.canvas_csv(entries, names, column, roster)
            write_atomic(args.out, table)
            if roster is None:
                print(text("ui.canvas_no_roster", args.lang), file=sys.stderr)
            for key, listed in (("ui.canvas_unmatched", unmatched), ("ui.canvas_absent", absent),
                                ("ui.canvas_ungraded", ungraded)):
                if listed:  # "; " between names: Canvas writes them "Last, First"
                    print(text(key, args.lang, names="; ".join(listed)), file=sys.stderr)
            possible = platforms.points_possible(entries, names)
            for name, theirs, ours in platforms.points_differ(roster_possible, possible, column):
                print(text("ui.canvas_points_differ", args.lang, column=name, theirs=theirs, ours=ours),
                      file=sys.stderr)
        elif args.chapter not in chapters():
            print(f"grader export: no chapter {args.chapter!r} (known: {', '.join(chapters())})", file=sys.stderr)
            return EXIT_USAGE
        elif args.format == "gradescope":
            secret = args.export_secret.read_bytes().strip() if args.export_secret else None
            if secret == b"":
                raise ValueError(f"--secret {args.export_secret}: the file is empty")
            platforms.export_gradescope(args.chapter, args.lang, args.out, source, secret)
        else:
            platforms.export_prairielearn(args.chapter, args.lang, args.out, source, args.image)
    except (OSError, ValueError, KeyError) as exc:
        print(f"grader export: {plain(exc)}", file=sys.stderr)
        return EXIT_USAGE
    print(args.out)
    return EXIT_OK


def run_platform(args) -> int:
    """Grade the chapter's notebook in the platform's inbox into ``results/results.json``."""
    import grader.outputs.platforms as platforms
    from grader.outputs.report import as_dict, table
    from grader.pipeline.batch import grade_alone

    if args.user and os.geteuid() != 0:
        print(f"--user {args.user}: the grader must run as root to run notebooks as another user", file=sys.stderr)
        return EXIT_USAGE
    try:
        folder = args.root / dict(INBOXES)[args.command]
        notebook = platforms.find_submission(folder, args.chapter)
        if notebook is None:
            entry = platforms.no_notebook(folder, args.lang)
            said = entry["message"]
        else:
            result = grade_alone(notebook, args.chapter, args.timeout, args.user)
            entry = as_dict(result, args.lang)
            said = table(result, args.lang) if result.bad is None else entry["message"]
        platforms.write_results(args.root, args.command, entry, args.lang)
        print(said)  # the platform's log of the run, which the instructor reads
        return EXIT_OK
    except Interrupted:
        return interrupted(text("common.interrupted", args.lang))
    except Exception as exc:
        return crashed(exc, args.lang)


def use_secret(args) -> str:
    """Seed the hidden cases with the teacher's secret, if any; an error message or "".
    ``TIED_SECRET`` leaves the environment here, so no kernel inherits it."""
    from grader.drawing import use_secret as seed

    secret = os.environ.pop("TIED_SECRET", "").encode()
    if getattr(args, "secret", None):
        try:
            secret = args.secret.read_bytes().strip()
        except OSError as exc:
            return f"--secret {args.secret}: {exc.strerror or exc}"
        if not secret:
            return f"--secret {args.secret}: the file is empty"
    seed(secret)
    return ""


def sandbox_ready(args) -> str:
    """With ``--sandbox``: an error message when it cannot be had."""
    if not getattr(args, "sandbox", False):
        return ""
    from grader.pipeline.supervise.sandbox import SandboxUnavailable, bwrap

    try:
        bwrap()
    except SandboxUnavailable as exc:
        return str(exc)
    return ""


def containment_notice(args) -> None:
    """``check`` and ``grade``: one line on stderr saying what the limits do not count
    where this machine lets the grader make no cgroups (``grader.pipeline.supervise.cgroups``)."""
    if args.command not in ("check", "grade"):
        return
    from grader.pipeline.supervise.cgroups import NOT_COUNTED, JobCgroups

    groups = JobCgroups(1 << 30)
    groups.close()
    if groups.missing():
        print(" ".join(text(NOT_COUNTED[c], args.lang) for c in groups.missing()), file=sys.stderr)


def run_release(args) -> int:
    from grader.authoring.release import MarkerError, release

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


def usage_error(message: str, as_json: bool) -> int:
    """A usage or file error: one line on stderr, or with ``--json`` a JSON object on
    stdout (where a program reading the report looks)."""
    if as_json:
        from grader.outputs.report import dumps

        print(dumps({"error": message, "exit": EXIT_USAGE}), end="")
    else:
        print(message, file=sys.stderr)
    return EXIT_USAGE


def closed_stdout() -> int:
    """The reader of stdout went away: stop quietly, and keep Python's last flush at exit
    from failing on the closed pipe too."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (under a test's capture)
        pass
    return EXIT_CLOSED_PIPE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parser().parse_args(argv)
    except UsageError as exc:
        if "--json" in argv:
            return usage_error(f"{exc.parser.prog}: {exc}", True)
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "lang", None) is None:
        args.lang = detect_lang()
    problem = use_secret(args) or sandbox_ready(args)
    if problem:
        return usage_error(problem, getattr(args, "json", False))
    containment_notice(args)
    if args.command == "release":  # quick, and writes no gradebook: Ctrl-C stops it as usual
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if requested():
            return EXIT_INTERRUPTED
    # check and grade stop at their first safe point after a Ctrl-C, even one pressed
    # during the imports: grade writes its (empty) gradebook first.
    commands = {"check": run_check, "grade": run_grade, "merge": run_merge, "report": run_report,
                "feedback": run_feedback, "export": run_export, "release": run_release,
                "gradescope": run_platform, "prairielearn": run_platform}
    try:
        return commands[args.command](args)
    except BrokenPipeError:  # stdout closed early (``grader check x.ipynb | head -3``)
        return closed_stdout()
    except Exception as exc:  # a bug of the grader's own: one line, never a traceback
        return crashed(exc, args.lang)

"""``check()``: the chapter's checks inside the running notebook.

It runs the very probes and judges that ``grader check`` uses, only in this
process instead of a separate one, so the verdicts agree, and returns the same
``Result`` (a ``CheckResult``): in Jupyter it shows as a panel of static HTML (``grader.selfcheck.panel``, which
nbconvert and GitHub draw too), elsewhere it prints as a table.  The ``notebook``
item is judged from what this kernel holds (``grader.selfcheck.kernel_notebook``).

It is always safe to run: each item's checks stop after ``timeout`` seconds (a
verdict naming the student's line), Ctrl-C ends it with one line, a wrong argument
is one line naming the choices, and a first check that takes more than a second
says what it is doing.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import grader.pipeline.judge.items as judging
from grader import disk_cache
from grader.chapters import chapter_of_item, chapters
from grader.disk_cache import compiled_programs_in_process
from grader.i18n import detect_lang, language_code, text, unknown_language
from grader.outcome import FAIL, NOTEBOOK_ITEM, TIMEOUT, Finding, Verdict
from grader.pipeline.prepare.probe_bundle import run_in_process
from grader.registry import Chapter
from grader.selfcheck.kernel_notebook import (
    TIMED_OUT,
    changed_cell,
    in_kernel_frame,
    notebook_cells,
    notebook_chapter,
    notebook_item,
)
from grader.selfcheck.panel import CheckResult, in_kernel

DEFAULT_TIMEOUT = 60.0  # seconds of one item's checks: a first JIT compilation takes a few
AGAIN = 0.05  # after an item's time is up, each of its remaining cases stops this soon
QUIET = 1.0  # seconds of silence before the check says what it is doing
CHECKED: list[str] = []  # the chapters checked in this kernel so far
BLANK = {"text/html": ""}  # what the "Checking…" line becomes once the verdicts are in


class CheckTimedOut(BaseException):
    """Raised in the student's code when an item's time is up: the probe records it,
    with the line it stopped at, as the case's error (of type ``TIMED_OUT``)."""


@contextlib.contextmanager
def time_limit(seconds: float, stuck: dict, name: str):
    """Interrupt the item ``name`` after ``seconds`` (and each case left after it, at
    once); what escapes the probe is kept in ``stuck``.  Only the main thread can
    take a signal: elsewhere the item runs without a limit."""
    def expire(signum, frame):
        raise CheckTimedOut(f"more than {seconds:g} s")

    try:
        before = signal.signal(signal.SIGALRM, expire)
    except (ValueError, AttributeError):  # not the main thread, or no SIGALRM (Windows)
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds, AGAIN)
    try:
        yield
    except CheckTimedOut:
        stuck[name] = ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def kernel_display(message: str):
    """Show ``message`` in the notebook as an output that can be blanked later (its
    handle), or None outside a Jupyter kernel."""
    if not in_kernel():
        return None
    from IPython.display import display

    return display({"text/plain": message}, raw=True, display_id=True)


@contextlib.contextmanager
def saying_what_it_does(message: str):
    """Say ``message`` if the block takes more than ``QUIET`` seconds; in a notebook the
    line goes once the verdicts are in.  What the student's code prints meanwhile is
    kept out of the way: the verdicts say it.  The block gets a function that says what
    it does now (the item being checked): once the message shows, each such line
    replaces the last in a notebook, and follows it in a terminal."""
    out, shown, lock = sys.stdout, [], threading.Lock()
    now = [message]

    def say() -> None:
        with lock:
            handle = kernel_display(now[0])
            if handle is None:
                print(now[0], file=out, flush=True)
            shown.append(handle)

    def doing(line: str) -> None:
        with lock:
            now[0] = f"{message}\n{line}"
            for handle in shown:
                if handle is None:
                    print(line, file=out, flush=True)
                else:
                    handle.update({"text/plain": now[0]}, raw=True)

    timer = threading.Timer(QUIET, say)
    timer.daemon = True
    timer.start()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield doing
    finally:
        timer.cancel()
        timer.join()
        for handle in shown:
            if handle is not None:
                handle.update(BLANK, raw=True)  # no text: an empty text leaves an empty <pre>


def timed_out(item, facts: list, seconds: float, stuck: dict) -> Verdict | None:
    """The verdict of an item whose checks ran out of time, naming the student's line."""
    lines = [f["error"]["line"] for f in facts
             if isinstance(f, dict) and isinstance(f.get("error"), dict) and f["error"].get("type") == TIMED_OUT]
    if not lines and item.name not in stuck:
        return None
    line = lines[0] if lines else stuck[item.name]
    return Verdict(item.name, 0, item.points, TIMEOUT, Finding(
        "common.timeout_in_check", {"seconds": f"{seconds:g}", "line": line, "more_key": "ui.more_time_kernel"}))


# The items whose checks ran out of time in this kernel, by (chapter, item): the object
# they checked, the time they had, and the verdict.  A later check() with the same object
# (its cell not run again) and no more time gives that verdict at once, instead of waiting
# the full time again.
TIMED_OUT_BEFORE: dict[tuple[str, str], tuple[object, float, Verdict]] = {}
_MISSING = object()


def remembered(ch: Chapter, namespace: dict, seconds: float) -> dict[str, Verdict]:
    """The remembered timeouts that still hold: same object, no more time given."""
    found = {}
    for item in ch.items:
        before = TIMED_OUT_BEFORE.get((ch.id, item.name))
        if before is not None and namespace.get(item.target, _MISSING) is before[0] and seconds <= before[1]:
            found[item.name] = before[2]
    return found


def remember(ch: Chapter, item, namespace: dict, seconds: float, verdict: Verdict) -> None:
    if verdict.status == TIMEOUT and item.target in namespace:
        TIMED_OUT_BEFORE[(ch.id, item.name)] = (namespace[item.target], seconds, verdict)
    else:
        TIMED_OUT_BEFORE.pop((ch.id, item.name), None)


def judged(ch: Chapter, namespace: dict, only: str | None, seconds: float,
           doing: Callable[[str, int, int], None] = lambda name, n, total: None) -> list[Verdict]:
    """The verdicts; ``doing(item, n, total)`` is told each item as its checks start."""
    stuck: dict[str, str] = {}
    known = remembered(ch, namespace, seconds)
    run = [i.name for i in ch.items if (only is None or only in (i.name, i.target)) and i.name not in known]
    total, started = len(run) + (only is None), []

    def guarded(name: str) -> contextlib.AbstractContextManager:
        if name not in started:  # the notebook item guards each worked example: told once
            started.append(name)
            doing(name, min(len(started), total), total)
        return time_limit(seconds, stuck, name)

    facts = run_in_process(ch, namespace, only, guarded, frozenset(known))
    cells = notebook_cells(namespace)
    found = [] if only else [notebook_item(ch.id, namespace, cells, lambda: guarded(NOTEBOOK_ITEM), seconds)]
    for item in ch.items:
        if only is not None and only not in (item.name, item.target):
            continue
        stale = changed_cell(item.target, namespace, cells)
        if stale is not None:  # the verdicts would be on code no longer in the notebook
            found.append(Verdict(item.name, 0, item.points, FAIL, stale))
            continue
        if item.name in known:  # said as it was, with what runs it again
            before = known[item.name]
            assert before.finding is not None
            again = Finding(before.finding.key, {**before.finding.params, "more_key": "ui.more_time_remembered"})
            found.append(Verdict(item.name, 0, item.points, TIMEOUT, again))
            continue
        record = facts.get(item.name, [])
        verdict = timed_out(item, record, seconds, stuck) or judging.judge_item(ch, item, record, disk_cache)
        remember(ch, item, namespace, seconds, verdict)
        finding = in_kernel_frame(verdict.finding, namespace, cells)
        found.append(verdict if finding is verdict.finding else
                     Verdict(item.name, 0, item.points, verdict.status, finding))
    history = namespace.get("_ih")  # the code this kernel ran, newest last
    sources = [str(s) for s in history] if isinstance(history, list) else []
    return judging.with_dtype_sources(judging.with_stand_in_notes(ch, found, sources))


def namespace_chapter(namespace: dict) -> str | None:
    """The chapter whose exercises this namespace defines, when the notebook file does not
    say (nbconvert, a kernel started by hand): the one chapter with the most of its own
    graded names defined (names two chapters share, such as ``tied_io_embed``, say nothing)."""
    known = chapters()
    owners: dict[str, set[str]] = {}
    for ch in known.values():
        for item in ch.items:
            owners.setdefault(item.target, set()).add(ch.id)
    scores = {ch_id: sum(1 for name, ids in owners.items() if ids == {ch_id} and name in namespace)
              for ch_id in known}
    best = max(scores.values(), default=0)
    found = [ch_id for ch_id, score in scores.items() if score == best]
    return found[0] if best > 0 and len(found) == 1 else None


def this_notebook(namespace: dict, served: tuple[str, str] | None) -> tuple[str, str | None] | None:
    """The chapter of the notebook being run, with its file name where known: the file's
    ``metadata.tied.chapter`` (``served``, from ``notebook_chapter``), else what the
    namespace defines."""
    if served is not None and served[0] in chapters():
        return served
    inferred = namespace_chapter(namespace)
    return (inferred, None) if inferred is not None else None


def _resolve(target, here: str | None):
    """A chapter id, or a graded function/class (or its name) → (chapter, only); a name
    two chapters grade is the one of ``here``, the notebook's chapter, when it has it."""
    known = chapters()
    if isinstance(target, str) and target in known:
        return known[target], None
    name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
    return chapter_of_item(name, prefer=here), name


def defines_none(ch: Chapter, namespace: dict) -> bool:
    """Does the namespace hold none of the names ``ch`` grades?"""
    return not any(item.target in namespace for item in ch.items)


def usage(key: str, **params) -> None:
    """An argument error: one line, never a traceback."""
    print(text(key, params.pop("lang", "en"), **params), file=sys.stderr)


@contextlib.contextmanager
def generators_kept():
    """The kernel's random generators as they were before ``check()``: the probes and the
    worked examples it runs again seed and draw (``torch.manual_seed``), and the
    student's next ``torch.randn`` or ``np.random.rand`` must not depend on a check run."""
    import random

    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch")
    torch_state = torch.random.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        if torch is not None:
            torch.random.set_rng_state(torch_state)


def check(target=None, lang: str | None = None, namespace: dict | None = None, timeout: float = DEFAULT_TIMEOUT):
    """Run a chapter's checks (``check("01_linen")``, or ``check()`` for the notebook's own) or
    one exercise's (``check(tied_io_embed)``, looked up in the notebook's chapter), in ``lang``
    (en, es, ko), each item's for at most ``timeout`` seconds."""
    if lang is not None and language_code(lang) is None:
        key, params = unknown_language(lang)
        return usage(key, **params)
    lang = language_code(lang) or detect_lang()
    if os.environ.get("TIED_GRADING"):
        print(text("ui.graded_outside", lang))
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        return usage("ui.bad_timeout", lang=lang, value=repr(timeout))
    if namespace is None:
        frame = inspect.currentframe()  # check()'s own; its caller's globals are the notebook's
        caller = frame.f_back if frame is not None else None
        namespace = caller.f_globals if caller is not None else {}
    served = notebook_chapter(namespace)
    here = this_notebook(namespace, served)
    if target is None:  # check(): this notebook's chapter
        if here is None:
            return usage("ui.which_chapter", lang=lang, known=", ".join(chapters()))
        target = here[0]
    try:
        ch, only = _resolve(target, here[0] if here else None)
    except KeyError:
        items = sorted({item.target for c in chapters().values() for item in c.items})
        return usage("ui.unknown_chapter", lang=lang, name=repr(target), known=", ".join(chapters()),
                     items=", ".join(items))
    if here is not None and here[0] != ch.id:
        if only is not None:
            return usage("ui.item_of_other_chapter", lang=lang, name=only, chapter=ch.id, notebook=here[0])
        if here[1] is not None:
            return usage("ui.other_chapter", lang=lang, chapter=ch.id, notebook=here[0], path=here[1])
        if defines_none(ch, namespace):
            return usage("ui.other_chapter_defined", lang=lang, chapter=ch.id, notebook=here[0])
    try:
        first = "ui.checking_again" if CHECKED else "ui.checking"
        with saying_what_it_does(text(first, lang, chapter=ch.id)) as doing, compiled_programs_in_process(), \
                generators_kept():
            def item_started(name: str, n: int, total: int) -> None:
                if doing is not None:
                    doing(text("ui.checking_item", lang, item=name, n=n, total=total))

            verdicts = judged(ch, namespace, only, float(timeout), item_started)
        CHECKED.append(ch.id)  # the checks are loaded: the first check's note is said once
    except KeyboardInterrupt:
        return usage("ui.stopped", lang=lang)
    return CheckResult(Path(served[1] if served else "<notebook>"), ch.id, verdicts=verdicts, lang=lang)

"""Step 5 of grading a notebook: its verdicts, from the records the kernel wrote, the
worker's summary and how the worker stopped.  Each item with a record is judged
(``grader.judge``); the others, and the notebook itself, say what stopped them."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from . import expected_outputs, judge
from .cells import named
from .outcome import FAIL, NOT_REACHED, NOTEBOOK_ITEM, OOM, PASS, TIMEOUT, Finding, Verdict
from .registry import Chapter, ErrorPattern

KERNEL_DIED = (ErrorPattern("common.kernel_died", r"KernelDied"),)


def notebook_verdict(cells: list[dict], shown: Sequence[tuple[int, str]] = (),
                     provided: Collection[str] = ()) -> Verdict:
    """Did every cell run?  A stub left alone reads as 'not implemented'.  ``shown``
    names the code cells as the student sees them (``cells.code_cells``); a failing
    line among ``provided`` (the worked examples' lines) is quoted as theirs."""
    failed = [c for c in cells if not c["passed"]]
    if not failed:
        return Verdict(NOTEBOOK_ITEM, 1, 1, PASS)
    first = failed[0]
    error = first.get("error", {"type": "Error", "message": "", "line": ""})
    # Later failures usually follow from the first (a name never defined), so the
    # first one decides: a stub left alone reads as "not implemented".
    finding = judge.classify_error(error, KERNEL_DIED + expected_outputs.ERRORS, cell=first["cell"] + 1)
    if finding.key != expected_outputs.ERRORS[2].key:  # a missing example names the exercise's cell
        finding = named(finding, list(shown))
    if finding.params.get("line") in provided:
        finding = replace(finding, params={**finding.params, "line_label": "ui.example_line"})
    return Verdict(NOTEBOOK_ITEM, 0, 1, FAIL, finding)


def verdicts(ch: Chapter, facts: dict, summary: dict, stopped: str, known: judge.Known,
             timeout_s: float, memory_bytes: int, shown: Sequence[tuple[int, str]] = ()) -> list[Verdict]:
    """Judge each item from its records against ``known``; the others get what stopped
    them, with the limits the worker ran under (``timeout_s``, ``memory_bytes``).

    On a timeout the worker's summary says where the code was stuck, in a cell or in
    an item's checks, and at which line: that verdict quotes it, and says how to give
    it more time.  ``shown`` names the cells (``notebook_verdict``).
    """
    done = {
        item.name: judge.judge_records(ch, item, facts[item.name], known)
        for item in ch.items
        if item.name in facts
    }
    timeout = summary.get("timeout")
    seconds, more = f"{timeout_s:g}", "ui.more_time_terminal"
    if stopped == TIMEOUT or timeout is not None:
        status, finding = TIMEOUT, Finding("common.timeout", {"seconds": seconds, "more_key": more})
    elif stopped == OOM:
        status, finding = OOM, Finding("common.oom", {"gib": f"{memory_bytes / 2**30:g}"})
    elif summary.get("probes") in ("kernel_dead", "not_run"):  # it died before the checks or during them
        status, finding = NOT_REACHED, Finding("common.kernel_died")
    else:  # the checks ran yet left no record, or no summary came back: the notebook broke them
        status, finding = NOT_REACHED, Finding("common.probe_failed")
    found = judge.unreached(ch, done, status, finding)
    cells = summary.get("cells")
    if timeout is not None and timeout["where"] == "checks":
        stuck = next((n for n, v in enumerate(found) if v.status == TIMEOUT), None)
        if stuck is not None:
            found[stuck] = replace(found[stuck], finding=Finding(
                "common.timeout_in_check", {"seconds": seconds, "line": timeout["line"], "more_key": more}))
        return [notebook_verdict(cells or [], shown, expected_outputs.example_lines(ch.id))] + found
    if timeout is not None and timeout["where"] == "cell":
        finding = named(Finding("common.timeout_in_cell", {"seconds": seconds, "cell": timeout["cell"] + 1,
                                                           "line": timeout["line"], "more_key": more}), list(shown))
    if stopped or timeout is not None or cells is None:
        return [Verdict(NOTEBOOK_ITEM, 0, 1, status, finding)] + found
    return [notebook_verdict(cells, shown, expected_outputs.example_lines(ch.id))] + found

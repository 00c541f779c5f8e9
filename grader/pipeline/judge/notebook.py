"""Step 5 of grading a notebook: its verdicts, from the records the kernel wrote, the
worker's summary and how the worker stopped.  Each item with a record is judged
(``grader.pipeline.judge.items``); the others, and the notebook itself, say what stopped them."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import grader.pipeline.judge.items as judging
from grader import expected_outputs
from grader.cells import named
from grader.outcome import FAIL, NOT_REACHED, NOTEBOOK_ITEM, OOM, PASS, TIMEOUT, Finding, Verdict
from grader.registry import Chapter, ErrorPattern

KERNEL_DIED = (ErrorPattern("common.kernel_died", r"KernelDied"),)


def notebook_item_verdict(cells: list[dict], shown: Sequence[tuple[int, str]] = (),
                          provided: Collection[str] = (), chapter_id: str = "") -> Verdict:
    """Did every cell run?  A stub left alone reads as 'not implemented' (its hint the
    chapter's, ``classify_error``).  ``shown`` names the code cells as the student sees
    them (``cells.code_cells``); a failing line among ``provided`` (the worked examples'
    lines) is quoted as theirs."""
    failed = [c for c in cells if not c["passed"]]
    if not failed:
        return Verdict(NOTEBOOK_ITEM, 1, 1, PASS)
    first = failed[0]
    error = first.get("error", {"type": "Error", "message": "", "line": ""})
    # Later failures usually follow from the first (a name never defined), so the
    # first one decides: a stub left alone reads as "not implemented".
    finding = judging.classify_error(error, KERNEL_DIED + expected_outputs.ERRORS, cell=first["cell"] + 1,
                                     chapter_id=chapter_id)
    if finding.key != expected_outputs.ERRORS[2].key:  # a missing example names the exercise's cell
        finding = named(finding, list(shown))
    if finding.params.get("line") in provided:
        finding = replace(finding, params={**finding.params, "line_label": "ui.example_line"})
    return Verdict(NOTEBOOK_ITEM, 0, 1, FAIL, finding)


def judge_notebook(ch: Chapter, facts: dict, summary: dict, stopped: str, known: judging.Known,
             shown: Sequence[tuple[int, str]] = (), *, timeout_s: float, step_s: float,
             memory_bytes: int) -> list[Verdict]:
    """Judge each item from its records against ``known``; the others get what stopped
    them, with the limits the worker ran under (``timeout_s`` for the notebook,
    ``step_s`` for one cell or one item's checks, ``memory_bytes``).

    On a timeout the worker's summary says where the code was stuck, in a cell or in
    an item's checks, and at which line: that verdict quotes it, and says how to give
    it more time.  A cell or an item's checks interrupted at the end of its time (the
    seconds it had come with it: ``step_s``, then half of what was left)
    let the rest go on: only that cell's (the notebook item) or that item's verdict is
    a timeout.  ``shown`` names the cells (``notebook_item_verdict``).
    """
    seconds, more = f"{timeout_s:g}", "ui.more_time_terminal"
    done = {
        item.name: judging.judge_records(ch, item, facts[item.name], known)
        for item in ch.items
        if item.name in facts
    }
    stuck, after = summary.get("stuck", {}), summary.get("stuck_after", {})
    done.update({item.name: Verdict(item.name, 0, item.points, TIMEOUT, Finding(
        "common.timeout_in_check", {"seconds": f"{after.get(item.name, step_s):g}", "line": stuck[item.name],
                                    "more_key": more}))
        for item in ch.items if item.name in stuck and item.name not in done})
    timeout = summary.get("timeout")
    if stopped == TIMEOUT or timeout is not None:
        status, finding = TIMEOUT, Finding("common.timeout", {"seconds": seconds, "more_key": more})
    elif stopped == OOM:
        status, finding = OOM, Finding("common.oom", {"gib": f"{memory_bytes / 2**30:g}"})
    elif summary.get("probes") in ("kernel_dead", "not_run"):  # it died before the checks or during them
        status, finding = NOT_REACHED, Finding("common.kernel_died")
    else:  # the checks ran yet left no record, or no summary came back: the notebook broke them
        status, finding = NOT_REACHED, Finding("common.probe_failed")
    found = judging.unreached(ch, done, status, finding)
    cells = summary.get("cells")
    if timeout is not None and timeout["where"] == "checks":
        names = [v.item for v in found]
        at = names.index(timeout["item"]) if timeout.get("item") in names else next(
            (n for n, v in enumerate(found) if v.status == TIMEOUT and v.item not in stuck), None)
        if at is not None:
            found[at] = replace(found[at], finding=Finding(  # its line was running, not the mistake
                "common.timeout_notebook_in_check", {"seconds": seconds, "line": timeout["line"], "more_key": more,
                                                     "line_label": "ui.running_line"}))
        return [cell_verdict(cells or [], shown, ch.id)] + found
    if timeout is not None and timeout["where"] == "cell":
        finding = cell_timeout(timeout["cell"], timeout["line"], seconds, shown, "common.timeout_notebook_in_cell")
    if stopped or timeout is not None or cells is None:
        return [Verdict(NOTEBOOK_ITEM, 0, 1, status, finding)] + found
    return [cell_verdict(cells, shown, ch.id)] + found


def cell_timeout(cell: int, line: str, seconds: str, shown: Sequence[tuple[int, str]],
                 key: str = "common.timeout_in_cell") -> Finding:
    """Code cell number ``cell`` (from 0) was still running at ``line`` after ``seconds``
    (its own step limit, or with ``key`` the notebook's whole time), named as JupyterLab
    shows it, with how to give it more time."""
    running = {} if key == "common.timeout_in_cell" else {"line_label": "ui.running_line"}  # not the mistake
    return named(Finding(key, {"seconds": seconds, "cell": cell + 1, "line": line,
                               "more_key": "ui.more_time_terminal", **running}), list(shown))


def cell_verdict(cells: list[dict], shown: Sequence[tuple[int, str]], chapter_id: str) -> Verdict:
    """The ``notebook`` item once the notebook has run: a timeout naming the first
    failing cell when the worker interrupted it after ``step`` seconds, else
    ``notebook_item_verdict``."""
    first = next((c for c in cells if not c["passed"]), {})
    if first.get("timed_out"):  # the seconds it had been given
        return Verdict(NOTEBOOK_ITEM, 0, 1, TIMEOUT, cell_timeout(
            first["cell"], first.get("error", {}).get("line", ""), f"{first['timed_out']:g}", shown))
    return notebook_item_verdict(cells, shown, expected_outputs.example_lines(chapter_id), chapter_id)

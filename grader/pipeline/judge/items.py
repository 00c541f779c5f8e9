"""Grader-side half: turn the facts a probe recorded into verdicts.

Every comparison happens here, in the grader's own process, against references the
caller supplies (``Known``: ``grader.disk_cache`` computes and keeps them); the
student's kernel only ever supplies raw values.  Facts and references in, verdicts
out: nothing here reads a file or a catalog.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from grader.expected_outputs import given_lines, stub_hint
from grader.kernel.runtime import decode
from grader.outcome import FAIL, NOTEBOOK_ITEM, PASS, Finding, Verdict
from grader.registry import Case, Chapter, ErrorPattern, Item


class Known(Protocol):
    """Where an item's cases and their reference values come from (``grader.disk_cache``)."""

    def cases(self, chapter_id: str, item_name: str) -> Sequence[Case]: ...

    def references(self, chapter_id: str, item_name: str) -> Sequence: ...


COMMON_ERRORS = (
    ErrorPattern("common.not_implemented", r"NotImplementedError"),
    ErrorPattern("common.missing", r"NameError", r"name '(?P<name>[^']*)' is not defined in the notebook$"),
    ErrorPattern("common.missing_close", r"NameError",
                 r"name '(?P<name>[^']*)' is not defined in the notebook; did you mean '(?P<close>[^']*)'\?"),
)


def own_line(error: dict, given: Collection[str] = ()) -> dict:
    """``error`` with the student's own line: the innermost of the cells' lines on the
    way to it (``lines``, innermost last) that is not code the notebook gives
    (``given``), with the given line that raised as context; else as it came."""
    lines = error.get("lines")
    error = {key: value for key, value in error.items() if key != "lines"}
    if error.get("line") not in given or not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        return error
    own = next((line for line in reversed(lines) if line and line not in given), None)
    if own is None:  # only given code on the way: its line is all there is
        return error
    return {**error, "line": own, "context": error["line"], "line_label": "ui.given_line"}


def classify_error(error: dict, patterns: tuple[ErrorPattern, ...], cell: int | None = None,
                   chapter_id: str = "", case: Case | None = None) -> Finding:
    """The finding for an exception; ``cell`` names the notebook cell that raised it.  A
    stub of ``chapter_id`` that raised is named by the function it sits in: its hint is
    the catalog's (``message_key``), in every language, whatever the raise says.  The
    line quoted is the student's own, not the chapter's given code (``own_line``); a
    pattern that also reads the case (``ErrorPattern.fits``) gets ``case``."""
    error = own_line(error, given_lines(chapter_id) if chapter_id else ())
    if COMMON_ERRORS[0].matches(error):  # the stub's hint says more than its line
        return Finding("common.not_implemented", {"message": error["message"], **stub_hint(chapter_id, error)})
    for pattern in patterns:
        if pattern.matches(error, case):
            return Finding(pattern.key, {**error, **pattern.named(error)})
    if error.get("origin") == "probe":  # no cell of the notebook on the way: the grader's own code
        return Finding("common.probe_error", dict(error))
    if cell is not None:
        return Finding("common.cell_error", {"cell": cell, **error})
    return Finding("common.exception", dict(error))


def well_formed(fact) -> bool:
    """A fact is ``{"value": ...}`` or ``{"error": {"type", "message", "line"}}``, nothing else."""
    if not isinstance(fact, dict) or len(fact) != 1:
        return False
    if "value" in fact:
        return True
    error = fact.get("error")
    return isinstance(error, dict) and all(isinstance(error.get(k), str) for k in ("type", "message", "line"))


def bfloat16_slip(value) -> Finding | None:
    """A bfloat16 array anywhere in a record (NumPy loads it as 2-byte void): no exercise
    asks for one, so whichever item it reaches names the dtype, float32 being asked."""
    if isinstance(value, dict):
        return next(filter(None, map(bfloat16_slip, value.values())), None)
    if isinstance(value, list):
        return next(filter(None, map(bfloat16_slip, value)), None)
    if isinstance(value, np.ndarray) and value.dtype.kind == "V" and value.dtype.itemsize == 2:
        return Finding("common.wrong_dtype", {"got": "bfloat16", "expected": "float32"})
    return None


def judge_case(ch: Chapter, item: Item, case: Case, fact: dict, ref) -> Finding | None:
    """The finding for one case, or None when it passes."""
    if "error" in fact:
        return classify_error(fact["error"], COMMON_ERRORS[1:] + item.errors + ch.errors, chapter_id=ch.id,
                              case=case)
    try:
        value = decode(fact["value"])
    except Exception:  # no probe writes an array that does not load: a forged record
        return Finding("common.malformed_record")
    return bfloat16_slip(value) or item.judge(case, value, ref)


def not_judged(exc: Exception) -> Finding:
    """The grader could not decide (its own fault, or a value nobody foresaw): the reason."""
    return Finding("common.not_judged", {"reason": f"{type(exc).__name__}: {exc}"[:200]})


def judge_item(ch: Chapter, item: Item, facts, known: Known) -> Verdict:
    """Verdict of one item from its facts: exactly one well-formed fact per case, in case order,
    each judged against the case's reference from ``known``.

    The facts come from the student's kernel: a missing, extra or malformed fact fails
    the item, and nothing a judge, a symptom, a reference or the decoding raises stops
    the grading: the item is then "could not be judged", with the reason.
    """
    def fail(finding: Finding, case: Case | None = None) -> Verdict:
        if case is None:  # the whole record is wrong, not one case
            return Verdict(item.name, 0, item.points, FAIL, finding)
        return Verdict(item.name, 0, item.points, FAIL, finding, case.label, case.shown, case.visibility)

    try:
        item_cases = known.cases(ch.id, item.name)
        if not isinstance(facts, list) or len(facts) != len(item_cases):
            return fail(Finding("common.bad_record", {"count": len(facts) if isinstance(facts, list) else 0,
                                                      "expected": len(item_cases)}))
        if not all(map(well_formed, facts)):
            return fail(Finding("common.malformed_record"))
        refs = known.references(ch.id, item.name)
    except Exception as exc:  # a reference that cannot be computed is the grader's fault
        return fail(not_judged(exc))
    for case, fact, ref in zip(item_cases, facts, refs):
        try:
            finding = judge_case(ch, item, case, fact, ref)
        except Exception as exc:  # an odd value no judge foresaw: never a crash
            finding = not_judged(exc)
        if finding is not None:
            return fail(finding, case)
    return Verdict(item.name, item.points, item.points, PASS)


def judge_records(ch: Chapter, item: Item, records: list, known: Known) -> Verdict:
    """An item passes only on exactly one record: a second line for it is forged."""
    if len(records) == 1:
        return judge_item(ch, item, records[0], known)
    forged = Finding("common.bad_record", {"count": len(records), "expected": 1})
    return Verdict(item.name, 0, item.points, FAIL, forged)


def unreached(ch: Chapter, done: dict[str, Verdict], status: str, finding: Finding) -> list[Verdict]:
    """Verdicts in chapter order: judged items as they are, the others with ``status``."""
    return [
        done.get(item.name) or Verdict(item.name, 0, item.points, status, finding)
        for item in ch.items
    ]


# The text of an error raised where two dtypes met (PyTorch's words): its line is where
# they met, which is not where the wrong one was made (``with_dtype_sources``).
DTYPES_MET = re.compile(r"same dtype|expected scalar type|dtype \w+ but|(double|float|half|bfloat16) != \w+", re.I)


def with_dtype_sources(verdicts: list[Verdict]) -> list[Verdict]:
    """A line where two dtypes met is not quoted as the student's mistake: the wrong
    dtype was made before, in a frame the traceback no longer holds.  It is named as
    the place they met, with the item found returning a wrong dtype, if one was: where
    the other dtype comes from."""
    slips = [v.item for v in verdicts if v.finding is not None and v.finding.key == "common.wrong_dtype"]

    def met(v: Verdict) -> Verdict:
        if v.finding is None:
            return v
        params = v.finding.params
        if not params.get("line") or params.get("line_label") or not DTYPES_MET.search(str(params.get("message", ""))):
            return v  # no line, or one already named for what it is (the given code's caller, an example's)
        source = next((item for item in slips if item != v.item), "")
        label = "ui.dtypes_met_from" if source else "ui.dtypes_met_line"
        return replace(v, finding=replace(v.finding, params={**params, "line_label": label, "context": source}))
    return [met(v) for v in verdicts]


def refers_to(sources: Sequence[str], target: str, name: str) -> bool:
    """Does the notebook's last definition of ``target`` (a class or function at a cell's
    top level) use ``name``?  True when no definition can be read: the note is then
    given, as before anything is known."""
    import ast

    found = None
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # as source_checks.parse: never raise
            continue
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == target:
                found = node
    if found is None:
        return True
    return any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name
               for n in ast.walk(found))


def with_stand_in_notes(ch: Chapter, verdicts: list[Verdict], sources: Sequence[str]) -> list[Verdict]:
    """An item judged with the book's version of another (``Item.stands_on``) passes
    on its own merits; where that other's items fail and the student's code (its
    ``sources``, the notebook's code cells) uses it, its line says so, since the
    notebook's own cells still run the student's version: unless those cells printed
    what the book's do (the notebook item passed), where the note would not be true."""
    failing = {item.target for item in ch.items for v in verdicts if v.item == item.name and v.status != PASS}
    items = {item.name: item for item in ch.items}
    cells_agree = any(v.item == NOTEBOOK_ITEM and v.status == PASS for v in verdicts)

    def noted(v: Verdict) -> bool:
        item = items.get(v.item)
        return (item is not None and item.stands_on in failing and v.status == PASS and v.finding is None
                and not cells_agree and refers_to(sources, item.target, item.stands_on))

    return [replace(v, finding=Finding("common.passes_with_reference", {"name": items[v.item].stands_on}))
            if noted(v) else v for v in verdicts]

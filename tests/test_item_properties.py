"""What every graded item must have, whatever its chapter.

An item is declared once, in its chapter module: its promises name the finding keys
their checks give (``Promise.keys``), and the stub's hint is the solution marker's
(``grader release`` writes it into the English catalog).  These tests hold that
declaration to the rest of the tree: each promised key is in the three catalogs and is
the diagnosis of at least one pitfall of ``tests/pitfalls/``, and each finding a
chapter's judges can give is promised; the public cases are the worked examples' calls;
odd values reach every judge.  What is particular to one chapter is tested in
``tests/test_chNN_<chapter>.py``.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import sys
import types
from pathlib import Path

import nbformat
import numpy as np
import pytest

import grader.comparisons as comparisons
import grader.pipeline.judge.items as judging
from conftest import chapters
from grader import disk_cache
from grader.authoring.release import hints
from grader.chapters import chapter
from grader.chapters import chapters as declared
from grader.expected_outputs import is_checked
from grader.i18n import LANGUAGES, catalog
from grader.kernel.runtime import decode, encode
from grader.outputs.report import verdict_message
from grader.registry import ErrorPattern, Symptom
from inprocess import solution_facts
from notebooks import solution
from pitfalls import PITFALLS

ITEMS = [(c, item.name) for c in chapters() for item in chapter(c).items]


def is_finding(key: str) -> bool:
    """A catalog message that a judge gives as its finding: a sentence, not a case label,
    a stub's hint, or a phrase that fills another message (``mlm.dimension_heads``)."""
    head, _, tail = key.partition(".")
    text = catalog("en").get(key, "")
    sentence = text.rstrip().endswith((".", "!", "?", ")")) or "{" in text
    return bool(text) and sentence and head not in ("case", "ui", "bad") and not tail.startswith(("hint_", "case_"))


@functools.cache
def shared_judge_keys() -> frozenset[str]:
    """The findings that ``grader/pipeline/judge/items.py`` and ``grader/comparisons.py`` give any item (a
    wrong shape, a value that is no array, a forged record): not a promise of one exercise."""
    trees = [ast.parse(Path(module.__file__).read_text(encoding="utf-8")) for module in (judging, comparisons)]
    return frozenset(node.value for tree in trees for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and is_finding(node.value))


def code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


def finding_keys(obj, found: set[str], seen: dict) -> set[str]:
    """Every finding key that ``obj`` (a judge, a symptom, an error pattern, or what they
    hold) can give: the string constants of the chapter's functions it reaches, through
    their code, the module globals they name, their closures and defaults, and the closures
    of the shared helpers that wrap them (``matches_reference``); a name read from a
    chapter module imported whole (``tied.judge_logits``) counts as a global."""
    if id(obj) in seen:
        return found
    seen[id(obj)] = obj  # kept alive: a freed temporary would lend its id to the next one
    if isinstance(obj, str):
        found |= {obj} if is_finding(obj) else set()
    elif isinstance(obj, tuple | list | set | frozenset):
        for part in obj:
            finding_keys(part, found, seen)
    elif isinstance(obj, dict):
        finding_keys(tuple(obj.values()), found, seen)
    elif isinstance(obj, Symptom | ErrorPattern):
        found.add(obj.key)
        finding_keys(getattr(obj, "test", None), found, seen)
    elif isinstance(obj, functools.partial):
        finding_keys((obj.func, obj.args, obj.keywords), found, seen)
    elif inspect.isfunction(obj):
        if obj.__module__.startswith("grader.chapters"):
            finding_keys(obj.__code__.co_consts, found, seen)
            names = code_names(obj.__code__)
            held = [obj.__globals__[n] for n in names if n in obj.__globals__]
            held += [getattr(module, n) for module in held if inspect.ismodule(module)
                     and module.__name__.startswith("grader.chapters") for n in names if hasattr(module, n)]
            finding_keys(held, found, seen)
            finding_keys(obj.__defaults__ or (), found, seen)
        finding_keys([cell.cell_contents for cell in obj.__closure__ or ()], found, seen)
    elif isinstance(obj, types.CodeType):
        finding_keys(obj.co_consts, found, seen)
    return found


def judged_keys(chapter_id: str) -> set[str]:
    """What the chapter's judges and error patterns can give, the shared findings aside."""
    ch = chapter(chapter_id)
    reached = finding_keys(tuple((item.judge, item.errors) for item in ch.items) + (ch.errors,), set(), {})
    return reached - shared_judge_keys()


def promised_keys(chapter_id: str) -> dict[str, list[str]]:
    """Each key the chapter's promises name, with the items that promise it."""
    found: dict[str, list[str]] = {}
    for item in chapter(chapter_id).items:
        for promise in item.promises:
            for key in promise.keys:
                found.setdefault(key, []).append(item.name)
    return found


def pitfall_keys(chapter_id: str) -> set[str]:
    """Every key some pitfall of the chapter expects the grader to name."""
    found = set()
    for pitfall in PITFALLS:
        if pitfall.chapter == chapter_id:
            for expected in pitfall.expect.values():
                found |= {expected} if isinstance(expected, str) else set(expected)
    return found


@pytest.mark.parametrize("ch_id,name", ITEMS)
def test_every_item_states_its_promises(ch_id, name):
    promises = chapter(ch_id).item(name).promises
    assert promises and all(p.says and p.enforced_by for p in promises), name
    assert any(p.keys for p in promises), f"{name}: no promise names the findings of its check"


def test_the_scan_reaches_every_kind_of_judge():
    """Symptoms held by ``matches_reference``, keys passed in a dict (``judge_logits``),
    error patterns, and findings written in a judge's own code are all found."""
    assert {"gpt_head.grad_sign", "linen.wrong_rows", "pytorch.refused_matching", "pytorch.not_tied",
            "mlm.eps_outside", "frameworks.torch_alias"} <= set().union(*map(judged_keys, declared()))


@pytest.mark.parametrize("ch_id", chapters())
def test_every_finding_a_judge_can_give_is_promised(ch_id):
    missing = judged_keys(ch_id) - set(promised_keys(ch_id))
    assert not missing, f"{ch_id}: findings no promise names (add them to a Promise's keys): {sorted(missing)}"


@pytest.mark.parametrize("ch_id", chapters())
def test_every_promised_key_is_in_the_three_catalogs(ch_id):
    for lang in LANGUAGES:
        missing = set(promised_keys(ch_id)) - set(catalog(lang))
        assert not missing, f"{ch_id}: promised keys missing from the {lang} catalog: {sorted(missing)}"


# Promised findings no wrong solution of tests/pitfalls/ reaches yet, each still to be
# written (issue 26).  The list may only shrink: a key that gets its pitfall must leave it.
NO_PITFALL_YET = {
    "03_pytorch": {"pytorch.untied_by_to", "pytorch.grad_one_path"},
}


@pytest.mark.parametrize("ch_id", chapters())
def test_every_promised_key_is_the_diagnosis_of_a_pitfall(ch_id):
    promised, waiting = promised_keys(ch_id), NO_PITFALL_YET.get(ch_id, set())
    missing = {key: promised[key] for key in set(promised) - pitfall_keys(ch_id) - waiting}
    assert not missing, f"{ch_id}: promised keys no pitfall of tests/pitfalls/ expects: {missing}"
    assert not waiting & pitfall_keys(ch_id), f"{ch_id}: has its pitfall now, drop it from NO_PITFALL_YET"
    assert waiting <= set(promised), f"{ch_id}: no longer promised, drop it from NO_PITFALL_YET"


@pytest.mark.parametrize("ch_id", chapters())
def test_every_stub_hint_is_in_spanish_and_korean(ch_id):
    """``grader release`` writes the English hint from the solution's marker; the two
    translations are written by hand, under the key it names."""
    for key in hints(nbformat.read(solution(ch_id), as_version=4)):
        for lang in ("es", "ko"):
            assert key in catalog(lang), f"{key}: no {lang} translation in grader/messages/{lang}/"


# What the student's code may hand back where a number was asked, each as a change of
# one numeric part of a right record (a logit table, a parameter, a gradient, a loss).
ODD = {
    "NaN": lambda a: np.full(np.shape(a), np.nan, np.float32),
    "wrong shape": lambda a: np.zeros((2, 3, 5), np.float32),
    "0-d": lambda a: np.float32(2.5),
    "complex": lambda a: np.asarray(a).astype(np.complex64),
    "int": lambda a: np.asarray(a).astype(np.int64),
    "None": lambda a: None,
    "huge": lambda a: np.full(np.shape(a), 1e38, np.float32),
}
# Records that hold no number for a student's code to get wrong (only warnings' texts).
NO_NUMBERS = {"TiedEmbed.warnings"}


def numeric_parts(value, path=()):
    """The paths to every number or numeric array in a decoded record."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu" or isinstance(value, float):
        yield path
    elif isinstance(value, dict):
        for key, part in value.items():
            yield from numeric_parts(part, (*path, key))
    elif isinstance(value, list | tuple):
        for index, part in enumerate(value):
            yield from numeric_parts(part, (*path, index))


def replaced(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    return [replaced(part, rest, new) if index == head else part for index, part in enumerate(value)]


def part_at(value, path):
    for step in path:
        value = value[step]
    return value


@pytest.mark.parametrize("ch_id,name", ITEMS)
def test_odd_values_reach_every_judge_and_get_a_message(ch_id, name):
    """Each numeric part of the solution's record for the worked example, made odd, gets a
    verdict from the item's own judge, in every language: never "could not be judged"
    (the judge raised), whatever the probe's record wraps it in."""
    ch = chapter(ch_id)
    item = ch.item(name)
    good = solution_facts(ch_id)[name]
    value = decode(good[0]["value"])
    paths = list(numeric_parts(value))
    assert bool(paths) != (name in NO_NUMBERS), f"{name}: numeric parts {paths}"
    for path in paths:
        for kind, make in ODD.items():
            odd = {"value": encode(replaced(value, path, make(part_at(value, path))))}
            verdict = judging.judge_item(ch, item, [odd] + good[1:], disk_cache)
            assert verdict.finding is None or verdict.finding.key != "common.not_judged", \
                (path, kind, verdict.finding.params)
            for lang in LANGUAGES:
                assert verdict.status == judging.PASS or verdict_message(verdict, lang)


def worked_example_calls(ch_id: str) -> dict[str, list[inspect.BoundArguments]]:
    """Every call that a worked-example cell of the solution makes itself (not through
    another function) to a function of the notebook, by name, its arguments bound."""
    from inprocess import _shell, patched_env

    shell, calls = _shell(), {}
    shell.reset(new_session=False)

    def recorded(name, function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            if sys._getframe(1).f_code.co_name == "<module>":  # the cell's own line
                calls.setdefault(name, []).append(inspect.signature(function).bind(*args, **kwargs))
            return function(*args, **kwargs)
        return call

    with patched_env(TIED_GRADING="1"), contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(solution(ch_id), as_version=4).cells:
            if cell.cell_type != "code":
                continue
            defined = {name: value for name, value in shell.user_ns.items()
                       if inspect.isfunction(value) and not name.startswith("_")}
            if is_checked(cell):
                shell.user_ns.update({name: recorded(name, f) for name, f in defined.items()})
            assert shell.run_cell(cell.source, store_history=False, silent=True).success
            shell.user_ns.update(defined)
    return calls


def same(a, b) -> bool:
    try:
        return type(a) is type(b) or np.asarray(a).shape == np.asarray(b).shape and np.array_equal(a, b)
    except (TypeError, ValueError):
        return False


def numeric(value) -> bool:
    try:
        return np.asarray(value).dtype.kind in "fiub"
    except (TypeError, ValueError, RuntimeError):
        return False


def passed_as_values(case_args: dict, bound: inspect.BoundArguments) -> bool:
    """Whether the probe calls the function with the case's values as they are (not a
    module it builds from them, as tie_weights or linen_to_torch get)."""
    if "args" in case_args:
        return True
    shared = set(case_args) & set(bound.signature.parameters)
    return bool(shared) and all(numeric(bound.arguments.get(k, case_args[k])) for k in shared)


def equal_arguments(case_args: dict, bound: inspect.BoundArguments) -> bool:
    """The case passes what the call passed: its positional ``args``, or the keyword
    arguments the function takes (a probe's own settings, such as a seed, aside)."""
    if "args" in case_args:
        given = list(case_args["args"])
        return len(given) == len(bound.args) and all(
            same(a, b) and np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(given, bound.args))
    shared = set(case_args) & set(bound.arguments)
    return bool(shared) and all(np.array_equal(np.asarray(case_args[k]), np.asarray(bound.arguments[k]))
                                and np.asarray(case_args[k]).shape == np.asarray(bound.arguments[k]).shape
                                for k in shared)


# Functions whose worked example cannot be replayed, with the reason; the test checks they
# still differ, so an entry leaves this list when its notebook is fixed.
NOT_REPLAYED = {
    ("03_pytorch", "tied_logits"): "the notebook draws h and E with an unseeded torch.randn",
}


@pytest.mark.parametrize("ch_id", chapters())
def test_public_cases_are_the_calls_of_the_worked_examples(ch_id):
    """A graded function's public cases are exactly what the solution's worked examples
    pass it: a case copied by hand that drifts from the notebook, or an example call that
    no public case checks, fails here.  (Classes and probe-built cases, such as a module's
    drawn matrix, are held by the chapter's own tests/test_chNN_<chapter>.py.)"""
    calls = worked_example_calls(ch_id)
    checked = 0
    for name, made in calls.items():
        items = [item for item in chapter(ch_id).items if item.target == name]
        publics = [case.args for item in items for case in disk_cache.cases(ch_id, item.name) if case.public]
        if not items or not any(map(passed_as_values, publics, [made[0]] * len(publics))):
            continue
        if (ch_id, name) in NOT_REPLAYED:
            assert not all(any(map(equal_arguments, [c] * len(made), made)) for c in publics), \
                f"{name}: its public cases are the worked example's now: drop it from NOT_REPLAYED"
            checked += 1
            continue
        for case_args in publics:
            assert any(equal_arguments(case_args, bound) for bound in made), \
                f"{name}: a public case that no worked example passes: {case_args!r:.300}"
        for bound in made:
            assert any(equal_arguments(case_args, bound) for case_args in publics), \
                f"{name}: the worked example's call {bound} is no public case"
        checked += 1
    assert calls and (checked or ch_id == "07_three_frameworks"), f"{ch_id}: no worked example call was compared"

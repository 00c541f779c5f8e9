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
from grader.chapters import chapter, chapter_modules
from grader.chapters import chapters as declared
from grader.expected_outputs import is_checked
from grader.i18n import LANGUAGES, catalog
from grader.kernel.runtime import decode, encode
from grader.outputs.report import verdict_message
from grader.registry import ErrorPattern, Symptom
from inprocess import solution_facts
from notebooks import region_names, solution
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
def test_every_solution_region_is_graded(ch_id):
    """A function or class that holds a ``### BEGIN SOLUTION`` region is the ``target`` of
    some item of its chapter: a region added to the solution without its ``Item`` would
    leave the student an exercise that nothing grades."""
    graded = {item.target for item in chapter(ch_id).items}
    for owner in region_names(ch_id):
        symbol = owner.partition(".")[0]
        assert symbol in graded, (
            f"{ch_id}: {owner} holds a solution region in solutions/{ch_id}.ipynb, but no Item of "
            f"the chapter grades {symbol}: add its Item to the Chapter's items in "
            f"{chapter_modules()[ch_id].replace('.', '/')}.py")


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


def arrays(value) -> list[np.ndarray]:
    """The numbers a value holds, as arrays copied now: a tensor, an array, a number or a
    list of numbers itself; a torch module's parameters; a dict's or a list's entries."""
    import torch

    if isinstance(value, torch.nn.Module):
        return [p.detach().numpy().copy() for p in value.parameters()]
    if isinstance(value, torch.Tensor):
        return [value.detach().numpy().copy()]
    if isinstance(value, dict):
        return [a for part in value.values() for a in arrays(part)]
    if numeric(value):
        return [np.array(value)]
    if isinstance(value, list | tuple):
        return [a for part in value for a in arrays(part)]
    return []


def numeric(value) -> bool:
    try:
        return not isinstance(value, str) and np.asarray(value).dtype.kind in "fiub"
    except (TypeError, ValueError, RuntimeError):
        return False


def constructor_arguments(cls: type, args: tuple, kwargs: dict) -> dict:
    """A class's arguments by the names its ``__init__`` gives them (an NNX module's class
    takes ``*args, **kwargs``, its ``__init__`` names them)."""
    bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs).arguments
    return dict(list(bound.items())[1:])


# The frames Python (3.11) gives a comprehension or a generator expression of its own.
COMPREHENSIONS = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}


def made_by_the_cell(frame: types.FrameType) -> bool:
    """Is the caller ``frame`` the cell's own code: the cell's module frame, or a
    comprehension whose enclosing frames reach it without passing through a function
    (``[sample_next(...) for tau in ...]`` is the cell's call; a call inside a notebook
    function is that function's)?"""
    while frame.f_code.co_name in COMPREHENSIONS and frame.f_back is not None:
        frame = frame.f_back
    return frame.f_code.co_name == "<module>"


def worked_example_calls(ch_id: str) -> dict[str, list[dict[str, list[np.ndarray]]]]:
    """Every call that a worked-example cell of the solution makes itself (not through
    another function) to a function or class of the notebook, by name: the arrays each
    argument held when the call began (a module it ties afterwards, as built)."""
    from inprocess import _shell, patched_env

    shell, calls = _shell(), {}
    shell.reset(new_session=False)

    def recorded(name, function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            if made_by_the_cell(sys._getframe(1)):
                made = constructor_arguments(function, args, kwargs) if inspect.isclass(function) else \
                    inspect.signature(function).bind(*args, **kwargs).arguments
                calls.setdefault(name, []).append({k: arrays(v) for k, v in made.items()})
            return function(*args, **kwargs)
        return call

    with patched_env(TIED_GRADING="1"), contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(solution(ch_id), as_version=4).cells:
            if cell.cell_type != "code":
                continue
            defined = {name: value for name, value in shell.user_ns.items()
                       if (inspect.isfunction(value) or inspect.isclass(value) and value.__module__ == "__main__")
                       and not name.startswith("_")}
            if is_checked(cell):
                shell.user_ns.update({name: recorded(name, f) for name, f in defined.items()})
            assert shell.run_cell(cell.source, store_history=False, silent=True).success
            shell.user_ns.update(defined)
    return calls


def equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a, b)


def all_equal(some: list[np.ndarray], others: list[np.ndarray]) -> bool:
    return len(some) == len(others) and all(map(equal, some, others))


def carries(case_args: dict, call: dict[str, list[np.ndarray]]) -> bool:
    """The case holds what the call passed: its positional ``args`` are the call's
    arguments in order; otherwise each argument the case names is equal, and the arrays
    of every other one (a module the probe builds from the case, a checkpoint it
    converts) are among the case's arrays or their transposes (a torch ``Linear``'s weight
    is a Flax ``Dense`` kernel transposed).  A probe's own settings (a seed, the hidden
    vectors fed to a head) are what the call does not pass."""
    if "args" in case_args:
        return len(case_args["args"]) == len(call) and all(
            all_equal(arrays(given), held) for given, held in zip(case_args["args"], call.values()))
    held = [b for part in case_args.values() for a in arrays(part) for b in (a, a.T)]
    return bool(call) and all(
        all_equal(arrays(case_args[name]), passed) if name in case_args
        else all(any(equal(a, b) for b in held) for a in passed)
        for name, passed in call.items())


@pytest.mark.parametrize("ch_id", chapters())
def test_public_cases_are_the_calls_of_the_worked_examples(ch_id):
    """A graded function's or class's public cases are exactly what the solution's worked
    examples pass it, the matrices of a module the probe builds included: a case copied by
    hand that drifts from the notebook, or an example call that no public case holds,
    fails here.  (What a call cannot show, such as the seed a module is drawn with or the
    ids a model is then called on, is held by the chapter's tests/test_chNN_<chapter>.py.)"""
    calls = worked_example_calls(ch_id)
    checked = 0
    for name, made in calls.items():
        items = [item for item in chapter(ch_id).items if item.target == name]
        publics = [case.args for item in items for case in disk_cache.cases(ch_id, item.name) if case.public]
        for case_args in publics:
            assert any(carries(case_args, call) for call in made), \
                f"{name}: a public case that no worked example passes: {case_args!r:.300}"
        for call in made:
            assert not items or any(carries(case_args, call) for case_args in publics), \
                f"{name}: the worked example's call {call!r:.300} is no public case"
        checked += bool(items)
    assert checked, f"{ch_id}: no worked example call was compared"

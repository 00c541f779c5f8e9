"""The three message catalogs hold the same keys, with the same placeholders, and
every key the grader can emit exists in them.

The keys the code can emit are collected from what emits them, not guessed with a
regular expression: the registry's objects (symptoms, error patterns, case labels,
stub hints) and every string constant of ``grader/`` shaped like a key of a known
prefix, found by walking the syntax tree.
"""
import ast
import string

import nbformat
import pytest

import grader.pipeline.judge.items as judging
from grader import disk_cache, expected_outputs, outcome
from grader.chapters import chapters
from grader.i18n import LANGUAGES, catalog
from notebooks import ROOT


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def prefixes() -> set[str]:
    return {key.split(".")[0] for key in catalog("en")}


def keys_in_source() -> set[str]:
    """String constants of grader/ that look like catalog keys of a known prefix."""
    known, found = prefixes(), set()
    for path in (ROOT / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                head, dot, tail = node.value.partition(".")
                if dot and head in known and tail and tail.replace("_", "").isalnum() and tail.islower():
                    found.add(node.value)
    return found


def keys_in_registry() -> set[str]:
    """Every key a chapter declares: the findings its promises name (which hold every
    finding its judges can give: ``tests/test_item_properties.py``), its error patterns
    and its case labels."""
    found = {pattern.key for pattern in judging.COMMON_ERRORS}
    for ch in chapters().values():
        found |= {pattern.key for pattern in ch.errors}
        for item in ch.items:
            found |= {pattern.key for pattern in item.errors}
            found |= {case.label for case in disk_cache.cases(ch.id, item.name)}
            found |= {key for promise in item.promises for key in promise.keys}
    return found


def raised_hints(node: ast.AST, scope: tuple[str, ...] = ()):
    """Each ``raise NotImplementedError("<hint>")`` below ``node``: the function it sits
    in (``TinyLM.__init__``) and the hint."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) \
                and getattr(child.exc.func, "id", "") == "NotImplementedError":
            yield ".".join(scope), child.exc.args[0].value
        named = isinstance(child, ast.ClassDef | ast.FunctionDef)
        yield from raised_hints(child, (*scope, child.name) if named else scope)


def stubs() -> list[tuple[str, str, str]]:
    """Every stub of the exercises: its chapter, the function it sits in, its hint."""
    return [(path.stem, *found) for path in sorted((ROOT / "exercises").glob("*.ipynb"))
            for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
            for found in raised_hints(ast.parse(cell.source))]


def test_catalogs_have_the_same_keys():
    """A stub's hint included: ``grader release`` writes its English entry from the
    solution's marker, and its Spanish and Korean ones are written by hand."""
    keys = {lang: set(catalog(lang)) for lang in LANGUAGES}
    for lang in LANGUAGES:
        assert keys[lang] >= keys["en"], f"missing from grader/messages/{lang}/: {sorted(keys['en'] - keys[lang])}"
        assert keys[lang] <= keys["en"], f"in grader/messages/{lang}/ only: {sorted(keys[lang] - keys['en'])}"


def test_translations_keep_the_placeholders():
    for key, template in catalog("en").items():
        for lang in LANGUAGES:
            assert placeholders(catalog(lang)[key]) == placeholders(template), (lang, key)


def test_no_translation_is_left_in_english():
    for key, template in catalog("en").items():
        if not key.startswith("ui.total"):
            for lang in ("es", "ko"):
                assert catalog(lang)[key] != template, (lang, key)


def test_every_key_in_the_code_is_in_the_catalogs():
    found = keys_in_source()
    assert "common.not_implemented" in found and "bad.json" in found  # the scan sees keys
    assert found - set(catalog("en")) == set()


def test_every_key_the_registry_declares_is_in_the_catalogs():
    found = keys_in_registry()
    assert len(found) > 40  # the scan reaches the chapters' symptoms
    assert found - set(catalog("en")) == set()


@pytest.mark.parametrize("status", [outcome.PASS, outcome.FAIL, outcome.TIMEOUT, outcome.OOM, outcome.NOT_REACHED])
def test_every_status_has_its_word(status):
    assert f"ui.{status}" in catalog("en")


@pytest.mark.parametrize("chapter_id,function,hint", stubs())
def test_every_stub_is_named_by_the_function_it_sits_in(chapter_id, function, hint):
    """The grader names a stub's hint by the function that raised (``stub_hints``, which
    ``grader release`` writes beside the English entry, from the same marker), never by
    its text: the key it records is the one whose English text the stub raises."""
    key = expected_outputs.for_chapter(chapter_id)["stub_hints"].get(function)
    assert key, f"{chapter_id}: {function}: no hint key"
    assert catalog("en")[key] == hint, f"{key}: the stub raises another text than the catalog's"

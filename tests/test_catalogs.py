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
from grader import disk_cache, outcome
from grader.authoring.release import BEGIN
from grader.chapters import chapters
from grader.i18n import LANGUAGES, catalog, hint_key
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


def stub_hints() -> list[str]:
    found = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for line in cell.source.splitlines():
                match = BEGIN.match(line)
                if match and match.group(2).strip():
                    found.append(match.group(2).strip())
    return found


def test_catalogs_have_the_same_keys():
    keys = {lang: set(catalog(lang)) for lang in LANGUAGES}
    for lang in LANGUAGES:
        assert keys[lang] == keys["en"], f"{lang}: {keys[lang] ^ keys['en']}"


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


@pytest.mark.parametrize("hint", stub_hints())
def test_every_stub_hint_is_translated(hint):
    """A stub's hint is looked up by its English text, so the grader can give it in es/ko."""
    assert hint_key(hint), f"no '<chapter>.hint_*' key whose English text is: {hint}"

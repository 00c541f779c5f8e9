"""The three message catalogs hold the same keys, with the same placeholders, and
every key the grader can emit exists in them."""
import re
import string
from pathlib import Path

from grader.i18n import LANGUAGES, catalog
from notebooks import ROOT

KEY = re.compile(r'"((?:common|bad|ui|[a-z]+)\.[a-z_]+)"')


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


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
    used = set()
    for path in (ROOT / "grader").rglob("*.py"):
        used |= set(KEY.findall(path.read_text(encoding="utf-8")))
    known = set(catalog("en"))
    missing = {k for k in used if k.split(".")[0] in {k2.split(".")[0] for k2 in known}} - known
    assert not missing

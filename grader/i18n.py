"""Grader messages in English, Spanish and Korean: one folder of JSON catalogs per language."""
from __future__ import annotations

import json
import locale
import os
from collections import defaultdict
from functools import cache
from importlib import resources

from .registry import Finding

LANGUAGES = ("en", "es", "ko")
DEFAULT = "en"


@cache
def catalog(lang: str) -> dict[str, str]:
    """Every message of ``lang``: one file per key prefix in ``messages/<lang>/``
    (``common``, ``ui``, ``bad`` and one per chapter), merged."""
    merged: dict[str, str] = {}
    folder = resources.files("grader").joinpath(f"messages/{lang}")
    for part in sorted(folder.iterdir(), key=lambda p: p.name):
        if part.name.endswith(".json"):
            merged.update(json.loads(part.read_text(encoding="utf-8")))
    return merged


def detect_lang() -> str:
    """The language of the user's locale when it is one of ours, else English."""
    for var in ("TIED_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            code = value.split("_")[0].split(".")[0].lower()
            return code if code in LANGUAGES else DEFAULT
    code = (locale.getlocale()[0] or "").split("_")[0].lower()
    return code if code in LANGUAGES else DEFAULT


def text(key: str, lang: str = DEFAULT, **params) -> str:
    """The message ``key`` in ``lang``.  An unknown key is shown as it is rather than
    stopping a report (``tests/test_catalogs.py`` finds every key the code can emit)."""
    template = catalog(lang).get(key) or catalog(DEFAULT).get(key, key)
    return template.format_map(defaultdict(lambda: "?", params))


def hint_key(hint: str) -> str:
    """The catalog key of a stub's hint (``<chapter>.hint_<name>``, whose English text is
    the hint that ``grader release`` wrote into the stub), or ``""``."""
    return next((k for k, v in catalog(DEFAULT).items() if ".hint_" in k and v == hint.strip()), "")


def localised(params: dict, lang: str) -> dict:
    """Parameters whose name ends in ``_key`` name a catalog message: also give it in ``lang``
    under the name without the suffix (``message_key`` fills ``{message}``)."""
    out = dict(params)
    for name, value in params.items():
        if name.endswith("_key") and value:
            out[name[: -len("_key")]] = text(value, lang)
    return out


def render(finding: Finding, lang: str = DEFAULT) -> str:
    """A finding as one message, with the student's failing line when there is one."""
    message = text(finding.key, lang, **localised(finding.params, lang))
    line = finding.params.get("line")
    if line:
        message += " — " + text("ui.your_line", lang, line=line)
    return message

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
    template = catalog(lang).get(key) or catalog(DEFAULT)[key]
    return template.format_map(defaultdict(lambda: "?", params))


def render(finding: Finding, lang: str = DEFAULT) -> str:
    """A finding as one message, with the student's failing line when there is one."""
    message = text(finding.key, lang, **finding.params)
    line = finding.params.get("line")
    if line:
        message += " — " + text("ui.your_line", lang, line=line)
    return message

"""Grader messages in English, Spanish and Korean: one folder of JSON catalogs per language."""
from __future__ import annotations

import json
import locale
import os
import re
from collections import defaultdict
from decimal import Decimal
from functools import cache
from importlib import resources

from grader.registry import Finding

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


# What people type for our languages that is not the code: Korea's country code, ...
ALIASES = {"kr": "ko", "kor": "ko", "eng": "en", "spa": "es", "sp": "es"}


def language_code(value) -> str | None:
    """The code of one of our languages as typed, in any case ("ES" is es), or None."""
    code = value.strip().lower() if isinstance(value, str) else None
    return code if code in LANGUAGES else None


def unknown_language(value) -> tuple[str, dict]:
    """The message (key, parameters) for a language we do not have, naming the one
    that was probably meant ("kr": did you mean ko?)."""
    params = {"name": repr(value), "known": ", ".join(LANGUAGES)}
    meant = ALIASES.get(value.strip().lower()) if isinstance(value, str) else None
    return ("ui.unknown_lang_meant", {**params, "meant": meant}) if meant else ("ui.unknown_lang", params)


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
    stopping a report (``tests/test_catalogs.py`` finds every key the code can emit).
    Numbers follow the language's conventions (:func:`localised_numbers`), and in Korean a
    particle written after a placeholder in its two forms, ``{type}을(를)``, becomes the one
    that the value's last sound takes (:func:`korean_particles`)."""
    template = catalog(lang).get(key) or catalog(DEFAULT).get(key, key)
    values = defaultdict(lambda: "?", localised_numbers(template, params, lang))
    if lang == "ko":
        template = korean_particles(template, values)
    return template.format_map(values)


# A number as Python writes it (``str(3)``, ``f"{x:.3g}"``): one that a message shows in prose.
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# A placeholder that code assigns, ``rtol={rtol}`` or ``eps = {got}``: it stays as Python
# writes it, since the student types it that way.
ASSIGNED = re.compile(r"=\s*\{(\w+)\}")


def number(value: int | float | str, lang: str) -> str:
    """``value`` written as ``lang`` writes numbers, by Babel (CLDR): 23,440,896 and 0.25 in
    English and Korean, 23 440 896 and 0,25 in Spanish.  Spanish groups thousands with a
    (no-break) space, as the RAE's *Ortografía* (2010) asks, not with CLDR's point, and leaves
    four-digit numbers whole (2458).  Scientific notation keeps its form (3,2e-07)."""
    digits = str(value)
    if lang == DEFAULT or not NUMBER.fullmatch(digits):
        return digits
    from babel import numbers as babel_numbers  # 20 ms of import, paid only for es and ko
    mantissa, _, exponent = digits.lower().partition("e")
    amount = Decimal(mantissa)
    grouped = not (lang == "es" and abs(amount) < 10_000)
    out = babel_numbers.format_decimal(amount, locale=lang, decimal_quantization=False,
                                       group_separator=grouped)
    if lang == "es":
        out = out.replace(babel_numbers.get_group_symbol("es"), "\u00a0")
    return out + (f"e{exponent}" if exponent else "")


def percent(fraction: float, lang: str, decimals: int = 0) -> str:
    """``fraction`` as a percentage in ``lang``'s pattern: 23.7% in English, 23,7 % in
    Spanish (a no-break space before the sign), 23.7% in Korean."""
    from babel import numbers as babel_numbers
    pattern = babel_numbers.Locale.parse(lang).percent_formats[None].pattern
    if decimals:
        pattern = re.sub(r"0(?=[^0#,.]*$)", "0." + "0" * decimals, pattern, count=1)
    return babel_numbers.format_percent(fraction, pattern, locale=lang)


def localised_numbers(template: str, params: dict, lang: str) -> dict:
    """``params`` with each number (an int, a float, or a string such as ``"0.25"``) written by
    :func:`number` in ``lang``, except where the template assigns it in code."""
    code = set(ASSIGNED.findall(template))
    return {name: number(value, lang)
            if name not in code and isinstance(value, int | float | str) and not isinstance(value, bool)
            else value
            for name, value in params.items()}


# Korean particles that change with the sound before them, written as dictionaries write them:
# the form after a consonant, then the form after a vowel in parentheses.  (으)로 takes 로
# after ㄹ too.  {after a consonant, after a vowel, after ㄹ}
PARTICLES = {"이(가)": ("이", "가", "이"), "은(는)": ("은", "는", "은"), "을(를)": ("을", "를", "을"),
             "과(와)": ("과", "와", "과"), "(으)로": ("으로", "로", "로")}
PLACEHOLDER_PARTICLE = re.compile(r"(\{(\w+)\})(" + "|".join(map(re.escape, PARTICLES)) + ")")
DIGIT_NAMES = "영일이삼사오육칠팔구"
# How a whole number that ends in zeros is read: 10 십, 100 백, 1000 천, 10^4..10^7 만, 10^8 억.
ZERO_UNITS = "십백천만만만만억"
# The name of each Latin letter in Korean, as an acronym's last letter is read (LM: 엘엠).
LETTER_NAMES = dict(zip("abcdefghijklmnopqrstuvwxyz",
                        "이비씨디이프지치이이이엘엠엔오피큐알스티유이유스이지"))
# A word's last letter as English words are borrowed into Korean: name 네임, string 스트링,
# tuple 튜플 (a silent e dropped) end on a consonant; int 인트, Tensor 텐서, embed 임베드
# end on a vowel, as most endings do once Korean adds its ㅡ.
LATIN_ENDINGS = (("ng", "응"), ("m", "음"), ("n", "은"), ("l", "을"))


def final_sound(word: str) -> str | None:
    """The last sound of ``word`` as Korean reads it, as a Hangul syllable whose final
    consonant (or none) decides the particle; None when there is no reading to go by."""
    word = word.rstrip(" )]}>'\"`”’.,;:!")
    if not word:
        return None
    last = word[-1]
    if "가" <= last <= "힣":
        return last
    if last == "%":
        return "트"   # 퍼센트
    if last.isdigit():
        run = re.findall(r"[\d,]*$", word)[0].replace(",", "")
        after_point = word[: len(word) - len(run)].endswith(".")
        zeros = len(run) - len(run.rstrip("0"))
        if zeros and not after_point and run.strip("0") and zeros <= len(ZERO_UNITS):
            return ZERO_UNITS[zeros - 1]
        return DIGIT_NAMES[int(last)]
    if not last.isascii() or not last.isalpha():
        return None
    if last.isupper() and (len(word) == 1 or not word[-2].islower()):
        return LETTER_NAMES[last.lower()]     # an acronym: LM, GPT, V
    lower = word.lower()
    if lower.endswith("e") and len(lower) > 1 and lower[-2] not in "aeiouy":
        lower = lower[:-1]                    # a silent e: None 논, Module 모듈
    return next((sound for ending, sound in LATIN_ENDINGS if lower.endswith(ending)), "어")


def particle(word: str, pair: str) -> str:
    """The form of ``pair`` (such as ``"이(가)"``) that follows ``word``; the pair itself when
    ``word`` gives nothing to go by."""
    sound = final_sound(word)
    if sound is None:
        return pair
    coda = (ord(sound) - ord("가")) % 28
    after_consonant, after_vowel, after_rieul = PARTICLES[pair]
    return after_vowel if coda == 0 else after_rieul if coda == 8 else after_consonant


def korean_particles(template: str, values: dict) -> str:
    """``template`` with each particle written after a placeholder in its two forms replaced
    by the form its value takes: ``{name}이(가)`` with TorchTiedLM gives TorchTiedLM이."""
    return PLACEHOLDER_PARTICLE.sub(
        lambda m: m.group(1) + particle(str(values[m.group(2)]), m.group(3)), template)


def localised(params: dict, lang: str) -> dict:
    """Parameters whose name ends in ``_key`` name a catalog message: also give it in ``lang``
    under the name without the suffix (``message_key`` fills ``{message}``)."""
    out = dict(params)
    for name, value in params.items():
        if name.endswith("_key") and value:
            out[name[: -len("_key")]] = text(value, lang)
    return out


def render(finding: Finding, lang: str = DEFAULT) -> str:
    """A finding as one message, with the failing line when there is one: the
    student's, or one of the worked example's (``line_label``).  A stub's hint, which
    the stub raises in English, is given in ``lang``: the judge named its catalog key
    (``message_key``)."""
    message = text(finding.key, lang, **localised(finding.params, lang))
    line = finding.params.get("line")
    if line:
        message += " — " + text(str(finding.params.get("line_label") or "ui.your_line"), lang, line=line,
                                context=finding.params.get("context", ""))
    return message

"""The English prose of a book page, and the numbers it states.

A page's prose is what a reader reads as English sentences: not the code cells, the Spanish
and Korean notes, the math, inline code, roles (``{glue:text}`` output among them: a glued
number is computed, not written), link targets, or the bibliographic references. To keep
positions, every part that is not prose is blanked out (replaced by spaces), so a ledger
fragment found in the page's text covers exactly the numbers that lie inside it.
"""
from __future__ import annotations

import re

# Fenced blocks whose body is not prose: code, included code, math, raw output.
_CODE_DIRECTIVES = {"code-cell", "literalinclude", "math", "code", "code-block", "raw"}
_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>\S*)[^\n]*$", re.M)
_NOTE_CLASS = re.compile(r"^:class:.*\blang-(es|ko)\b", re.M)

_MASKS = [
    re.compile(r"\A---\n.*?\n---\n", re.S),                     # jupytext front matter
    re.compile(r"\$\$.*?\$\$", re.S),                          # display math
    re.compile(r"(?<![\\$])\$[^$\n]+\$"),                      # inline math
    re.compile(r"\{[\w:-]+\}`[^`]*`"),                         # roles: {glue:text}`x`, {doc}`x`
    re.compile(r"``[^`]+``|`[^`\n]+`"),                       # inline code
    re.compile(r"\]\([^)\s]*\)"),                              # link targets
    re.compile(r"https?://\S+|\S+\.(?:org|com|io|ai)/\S*"),    # bare addresses
    re.compile(r"<!--.*?-->|<[^>\n]+>", re.S),                 # HTML comments and tags
    re.compile(r"^\s*(?:[-*]|\d+\.)\s", re.M),                 # list bullets and numbering
    re.compile(r"^#+\s+(?:\d+[a-z]?(?:\.\d+)*\.?\s)?", re.M),  # heading marks and numbers
    re.compile(r"^\|?(?:\s*:?-+:?\s*\|)+\s*:?-*:?\s*$", re.M),  # table rules
    re.compile(r"^:[\w-]+:.*$", re.M),                         # directive options
]

# Names and versions that hold digits without stating a quantity.
_NAMES = re.compile(
    r"\b(?:GPT|Llama|LLaMA|Gemma|Qwen\d?(?:\.\d)?|BERT|T5|Mini-GPT)[- ]?\d+(?:\.\d+)?B?(?:[- ]\d+B)?\b"
    r"|\bT5 v1\.[01]\b"
    r"|\b(?:chapters?|Chapters?|pages?|sections?|Sections?|Table|table|Tables|tables|"
    r"Figure|figure|Figures|figures|part|equation|volume|step)\s+\d+[a-z]?"
    r"(?:(?:,\s*|\s+and\s+|\s+to\s+|\s*[–-]\s*)\d+[a-z]?)*\b"
    r"|\b\d+-bit\b"
    r"|\b(?:ICLR|EACL|NAACL|NeurIPS|NIPS|JMLR|ACL|EMNLP|ICML|arXiv:?)\s*\d+(?:\.\d+)?\b"
)
_VERSION = re.compile(
    r"\b(?P<lib>torch|PyTorch|jax|JAX|flax|Flax|transformers|optax|safetensors|NumPy|numpy|"
    r"jupyter-book|Jupyter Book)\s+(?P<version>\d+\.\d+(?:\.\d+)?)\b"
)
_YEAR = re.compile(r"^(?:19[5-9]\d|20[0-3]\d)$")

# A number, with its sign, thousands separators, decimals, and what follows it.
NUMBER = re.compile(
    r"(?<![\w.,/-])(?P<value>[−+-]?\d+(?:[,\u202f\u00a0 ]\d{3})*(?:\.\d+)?(?:e[−-]?\d+)?)"
    r"(?P<unit>\s*(?:%|×|x\b|times\b|minutes?\b|seconds?\b|hours?\b|ms\b|s\b|MiB\b|MB\b|"
    r"KiB\b|KB\b|kB\b|GiB\b|GB\b|bytes?\b|B\b|cores?\b|tokens?\b|parameters?\b)?)"
    r"(?![\w])"
)


def _blank(text: str, start: int, end: int) -> str:
    """Replace text[start:end] by spaces, keeping its newlines (and so every position)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _mask_fences(text: str) -> str:
    """Blank code-like fenced blocks and es/ko notes whole; other directives keep their body."""
    pos = 0
    while match := _FENCE.search(text, pos):
        fence, info = match["fence"], match["info"]
        directive = info[1:-1] if info.startswith("{") and info.endswith("}") else None
        close = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}\s*$", re.M)
        end_match = close.search(text, match.end())
        end = end_match.end() if end_match else len(text)
        body = text[match.end():end_match.start() if end_match else end]
        whole = (directive is None and fence[0] != ":") or directive in _CODE_DIRECTIVES or (
            directive == "admonition" and _NOTE_CLASS.search(body))
        if whole:
            text = _blank(text, match.start(), end)
            pos = end
        else:  # blank the opening line only: the body is prose, and its own fences are searched
            text = _blank(text, match.start(), match.end())
            if end_match:
                text = _blank(text, end_match.start(), end_match.end())
            pos = match.end()
    return text


def _mask_references(text: str) -> str:
    """Blank the bibliographic "References" sections (page numbers, volumes, identifiers)."""
    for match in re.finditer(r"^(#+)\s+References\s*$", text, re.M):
        level = len(match[1])
        following = re.compile(rf"^#{{1,{level}}}\s", re.M).search(text, match.end())
        text = _blank(text, match.start(), following.start() if following else len(text))
    return text


def prose(text: str) -> str:
    """The page with everything but its English prose blanked, positions kept."""
    text = _mask_references(_mask_fences(text))
    for pattern in _MASKS + [_NAMES, _VERSION]:
        for match in list(pattern.finditer(text)):
            text = _blank(text, match.start(), match.end())
    return text


def versions(text: str) -> list[tuple[str, str]]:
    """(library, version) for each library version the prose names."""
    masked = _mask_references(_mask_fences(text))
    for pattern in _MASKS:
        for match in list(pattern.finditer(masked)):
            masked = _blank(masked, match.start(), match.end())
    return [(m["lib"], m["version"]) for m in _VERSION.finditer(masked)]


def numbers(text: str) -> list[tuple[int, int, str]]:
    """(start, end, number as written) for each number the page's prose states.

    A number counts when it is a quantity a reader could check: it has decimals or thousands
    separators, or a unit (%, ×, times, minutes, bytes, cores, tokens, parameters...), or it
    is an integer of 10 or more that is not a year. Bare single digits are indices, small
    counts or list numbers, and names and chapter or table numbers are not quantities.
    """
    found = []
    for match in NUMBER.finditer(prose(text)):
        value, unit = match["value"], match["unit"].strip()
        digits = re.sub(r"\D", "", value)
        if (_YEAR.match(value) or re.fullmatch(r"0\d", value)) and not unit:
            continue  # a year, or a chapter's number (01 to 07)
        if not unit and "." not in value and "e" not in value and len(digits) < 2:
            continue
        found.append((match.start(), match.end(), match[0].strip()))
    return found

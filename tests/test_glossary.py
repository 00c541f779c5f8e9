"""The Spanish and Korean notes and the grader's messages use the glossary's one translation
per term.

``book/glossary.md``, the reader's glossary, gives each term a definition, the page that
teaches it and its Spanish and Korean words.  The translators' rules are in the
contributors' guide, ``docs/translation.md``: the everyday words the book spells one way, the
variants ruled out and the short forms.  The test reads the variants, cuts every note and
every catalog message into words, and looks for each variant as a sequence of words, after
removing the glossary's own form (a LayerNorm inside *normalización de capa (LayerNorm)* is
the term, not a slip).  Inline code (`...`) and math ($...$) are not prose: they are removed
first, except a warning's class name, which the rule on *lanzar* needs.
"""
import json
import re
from functools import cache
from pathlib import Path

import pytest

from notebooks import ROOT

BOOK = ROOT / "book"
GLOSSARY = BOOK / "glossary.md"
RULES = ROOT / "docs" / "translation.md"
PAGES = sorted(p for p in BOOK.glob("*.md") if p.stem not in ("glossary", "bibliography"))
CATALOGS = sorted((ROOT / "grader" / "messages").glob("[ek][so]/*.json"))
NOTE = re.compile(r"```\{admonition\} (?:🇪🇸 Nota|🇰🇷 참고)\n:class: [^\n]*\blang-(es|ko)\b[^\n]*\n(.*?)```", re.S)
CODE = re.compile(r"`[^`\n]*`")
MATH = re.compile(r"\$[^$\n]+\$")
WORD = re.compile(r"\w+|[^\w\s]")
GAP = "…"      # up to five words in between
MAX_GAP = 5


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables(path: Path) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table of ``path``, as (header, rows of cells without header and rule)."""
    found, rows = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            rows.append(cells(line))
        elif rows:
            found.append((rows[0], rows[2:]))
            rows = []
    return found


def table(path: Path, *header: str) -> list[list[str]]:
    """The rows of every table of ``path`` whose header starts with ``header``."""
    rows = [row for head, body in tables(path) if head[:len(header)] == list(header) for row in body]
    assert rows, f"{path.relative_to(ROOT)} has no table headed {' | '.join(header)}"
    return rows


def terms() -> list[tuple[str, str, str]]:
    """(English, Spanish, Korean) of every term: the glossary's and the everyday words'."""
    glossary = [(row[0], row[3], row[4]) for row in table(GLOSSARY, "English", "what it means")]
    everyday = [tuple(row) for row in table(RULES, "English", "Español", "한국어")]
    return glossary + everyday


@cache
def rules() -> dict[str, list[tuple[list[str], str, list[list[str]]]]]:
    """language -> [(variant's words, what to use instead, allowed forms' words)]."""
    out: dict[str, list] = {"es": [], "ko": []}
    for lang, variant, instead, allowed in table(RULES, "language", "variant"):
        variant = variant.strip("`")
        kept = [instead] + [a.strip("`") for a in allowed.split(" · ") if a]
        out[lang].append((variant.lower().split(), instead, [tokens(a) for a in kept]))
    return out


@cache
def short_forms() -> dict[str, list[tuple[list[str], list[list[str]]]]]:
    """language -> [(short form's words, the terms' words, the glossary's first)]: the
    short forms' table, whose short form may stand alone only after one of its terms."""
    out: dict[str, list] = {"es": [], "ko": []}
    for lang, short, term, others in table(RULES, "language", "short form"):
        terms = [term] + [o.strip("`") for o in others.split(" · ") if o]
        out[lang].append((short.strip("`").lower().split(), [tokens(t) for t in terms]))
    return out


def word_matches(pattern: str, word: str, lang: str) -> bool:
    if pattern.startswith("*"):
        return word.endswith(pattern[1:])
    if pattern.endswith("*") or lang == "ko":      # a Korean word carries its particle
        return word.startswith(pattern.rstrip("*"))
    return word == pattern


def find(pattern: list[str], words: list[str], lang: str, start: int = 0) -> int | None:
    """The index after the last word of ``pattern`` found from ``start``, or None."""
    if not pattern:
        return start
    head, rest = pattern[0], pattern[1:]
    if head == GAP:
        for skip in range(MAX_GAP + 1):
            end = find(rest, words, lang, start + skip)
            if end is not None:
                return end
        return None
    if start < len(words) and word_matches(head, words[start], lang):
        return find(rest, words, lang, start + 1)
    return None


def without(words: list[str], form: list[str]) -> list[str]:
    """``words`` with every occurrence of the allowed ``form`` taken out (left as a gap)."""
    out, i, n = [], 0, len(form)
    while i < len(words):
        if n and words[i:i + n] == form:
            out.append("·")
            i += n
        else:
            out.append(words[i])
            i += 1
    return out


def prose(text: str) -> str:
    text = CODE.sub(lambda code: " Warning " if code.group(0).rstrip("`").endswith("Warning") else " ", text)
    return MATH.sub(" ", text)


def offences(lang: str, text: str):
    words = tokens(prose(text))
    for short, terms in short_forms()[lang]:
        first = next((i for i in range(len(words)) if find(short, words, lang, i) is not None), None)
        if first is not None and not any(words[first:first + len(term)] == term for term in terms):
            context = " ".join(words[max(0, first - 6):first + 6])
            yield f"{' '.join(short)!r} before its term (first use: {' '.join(terms[0])}) in ...{context}..."
    for pattern, instead, allowed in rules()[lang]:
        checked = words
        for form in allowed:
            checked = without(checked, form)
        for i in range(len(checked)):
            end = find(pattern, checked, lang, i)
            if end is not None:
                context = " ".join(checked[max(0, i - 6):end + 6])
                yield f"{' '.join(checked[i:end])!r} (use {instead}) in ...{context}..."


def notes(page):
    for match in NOTE.finditer(page.read_text(encoding="utf-8")):
        yield match.group(1), match.group(2)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_notes_use_the_glossary_terms(page):
    found = [o for lang, body in notes(page) for o in offences(lang, body)]
    assert not found, f"{page.name}:\n" + "\n".join(found)


def test_catalogs_use_the_glossary_terms():
    found = []
    for path in CATALOGS:
        lang = path.parent.name
        for key, text in json.loads(path.read_text(encoding="utf-8")).items():
            found += [f"{path.relative_to(ROOT)} {key}: {o}" for o in offences(lang, text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_korean_gives_the_english_term_once_per_chapter(page):
    bodies = [body for lang, body in notes(page) if lang == "ko"]
    mentions = [body for body in bodies if re.search("가중치(?:를)? 묶", body)]
    assert mentions, f"{page.name}: no Korean note speaks of 가중치 묶기(weight tying)"
    assert "가중치 묶기(weight tying)" in mentions[0], \
        f"{page.name}: the first Korean note that speaks of tying weights should say 가중치 묶기(weight tying)"
    later = sum(body.count("(weight tying)") for body in bodies[bodies.index(mentions[0]) + 1:])
    assert later == 0, f"{page.name}: (weight tying) is given once per chapter, at first use"


def test_the_glossary_gives_one_translation_per_term():
    found = terms()
    assert len(found) > 30
    for english, spanish, korean in found:
        for cell in (spanish, korean):
            # "tied / untied" pairs two terms; any other slash would offer a second translation.
            assert cell.count(" / ") == english.count(" / "), (english, cell)


def test_every_short_form_names_its_term():
    assert all(terms and all(terms) for forms in short_forms().values() for _, terms in forms)
    assert short_forms()["es"], "docs/translation.md's short forms table holds them"


def test_every_glossary_term_is_defined_and_linked_to_its_page():
    """A glossary that teaches: a sentence for each term and the page (or label) that teaches it."""
    rows = table(GLOSSARY, "English", "what it means")
    pages = {p.stem for p in BOOK.glob("*.md")}
    labels = set(re.findall(r"(?m)^\(([\w-]+)\)=$", "".join(p.read_text(encoding="utf-8")
                                                         for p in BOOK.glob("*.md"))))
    for english, meaning, taught, *_ in rows:
        assert len(meaning.split()) >= 5, f"{english}: say what it means in a sentence"
        links = re.findall(r"\{(doc|ref)\}`(?:[^`<]*<)?([\w-]+)>?`", taught)
        assert links, f"{english}: link the page that teaches it ({{doc}} or {{ref}})"
        for role, target in links:
            assert target in (pages if role == "doc" else labels), f"{english}: no {role} {target}"


def test_the_readers_glossary_leaves_the_rules_to_the_contributors_guide():
    heads = [head for head, _ in tables(GLOSSARY)]
    assert all(head[:2] == ["English", "what it means"] for head in heads), heads


def test_every_variant_names_a_language_and_a_replacement():
    variants = table(RULES, "language", "variant")
    assert len(variants) > 20
    for lang, variant, instead, _ in variants:
        assert lang in ("es", "ko") and variant.strip("`") and instead, (lang, variant)


@pytest.mark.parametrize("lang, text, caught", [
    ("es", "Aplica el softmax y guarda el fichero con la librería.", 3),
    ("es", "`.value` lanza un `DeprecationWarning`.", 1),
    ("es", "Una matriz de tamaño (V, d) y la LayerNorm final.", 2),
    ("es", "`.value` emite un `DeprecationWarning`; `el softmax` es código.", 0),
    ("es", "La normalización de capa (LayerNorm) final; x = LayerNorm(E[tokens]); un tamaño de 2e-3.", 0),
    ("es", "Aplica la softmax y guarda el archivo con la biblioteca; se emite un aviso.", 0),
    ("ko", "(V, D) 크기의 행렬과 편향 분산, 마지막 LayerNorm, 메모리 배치는", 4),
    ("ko", "(V, D) 모양의 행렬과 모분산, 마지막 레이어 정규화(LayerNorm)와 `nn.LayerNorm`", 0),
    ("ko", "숨은 케이스의 기대값", 2),
    ("es", "La cabeza comparte el embedding; la cabeza del modelo está vinculada.", 2),
    ("es", "La cabeza del modelo de lenguaje comparte el embedding; la cabeza no tiene sesgo.", 0),
    ("es", "Las cabezas de atención se separan; cada cabeza ve d_head columnas.", 0),
])
def test_the_rules_catch_each_variant(lang, text, caught):
    """Each rule fires on a sentence that uses its variant, and not on the glossary's term."""
    assert len(list(offences(lang, text))) == caught, list(offences(lang, text))

"""The Spanish and Korean notes use the glossary's one translation per term.

Each rule names a variant that ``book/glossary.md`` rules out and the term to use instead.
Inline code (`...`) is removed before matching: names such as `nn.LayerNorm` or `forward`
are code, not prose.  The catalogs of the grader are checked too, in a test marked as an
expected failure until they follow the glossary.
"""
import json
import re

import pytest

from notebooks import ROOT

BOOK = ROOT / "book"
PAGES = sorted(p for p in BOOK.glob("*.md") if p.stem != "glossary")
NOTE = re.compile(r"```\{admonition\} (?:🇪🇸 Nota|🇰🇷 참고)\n:class: [^\n]*\blang-(es|ko)\b[^\n]*\n(.*?)```", re.S)
CODE = re.compile(r"`[^`\n]*`")

# language -> [(forbidden variant, what the glossary says instead)]
FORBIDDEN = {
    "es": [
        (r"(?i)\b(?:el|del|al|un) softmax\b", "la softmax"),
        (r"(?i)\bficheros?\b", "archivo"),
        (r"(?i)\blibrer[ií]as?\b", "biblioteca"),
        (r"(?i)\blanz\w*\b[^.;]{0,40}\b(?:avisos?|advertencias?|\w*Warning)\b", "un aviso se emite"),
        (r"(?i)\b(?:avisos?|advertencias?|\w*Warning)\b[^.;]{0,20}\blanz", "un aviso se emite"),
        (r"(?i)\badvertencias?\b", "aviso"),
        (r"(?i)\b(?:el|un|del|al) forward\b", "la propagación hacia delante (forward)"),
    ],
    "ko": [
        (r"편향\s*분산|편향된\s*분산", "모분산 (÷ d)"),
        (r"메모리\s*배치", "메모리 배열 순서"),
        (r"정규화\s*\(regularization\)|정규화\s*효과|정규화\s*역할", "규제 (regularisation)"),
        (r"\)\s*크기", "모양 (shape): (V, d) 모양"),
        (r"(?:형식|텐서\s*하나|하나)[으로]*\s*묶", "한 텐서로 모으기 (pack)"),
        (r"LayerNorm", "레이어 정규화 (LayerNorm only once, in parentheses, or in code)"),
    ],
}
# Allowed spellings removed before the rules run.
ALLOWED = {"es": [], "ko": [r"레이어\s*정규화\s*\(LayerNorm\)"]}


# Pages whose notes another change is rewriting; the lead removes the mark once they pass.
PENDING = {}


def notes(page):
    for match in NOTE.finditer(page.read_text(encoding="utf-8")):
        yield match.group(1), match.group(2)


def by_page(page):
    mark = pytest.mark.xfail(strict=True, reason=PENDING[page.stem]) if page.stem in PENDING else ()
    return pytest.param(page, id=page.stem, marks=mark)


def offences(lang, text):
    # Code is not prose, except a warning's class name, which the rule on "lanzar" needs.
    text = CODE.sub(lambda code: "Warning" if code.group(0).rstrip("`").endswith("Warning") else "", text)
    for allowed in ALLOWED[lang]:
        text = re.sub(allowed, "", text)
    for pattern, instead in FORBIDDEN[lang]:
        for hit in re.finditer(pattern, text):
            context = text[max(0, hit.start() - 30):hit.end() + 30].replace("\n", " ")
            yield f"{hit.group(0)!r} (use {instead}) in ...{context}..."


@pytest.mark.parametrize("page", [by_page(p) for p in PAGES])
def test_notes_use_the_glossary_terms(page):
    found = [o for lang, body in notes(page) for o in offences(lang, body)]
    assert not found, f"{page.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("page", [by_page(p) for p in PAGES])
def test_korean_gives_the_english_term_once_per_chapter(page):
    mentions = [body for lang, body in notes(page) if lang == "ko" and "가중치 묶기" in body]
    assert mentions, f"{page.name}: no Korean note names 가중치 묶기(weight tying)"
    assert "가중치 묶기(weight tying)" in mentions[0], \
        f"{page.name}: the first Korean note that says 가중치 묶기 should add (weight tying)"
    later = sum(body.count("(weight tying)") for body in mentions[1:])
    assert later == 0, f"{page.name}: (weight tying) is given once per chapter, at first use"


def test_the_glossary_gives_one_translation_per_term():
    rows = [line for line in (BOOK / "glossary.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| English")]
    assert len(rows) > 30
    for row in rows:
        english, spanish, korean = [cell.strip() for cell in row.strip("|").split("|")]
        for cell in (spanish, korean):
            # "tied / untied" pairs two terms; any other slash would offer a second translation.
            assert cell.count(" / ") == english.count(" / "), row


def test_the_rules_catch_each_variant():
    """Each rule fires on a sentence that uses its variant, and not on the glossary's term."""
    assert list(offences("es", "Aplica el softmax y guarda el fichero con la librería."))
    assert list(offences("es", "`.value` lanza un `DeprecationWarning`."))
    assert not list(offences("es", "`.value` emite un `DeprecationWarning`; `el softmax` es código."))
    assert not list(offences("es", "Aplica la softmax y guarda el archivo con la biblioteca; se emite un aviso."))
    assert list(offences("ko", "(V, D) 크기의 행렬과 편향 분산, 마지막 LayerNorm"))
    assert not list(offences("ko", "(V, D) 모양의 행렬과 모분산, 마지막 레이어 정규화(LayerNorm)와 `nn.LayerNorm`"))


CATALOGS = sorted((ROOT / "grader" / "messages").glob("[ek][so]/*.json"))


def test_catalogs_use_the_glossary_terms():
    found = []
    for path in CATALOGS:
        lang = path.parent.name
        for key, text in json.loads(path.read_text(encoding="utf-8")).items():
            found += [f"{path.relative_to(ROOT)} {key}: {o}" for o in offences(lang, text)]
    assert not found, "\n".join(found)

"""The claims ledger (book/claims.yml) covers every number the English prose states.

A number on a page is either computed (glued from a cell with ``{glue:text}``) or written by
hand; every hand-written one needs a ledger entry that says where it comes from. The ledger
cannot go stale: an entry whose fragment is no longer on its page fails. The extractor's
rules (what counts as prose, what counts as a number) are in ``tests/prose.py`` and are
themselves tested here on examples of each case.
"""
from __future__ import annotations

import re

import pytest
import yaml

from notebooks import ROOT
from prose import numbers, versions

BOOK = ROOT / "book"
PAGES = sorted(p.stem for p in BOOK.glob("*.md"))
KINDS = {"number", "API behaviour", "model config", "paper result", "estimate", "history"}
LEDGER = yaml.safe_load((BOOK / "claims.yml").read_text(encoding="utf-8"))


def pins() -> dict[str, str]:
    """The pinned version of each package, from constraints.txt."""
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return {name.lower(): version for name, _, version in (line.partition("==") for line in lines)
            if version}


def spans(page: str, text: str) -> list[tuple[int, int]]:
    """Where the ledger's fragments for this page lie in its text (whitespace runs match any)."""
    found = []
    for entry in LEDGER:
        if entry["page"] == page:
            pattern = r"\s+".join(map(re.escape, entry["fragment"].split()))
            found += [(m.start(), m.end()) for m in re.finditer(pattern, text)]
    return found


def test_every_entry_is_complete():
    for entry in LEDGER:
        assert set(entry) == {"page", "fragment", "kind", "evidence"}, entry
        assert entry["page"] in PAGES, f"no page book/{entry['page']}.md"
        assert entry["kind"] in KINDS, entry
        assert entry["evidence"].strip() and entry["fragment"].strip(), entry


@pytest.mark.parametrize("entry", LEDGER, ids=lambda e: f"{e['page']}:{e['fragment'][:30]}")
def test_every_fragment_is_on_its_page_once(entry):
    text = (BOOK / f"{entry['page']}.md").read_text(encoding="utf-8")
    pattern = r"\s+".join(map(re.escape, entry["fragment"].split()))
    hits = len(re.findall(pattern, text))
    assert hits == 1, (f"book/{entry['page']}.md holds the fragment {hits} times: update the "
                       f"ledger with the page: {entry['fragment']!r}")


@pytest.mark.parametrize("page", PAGES)
def test_every_number_in_the_prose_is_glued_or_in_the_ledger(page):
    text = (BOOK / f"{page}.md").read_text(encoding="utf-8")
    covered = spans(page, text)
    loose = [f"line {text.count(chr(10), 0, start) + 1}: {written!r} in "
             f"{text[max(0, start - 40):end + 20]!r}"
             for start, end, written in numbers(text)
             if not any(a <= start and end <= b for a, b in covered)]
    assert not loose, (f"book/{page}.md states numbers that are neither glued nor in "
                       "book/claims.yml:\n" + "\n".join(loose))


@pytest.mark.parametrize("page", PAGES)
def test_a_library_version_in_the_prose_is_the_pinned_one(page):
    text = (BOOK / f"{page}.md").read_text(encoding="utf-8")
    covered = spans(page, text)
    pinned = pins() | {"pytorch": pins()["torch"], "jupyter book": pins()["jupyter-book"]}
    for library, version in versions(text):
        at = text.find(f"{library} {version}")
        if any(a <= at < b for a, b in covered):
            continue  # a piece of history, with its evidence in the ledger
        assert pinned[library.lower()].startswith(version), (
            f"book/{page}.md names {library} {version}; constraints.txt pins "
            f"{pinned[library.lower()]}")


# ------------------------------------------------------------- the extractor, on examples of each rule
SAMPLE = """---
jupytext: {}
---

# 3. A title

The head has 50257 rows, 23.7 % of the model, and took 9 minutes; tying is 2× smaller.
Chapter 04 and table 5 are names, as are GPT-2, Llama 3.2 1B and Gemma 7B; so is 2017.
A glued {glue:text}`n_rows` and inline `d_model = 768` and math $0.02$ are not prose.
Row 3 is a small index. A scale of 0.02 and 1e-4 count.

```{code-cell} ipython3
x = 12345
```

```{admonition} 🇪🇸 Nota
:class: note lang-es
Son 23,7 % y 50 257 filas.
```

1. a list item
"""


def test_the_extractor_finds_hand_written_numbers_and_only_those():
    assert [written for _, _, written in numbers(SAMPLE)] == [
        "50257", "23.7 %", "9 minutes", "2×", "0.02", "1e-4"]


def test_a_ledger_fragment_covers_the_numbers_inside_it():
    start = SAMPLE.index("The head has")
    covered = [(start, start + len("The head has 50257 rows"))]
    left = [w for s, e, w in numbers(SAMPLE) if not any(a <= s and e <= b for a, b in covered)]
    assert "50257" not in left and "23.7 %" in left


def test_versions_are_read_from_the_prose():
    assert versions("Since PyTorch 2.6, and with torch 2.13 and Flax 0.12.") == [
        ("PyTorch", "2.6"), ("torch", "2.13"), ("Flax", "0.12")]

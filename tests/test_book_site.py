"""The book as a site, in headless chromium with the network off (as tests/test_browser.py
opens it): accessibility, navigation, notes, tabs.

Every page of the table of contents is opened once at 1280×900 and once at 390×844, by a
reader whose browser prefers English, and on that visit: axe-core (npm, pinned in
package.json, run from node_modules: the book does not ship it) finds no critical or serious
violation; the page's title and its sections carry the chapter's number, as the text names
chapters (00, 04b), and the title takes at most three lines; the sidebar's titles are
short; each section's Spanish and Korean notes are folded into one "ES · KO" button; tabs
that show one idea in several frameworks carry one set of labels in one sync group. Then,
on a few pages: a Spanish or Korean browser opens its notes, the header's choice beats the
browser's, a folded pair opens in place, and a framework picked in one tab set is picked
on the next page and after a reload.
"""
from __future__ import annotations

import json
import re

import pytest

from built_book import served_book, toc_pages
from notebooks import ROOT
from test_browser import READY, WIDTHS, console_errors, name_of, url

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"critical", "serious"}
FRAMEWORK_TABS = {"linen": "Flax Linen", "nnx": "Flax NNX", "pytorch": "PyTorch"}
MAX_TITLE_LINES = 3
MAX_SIDEBAR_TITLE = 32   # characters
CHAPTER = re.compile(r"^(\d+[a-z]?)_")
SITE_FACTS = """(() => {
  const shown = e => !!e && e.checkVisibility() && e.getBoundingClientRect().height > 0;
  const all = selector => [...document.querySelectorAll(selector)];
  const title = document.querySelector(".bd-article h1");
  const style = getComputedStyle(title);
  return {
    title_number: (title.querySelector(".section-number") || {textContent: ""}).textContent.trim(),
    title_lines: Math.round(title.getBoundingClientRect().height / parseFloat(style.lineHeight)),
    section_numbers: all(".bd-article section > h2 .section-number").map(e => e.textContent.trim()),
    sidebar_titles: all(".bd-sidebar-primary nav.bd-links a.reference").map(a => a.textContent.trim()),
    pairs: all(".tied-notes-pair").map(pair => ({
      button: shown(pair.querySelector(":scope > button.tied-notes-open")),
      label: (pair.querySelector(":scope > button.tied-notes-open") || {textContent: ""}).textContent.trim(),
      notes_shown: [...pair.querySelectorAll(".admonition")].filter(shown).length,
    })),
    loose_notes: all(".admonition:is(.lang-es, .lang-ko)").filter(n => !n.closest(".tied-notes-pair")).length,
    tabs: all(".sd-tab-set").map(set => [...set.querySelectorAll(":scope > label.sd-tab-label")]
      .map(label => [label.dataset.syncGroup || "", label.dataset.syncId || "", label.textContent.trim()])),
  };
})()"""
AXE_RUN = """axe.run(document, {resultTypes: ["violations"]}).then(result => result.violations.map(v => ({
  impact: v.impact, id: v.id, nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 3)})))"""


@pytest.fixture(scope="module")
def site():
    """The browser on the served build; yields (browser, base URL)."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make node_modules/.installed` (npm ci)", pytrace=False)
    with served_book() as found:
        yield found


@pytest.fixture(scope="module")
def seen(site) -> dict[tuple[str, str], dict]:
    """What each page showed, keyed by (width, page name), with what axe-core found there."""
    browser, base = site
    axe = AXE.read_text(encoding="utf-8")
    facts = {}
    for width, (w, h) in WIDTHS.items():
        for page in toc_pages():
            tab = browser.tab(w, h)
            try:
                tab.open(url(base, page))
                tab.wait_for(READY, timeout=20)
                found = tab.evaluate(SITE_FACTS)
                tab.evaluate(axe + "\n;0", timeout=30)
                found["axe"] = tab.evaluate(AXE_RUN, timeout=60)
                found["errors"] = console_errors(tab.events)
                facts[width, name_of(page)] = found
            finally:
                tab.close()
    return facts


def failing(seen, check) -> dict:
    return {f"{width} {name}": found for (width, name), facts in seen.items() if (found := check(facts))}


def test_axe_finds_no_critical_or_serious_violation(seen):
    found = failing(seen, lambda facts: [v for v in facts["axe"] if v["impact"] in BLOCKING])
    assert not found, f"axe-core violations: {json.dumps(found, indent=1)}"
    assert not failing(seen, lambda facts: facts["errors"])


def test_titles_and_sections_carry_the_chapter_name(seen):
    def wrong(facts, name):
        chapter = CHAPTER.match(name.removeprefix("book_"))
        if not chapter:
            return facts["title_number"] and f"numbered {facts['title_number']!r}"
        expected = chapter.group(1) + "."
        return [n for n in [facts["title_number"], *facts["section_numbers"]] if not n.startswith(expected)] \
            or (not facts["title_number"] and "no number")
    found = {f"{width} {name}": problem for (width, name), facts in seen.items() if (problem := wrong(facts, name))}
    assert not found, f"numbers that are not the chapter's: {found}"


def test_a_title_takes_at_most_three_lines(seen):
    long = failing(seen, lambda facts: facts["title_lines"] > MAX_TITLE_LINES and f"{facts['title_lines']} lines")
    assert not long, long


def test_the_sidebar_titles_are_short(seen):
    long = failing(seen, lambda facts: [t for t in facts["sidebar_titles"] if len(t) > MAX_SIDEBAR_TITLE])
    assert not long, long


def test_notes_are_folded_for_an_english_browser(seen):
    assert any(facts["pairs"] for facts in seen.values()), "no page has notes"
    loose = failing(seen, lambda facts: facts["loose_notes"])
    assert not loose, f"notes outside a pair: {loose}"
    unfolded = failing(seen, lambda facts: [
        pair for pair in facts["pairs"] if not pair["button"] or pair["notes_shown"] or "ES · KO" not in pair["label"]])
    assert not unfolded, f"pairs of notes not folded behind an 'ES · KO' button: {unfolded}"


def test_framework_tabs_share_one_set_of_labels(seen):
    sets = [labels for facts in seen.values() for labels in facts["tabs"]]
    assert sets, "no page shows frameworks side by side in tabs"
    wrong = failing(seen, lambda facts: [labels for labels in facts["tabs"]
                                         if any(group != "framework" or FRAMEWORK_TABS.get(key) != label
                                                for group, key, label in labels)])
    assert not wrong, f"tabs outside the framework sync group or labelled otherwise: {wrong}"


NOTES_SHOWN = """Object.fromEntries(["es", "ko"].map(lang => [lang,
  [...document.querySelectorAll(`.admonition.lang-${lang}`)].some(e => e.checkVisibility())]))"""


def page_with(text: str):
    return next(page for page in toc_pages() if text in page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("languages, expected", [
    ("es-ES,es,en", {"es": True, "ko": False}),
    ("ko-KR,ko", {"es": False, "ko": True}),
    ("fr-FR,ko", {"es": False, "ko": True}),
    ("en-GB,es", {"es": False, "ko": False}),
])
def test_the_browser_language_picks_the_notes(site, languages, expected):
    browser, base = site
    tab = browser.tab(*WIDTHS["390"])
    try:
        tab.call("Emulation.setUserAgentOverride", userAgent="Mozilla/5.0 (X11; Linux x86_64)",
                 acceptLanguage=languages)
        tab.open(url(base, page_with("tied-notes-pair")))
        assert tab.evaluate(NOTES_SHOWN) == expected
        # The header's choice beats the browser's, and is kept.
        tab.evaluate("""(() => { const s = document.querySelector('select.tied-notes');
          s.value = 'both'; s.dispatchEvent(new Event('change', {bubbles: true})); })()""")
        tab.open(url(base, page_with("tied-notes-pair")))
        assert tab.evaluate(NOTES_SHOWN) == {"es": True, "ko": True}
        assert not console_errors(tab.events)
    finally:
        tab.evaluate("localStorage.removeItem('tied-notes')")
        tab.close()


def test_a_folded_pair_opens_in_place(site):
    browser, base = site
    tab = browser.tab(*WIDTHS["390"])
    try:
        tab.open(url(base, page_with("tied-notes-pair")))
        top = "document.querySelector('.tied-notes-pair').getBoundingClientRect().top + scrollY"
        before = tab.evaluate(top)
        tab.evaluate("document.querySelector('.tied-notes-pair').scrollIntoView()")
        tab.click(".tied-notes-pair > button.tied-notes-open")
        pair = "document.querySelector('.tied-notes-pair')"
        assert tab.evaluate(f"{pair}.querySelector('button').getAttribute('aria-expanded')") == "true"
        assert tab.evaluate(f"[...{pair}.querySelectorAll('.admonition')].every(e => e.checkVisibility())")
        assert tab.evaluate(top) == before, "the notes open somewhere else"
        assert not tab.evaluate("[...document.querySelectorAll('.tied-notes-pair')].slice(1)"
                                ".some(p => [...p.querySelectorAll('.admonition')].some(e => e.checkVisibility()))")
        tab.click(".tied-notes-pair > button.tied-notes-open")
        assert not tab.evaluate(f"[...{pair}.querySelectorAll('.admonition')].some(e => e.checkVisibility())")
    finally:
        tab.close()


CHECKED_TAB = """[...document.querySelectorAll(".sd-tab-set > input:checked + label")].map(l => l.dataset.syncId)"""


def test_the_framework_picked_is_kept_across_pages_and_reloads(site):
    browser, base = site
    first, *others = [page for page in toc_pages() if "sd-tab-set" in page.read_text(encoding="utf-8")]
    assert others, "framework tabs on one page only"
    tab = browser.tab(*WIDTHS["1280"])
    try:
        tab.open(url(base, first))
        tab.evaluate("document.querySelector('.sd-tab-set').scrollIntoView()")
        tab.click(".sd-tab-set > label[data-sync-id='nnx']")
        assert set(tab.evaluate(CHECKED_TAB)) == {"nnx"}
        for page in [*others, first]:   # the next page, then a reload of the first
            tab.open(url(base, page))
            assert tab.wait_for(f"{CHECKED_TAB}.length && {CHECKED_TAB}.every(id => id === 'nnx')", timeout=5), page
        assert not console_errors(tab.events)
    finally:
        tab.evaluate("localStorage.clear()")
        tab.close()

"""The built book in headless chromium with the network off, as a reader sees it.

The build is served on 127.0.0.1, the only host chromium may reach, and every page of the
table of contents is opened at 1280×900 and at a phone's 390×844 (Debian's chromium and
fonts-noto-cjk are installed with apt when missing and the tests run as root). On every
page, at both widths: no console error; nothing fetched from the network; the math typeset
by MathJax; no sideways scroll of the page; no code, output or table cut off (at 1280 no
code or output is wider than its box; on a phone code, outputs and tables wider than their
box scroll inside it, and the side with more fades out, which tied.js and tied.css do);
every figure loaded and not shrunk; the sidebar toggles
open and close the sidebars; the Spanish and Korean notes in reach (folded behind one "ES ·
KO" button per section for a reader whose browser prefers English, as chromium's does here;
Korean drawn with a Korean font once opened) and the notes selector in the header. Then: the savings explorer computes
in the page what ``tied_book.explorer.figures`` computes, for every preset and for typed
numbers; the notes selector hides and shows the notes and the next page keeps the choice;
in dark mode no table, output or code block is a light block.

PNG screenshots are kept as test artifacts next to the ``html`` folder tested, in
``_build/screenshots/``: ``1280/<page>.png`` and ``390/<page>.png`` (each page's first
8000 pixels) and ``dark/<page>.png`` (the first screen, in dark mode).
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from built_book import HTML, korean_fonts, served_book, toc_pages
from tied_book.explorer import figures
from tied_book.savings import PRESETS, Saving

SCREENSHOTS = HTML.parent / "screenshots"
WIDTHS = {"1280": (1280, 900), "390": (390, 844)}
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
# Done when every math element holds MathJax's output and every widget view has been
# replaced by a rendered widget (a rendered widget-subarea per view script).
READY = f"""document.readyState === "complete"
  && [...document.querySelectorAll(".math")].every(m => m.querySelector("mjx-container"))
  && document.querySelectorAll(".widget-subarea > .jupyter-widgets").length
     >= document.querySelectorAll('{WIDGET_VIEW}').length"""
# Boxes that may be wider than their content column: they either wrap or scroll with a cue.
BOXES = ("div.highlight > pre, .cell_output pre, .pst-scrollable-table-container, "
         ".cell_output .output.text_html, .tied-scroll, mjx-container[display='true']")
FACTS = f"""(() => {{
  const shown = e => {{
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && e.checkVisibility({{opacityProperty: true, visibilityProperty: true}});
  }};
  const all = selector => [...document.querySelectorAll(selector)];
  const name = e => `${{e.tagName.toLowerCase()}}.${{[...e.classList].join(".")}} "${{e.textContent.trim().slice(0, 50)}}"`;
  const wider = e => e.scrollWidth > e.clientWidth + 1;
  const cued = e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX)
    && e.dataset.tiedScroll && getComputedStyle(e).maskImage !== "none";
  const doc = document.documentElement;
  const beyond = doc.scrollWidth > doc.clientWidth
    ? all(".bd-page-width *").filter(e => e.getBoundingClientRect().right > doc.clientWidth + 1
        && !e.closest("[data-tied-scroll]") && !(e.parentElement && e.parentElement.getBoundingClientRect().right > doc.clientWidth + 1))
    : [];
  const header = document.querySelector(".bd-header");
  return {{
    sections: all("section > h2").length,
    math: all(".math").length,
    raw_tex: all(".math").filter(m => !m.querySelector("mjx-container")).map(m => m.textContent.slice(0, 60)),
    widget_views: all('{WIDGET_VIEW}').length,
    widgets: all(".widget-subarea > .jupyter-widgets").filter(shown).length,
    // Each note shown, or folded behind a button that is.
    notes: Object.fromEntries(["es", "ko"].map(lang => [lang, all(`.admonition.lang-${{lang}}`).map(e => shown(e)
      || !!(e.closest(".tied-notes-pair") && shown(e.closest(".tied-notes-pair").querySelector(".tied-notes-open"))))])),
    // [the note's language, the badge in its title]
    badges: all(".admonition:is(.lang-es, .lang-ko) > .admonition-title").map(title => [
      title.parentElement.classList.contains("lang-es") ? "ES" : "KO",
      (title.querySelector(".tied-flag") || {{}}).textContent]),
    emoji_flags: all(".admonition-title").filter(t => /[\\u{{1F1E6}}-\\u{{1F1FF}}]/u.test(t.textContent)).length,
    notes_selector: all("select.tied-notes").filter(shown).length,
    page_width: doc.scrollWidth,
    screens: doc.scrollHeight / window.innerHeight,
    view_width: doc.clientWidth,
    beyond: beyond.slice(0, 5).map(name),
    clipped: all("{BOXES}").filter(shown).filter(wider).filter(e => !cued(e)).map(name),
    wide_code: all("div.highlight > pre, .cell_output pre").filter(shown).filter(wider).map(name),
    figures: all(".bd-article img").map(img => ({{
      src: img.getAttribute("src"), loaded: img.complete && img.naturalWidth > 0,
      drawn: img.getBoundingClientRect().width, meant: +img.getAttribute("width") || img.naturalWidth,
    }})),
    header_bar: header && shown(header) ? header.getBoundingClientRect().height : 0,
  }};
}})()"""
SIDEBAR_SHOWN = """(() => { const e = document.querySelector('%s');
  return !!e && e.checkVisibility({opacityProperty: true, visibilityProperty: true}) && e.getBoundingClientRect().width > 1; })()"""
DIALOG_OPEN = "document.querySelector('%s').open"
# A page longer than this many screens at 1280x900 is split in two (as 01 and 01b are).
MAX_SCREENS = 15.5
# A figure drawn narrower than this share of the width it was made for is too small to read.
LEGIBLE_SCALE = 0.6
# Fetched by the browser: local files, inline data and the server on this machine only.
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
LOCAL_HOSTS = {"127.0.0.1"}


def console_errors(events: list[dict]) -> list[str]:
    """Uncaught exceptions, console.error calls and the browser's own error entries."""
    found = []
    for event in events:
        params = event["params"]
        if event["method"] == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            found.append(details.get("exception", {}).get("description", details["text"]))
        elif event["method"] == "Runtime.consoleAPICalled" and params["type"] == "error":
            found.append(" ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"]))
        elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"{params['entry']['text']} {params['entry'].get('url', '')}".strip())
    return found


def toggle_problems(tab, width: int) -> list[str]:
    """What the sidebar toggles fail to do: [] when each one opens its sidebar and it closes again."""
    problems = []

    def expect(expression: str, what: str) -> None:
        if not tab.wait_for(expression, timeout=3):
            problems.append(what)

    if width >= 992:   # the primary sidebar folds away and back
        expect(SIDEBAR_SHOWN % "#pst-primary-sidebar", "the primary sidebar is not shown at first")
        tab.click("button.primary-toggle")
        expect("!" + SIDEBAR_SHOWN % "#pst-primary-sidebar", "☰ does not hide the primary sidebar")
        tab.click("button.primary-toggle")
        expect(SIDEBAR_SHOWN % "#pst-primary-sidebar", "☰ again does not show the primary sidebar")
    sides = [("secondary", "pst-secondary-sidebar")] + ([] if width >= 992 else [("primary", "pst-primary-sidebar")])
    for side, sidebar in sides:
        toggle = f"button.{side}-toggle"
        if not tab.evaluate(f"[...document.querySelectorAll('{toggle}')].some(e => e.checkVisibility())"):
            # No toggle: the sidebar is on screen already, or the page has no contents to show.
            if tab.evaluate(f"!!document.querySelector('#{sidebar} nav a')"):
                expect(SIDEBAR_SHOWN % f"#{sidebar}", f"no {side} toggle, and the {side} sidebar is hidden")
            continue
        tab.click(toggle)   # on narrow screens the sidebar opens as a dialog
        expect(DIALOG_OPEN % f"#{sidebar}-modal", f"the {side} toggle does not open the {side} sidebar")
        expect(SIDEBAR_SHOWN % f"#{sidebar}-modal", f"the {side} sidebar dialog is empty")
        tab.press("Escape", 27)
        expect("!" + DIALOG_OPEN % f"#{sidebar}-modal", f"Escape does not close the {side} sidebar")
    return problems


def name_of(page) -> str:
    return page.relative_to(HTML).with_suffix("").as_posix().replace("/", "_")


@pytest.fixture(scope="module")
def book():
    """The browser on the served build, shared by the tests; yields (browser, base URL)."""
    with served_book() as found:
        yield found


def url(base: str, page) -> str:
    return base + page.relative_to(HTML).as_posix()


@pytest.fixture(scope="module")
def visits(book) -> dict[tuple[str, str], dict]:
    """What each page showed, keyed by (width, page name): about 2 s a page and width."""
    browser, base = book
    seen = {}
    for width, (w, h) in WIDTHS.items():
        for page in toc_pages():
            tab = browser.tab(w, h)
            tab.open(url(base, page))
            tab.wait_for(READY, timeout=20)
            facts = tab.evaluate(FACTS)
            tab.screenshot(SCREENSHOTS / width / f"{name_of(page)}.png")
            # The first folded notes, opened as a reader does.
            if tab.evaluate("!!document.querySelector('.tied-notes-pair:has(.lang-ko) > .tied-notes-open')"):
                tab.click(".tied-notes-pair:has(.lang-ko) > .tied-notes-open")
            facts["korean_fonts"] = {f["familyName"] for f in tab.fonts(".tied-open > .admonition.lang-ko p")}
            facts["toggles"] = toggle_problems(tab, w)
            facts["errors"] = console_errors(tab.events)
            requests = {e["params"]["requestId"]: e["params"]["request"]["url"]
                        for e in tab.events if e["method"] == "Network.requestWillBeSent"}
            facts["requests"] = list(requests.values())
            facts["failed"] = [f"{requests.get(e['params']['requestId'])}: {e['params']['errorText']}"
                               for e in tab.events
                               if e["method"] == "Network.loadingFailed" and not e["params"].get("canceled")]
            tab.close()
            seen[width, name_of(page)] = facts
    return seen


def failing(visits, check) -> dict:
    """{"width page": what is wrong} for the visits where ``check(facts)`` is not empty."""
    return {f"{width} {name}": found for (width, name), facts in visits.items() if (found := check(facts))}


def test_every_page_has_a_screenshot_at_each_width(visits):
    assert len(visits) >= 2 * len(WIDTHS), visits.keys()
    missing = [f"{width}/{name}.png" for width, name in visits if not (SCREENSHOTS / width / f"{name}.png").is_file()]
    assert not missing, f"no screenshot in {SCREENSHOTS}: {missing}"


def test_no_console_error(visits):
    errors = failing(visits, lambda facts: facts["errors"])
    assert not errors, f"console errors: {json.dumps(errors, indent=1, ensure_ascii=False)}"


def test_nothing_comes_from_the_network(visits):
    def remote(facts):
        return [u for u in facts["requests"]
                if urlsplit(u).scheme not in LOCAL_SCHEMES and urlsplit(u).hostname not in LOCAL_HOSTS]
    found = failing(visits, remote)
    assert not found, f"requests to the network: {found}"


def test_every_file_a_page_asks_for_is_there(visits):
    failed = failing(visits, lambda facts: facts["failed"])
    assert not failed, f"requests that failed: {failed}"


def test_math_is_typeset(visits):
    assert sum(facts["math"] for facts in visits.values()), "no page has math to typeset"
    raw = failing(visits, lambda facts: facts["raw_tex"])
    assert not raw, f"math left as raw TeX (MathJax did not run): {raw}"


def test_widgets_render_wherever_the_book_has_some(visits):
    broken = failing(visits, lambda facts: facts["widgets"] < facts["widget_views"]
                     and f"{facts['widgets']} of {facts['widget_views']} widgets rendered")
    assert not broken, broken


def test_no_page_scrolls_sideways(visits):
    wide = failing(visits, lambda facts: facts["page_width"] > facts["view_width"]
                   and f"{facts['page_width']} px wide in {facts['view_width']}: {facts['beyond']}")
    assert not wide, wide


def test_no_page_is_longer_than_fifteen_screens_or_so(visits):
    long = {name: round(facts["screens"], 1) for (width, name), facts in visits.items()
            if width == "1280" and facts["screens"] > MAX_SCREENS}
    assert not long, f"pages longer than {MAX_SCREENS} screens at 1280x900: {long}"


def test_no_block_is_cut_off(visits):
    """At a desk code and outputs fit their box (80 columns, tests/test_readable_pages.py);
    what is wider than its box (on a phone) scrolls in it with a visible cue."""
    wide = {name: facts["wide_code"] for (width, name), facts in visits.items()
            if width == "1280" and facts["wide_code"]}
    assert not wide, f"code or outputs wider than their box at 1280: {wide}"
    clipped = failing(visits, lambda facts: facts["clipped"])
    assert not clipped, f"boxes wider than the page with no scroll cue: {clipped}"


def test_every_figure_is_loaded_and_legible(visits):
    broken = failing(visits, lambda facts: [f["src"] for f in facts["figures"] if not f["loaded"]])
    assert not broken, f"figures that did not load: {broken}"
    small = {name: [f"{f['src']}: drawn {f['drawn']:.0f} px wide, made for {f['meant']}"
                    for f in facts["figures"] if f["drawn"] < LEGIBLE_SCALE * min(f["meant"], facts["view_width"])]
             for (width, name), facts in visits.items() if width == "1280"}
    small = {name: found for name, found in small.items() if found}
    assert not small, f"figures shrunk below {LEGIBLE_SCALE:.0%} of their width at 1280 px: {small}"


def test_sidebar_toggles_open_and_close_the_sidebars(visits):
    broken = failing(visits, lambda facts: facts["toggles"])
    assert not broken, broken


def test_no_empty_top_bar(visits):
    bars = failing(visits, lambda facts: facts["header_bar"] and f"a {facts['header_bar']:.0f} px top bar")
    assert not bars, bars


def test_spanish_and_korean_notes_are_visible_with_text_flags(visits):
    hidden = failing(visits, lambda facts: {lang: shown for lang, shown in facts["notes"].items() if not all(shown)})
    assert not hidden, f"notes neither on screen nor behind a button on screen: {hidden}"
    missing = failing(visits, lambda facts: facts["sections"]
                      and [lang for lang, shown in facts["notes"].items() if not shown])
    assert not missing, f"pages with sections but no note in that language: {missing}"
    flags = failing(visits, lambda facts: facts["emoji_flags"]
                    or [f"{lang} note titled {badge}" for lang, badge in facts["badges"] if badge != lang])
    assert not flags, f"notes titled with emoji flags rather than ES/KO badges: {flags}"
    selector = failing(visits, lambda facts: facts["notes_selector"] != 1 and f"{facts['notes_selector']} selectors")
    assert not selector, f"pages without one notes selector in sight: {selector}"


def test_korean_is_drawn_with_a_korean_font(visits):
    korean = korean_fonts()
    wrong = failing(visits, lambda facts: facts["notes"]["ko"] and not facts["korean_fonts"] & korean
                    and sorted(facts["korean_fonts"]))
    assert not wrong, f"Korean notes drawn without a Korean font (fontconfig has {sorted(korean)}): {wrong}"


SHOWN_FIGURES = """Object.fromEntries([...document.querySelectorAll(".tied-explorer [data-figure]")]
  .filter(e => e.checkVisibility()).map(e => [e.dataset.figure, e.textContent]))"""
BOX_VALUES = """Object.fromEntries([...document.querySelectorAll(".tied-explorer [data-box]")]
  .map(e => [e.dataset.box, e.value]))"""


def set_box(tab, box: str, value, event: str) -> None:
    """What a reader does to one of the explorer's controls: a new value, then its event."""
    tab.evaluate(f"""(() => {{
      const e = document.querySelector(".tied-explorer [data-box='{box}']");
      e.value = {json.dumps(str(value))};
      e.dispatchEvent(new Event("{event}", {{bubbles: true}}));
    }})()""")


def test_the_explorer_computes_what_python_computes(book):
    browser, base = book
    tab = browser.tab(*WIDTHS["1280"])
    try:
        tab.open(url(base, toc_pages()[0]))
        assert tab.wait_for(READY, timeout=20)
        first = next(iter(PRESETS.values()))
        assert tab.evaluate(SHOWN_FIGURES) == figures(first), "the figures shown before any change"
        shown = []
        for name, preset in PRESETS.items():
            set_box(tab, "preset", name, "change")
            assert tab.evaluate(SHOWN_FIGURES) == figures(preset), name
            assert tab.evaluate(BOX_VALUES) == {"preset": name, "vocab": str(preset.vocab),
                                                "d_model": str(preset.d_model), "rest": str(preset.rest)}
            shown.append(tab.evaluate(SHOWN_FIGURES))
        assert len({json.dumps(s) for s in shown}) == len(PRESETS), "two presets show the same figures"
        # Typing a number leaves the preset, starting from its values.
        last = list(PRESETS.values())[-1]
        for vocab, d_model, rest in [(1000, last.d_model, last.rest), (1000, 7, last.rest), (1000, 7, 0),
                                     (10**7, 10**6, 10**13)]:
            for box, value in (("vocab", vocab), ("d_model", d_model), ("rest", rest)):
                set_box(tab, box, value, "input")
            assert tab.evaluate(BOX_VALUES)["preset"] == "custom"
            assert tab.evaluate(SHOWN_FIGURES) == figures(Saving(vocab, d_model, rest)), (vocab, d_model, rest)
        # A number out of range changes nothing, and the box says so.
        before = tab.evaluate(SHOWN_FIGURES)
        set_box(tab, "vocab", 0, "input")
        assert tab.evaluate(SHOWN_FIGURES) == before
        assert tab.evaluate("document.querySelector(\".tied-explorer [data-box='vocab']\").matches(':invalid')")
        assert not console_errors(tab.events)
    finally:
        tab.close()


NOTES_SHOWN = """Object.fromEntries(["es", "ko"].map(lang => [lang,
  [...document.querySelectorAll(`.admonition.lang-${lang}`)].some(e => e.checkVisibility())]))"""


def test_the_notes_selector_shows_the_chosen_notes_on_every_page(book):
    browser, base = book
    first, second = toc_pages()[:2]
    tab = browser.tab(*WIDTHS["390"])
    try:
        tab.open(url(base, first))
        assert tab.evaluate("document.querySelector('select.tied-notes').value") == "folded"
        assert tab.evaluate(NOTES_SHOWN) == {"es": False, "ko": False}
        for choice, expected in [("ko", {"es": False, "ko": True}), ("none", {"es": False, "ko": False}),
                                 ("both", {"es": True, "ko": True}), ("es", {"es": True, "ko": False})]:
            set_select = f"""(() => {{ const s = document.querySelector('select.tied-notes');
              s.value = '{choice}'; s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"""
            tab.evaluate(set_select)
            assert tab.evaluate(NOTES_SHOWN) == expected, choice
            tab.open(url(base, second))   # the next page keeps the choice
            assert tab.evaluate("document.querySelector('select.tied-notes').value") == choice
            assert tab.evaluate(NOTES_SHOWN) == expected, f"{choice} on the next page"
            tab.open(url(base, first))
        assert not console_errors(tab.events)
    finally:
        tab.evaluate("localStorage.removeItem('tied-notes')")
        tab.close()


# Backgrounds, in dark mode, of what used to be light blocks on a dark page.
LIGHT_BLOCKS = """(() => {
  const luminance = color => {
    const [r, g, b, a = 1] = color.match(/[\\d.]+/g).map(Number);
    return a < 0.1 ? 0 : (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  };
  return [...document.querySelectorAll(
      "table, th, td, .cell_output, .cell_output .output, div.highlight, div.highlight pre, .admonition, .tied-explorer, .tied-explorer :is(input, select)")]
    .filter(e => e.checkVisibility() && luminance(getComputedStyle(e).backgroundColor) > 0.5)
    .map(e => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")} ${getComputedStyle(e).backgroundColor}`)
    .slice(0, 5);
})()"""


def test_dark_mode_has_no_light_blocks(book):
    browser, base = book
    light = {}
    tab = browser.tab(*WIDTHS["1280"])
    try:
        tab.open(url(base, toc_pages()[0]))
        tab.evaluate("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark')")
        for page in toc_pages():
            tab.open(url(base, page))
            tab.wait_for(READY, timeout=20)
            assert tab.evaluate("document.documentElement.dataset.theme") == "dark"
            tab.screenshot(SCREENSHOTS / "dark" / f"{name_of(page)}.png", whole=False)
            if found := tab.evaluate(LIGHT_BLOCKS):
                light[name_of(page)] = found
    finally:
        tab.evaluate("localStorage.removeItem('mode'); localStorage.removeItem('theme')")
        tab.close()
    assert not light, f"light blocks in dark mode: {light}"

"""The built book in headless chromium with the network disabled, as a reader offline sees it.

Every page of the table of contents is opened once from file:// (Debian's chromium and
fonts-noto-cjk are installed with apt when missing and the tests run as root). The tests
then check that the math is typeset by MathJax, that the widgets rendered, that the
Spanish and Korean notes are visible (the Korean ones drawn with a Korean font), and that
nothing was fetched from the network or failed to load.

A PNG screenshot of each page (its first 8000 pixels, 1280 wide) is kept as a test
artifact in ``_build/screenshots/``, next to the ``html`` folder tested, e.g.
``_build/screenshots/book_01_linen.png``.
"""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from built_book import HTML, Chromium, find_chromium, korean_fonts, toc_pages

SCREENSHOTS = HTML.parent / "screenshots"
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
# Done when every math element holds MathJax's output and every widget view has been
# replaced by a rendered widget (a rendered widget-subarea per view script).
READY = f"""document.readyState === "complete"
  && [...document.querySelectorAll(".math")].every(m => m.querySelector("mjx-container"))
  && document.querySelectorAll(".widget-subarea > .jupyter-widgets").length
     >= document.querySelectorAll('{WIDGET_VIEW}').length"""
FACTS = f"""(() => {{
  const shown = e => {{
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && e.checkVisibility({{opacityProperty: true, visibilityProperty: true}});
  }};
  const all = selector => [...document.querySelectorAll(selector)];
  return {{
    sections: all("section > h2").length,
    math: all(".math").length,
    raw_tex: all(".math").filter(m => !m.querySelector("mjx-container")).map(m => m.textContent.slice(0, 60)),
    widget_views: all('{WIDGET_VIEW}').length,
    widgets: all(".widget-subarea > .jupyter-widgets").filter(shown).length,
    widget_parts: all(".widget-subarea .jupyter-widgets").filter(shown).length,
    notes: {{es: all(".admonition.lang-es").map(shown), ko: all(".admonition.lang-ko").map(shown)}},
  }};
}})()"""
# Fetched by the browser: local files and inline data only.
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
# Scripts of ours and the ones vendored from npm: none of them may throw.
OWN_SCRIPTS = ("/_static/vendor/", "/_static/tied/")


@pytest.fixture(scope="module")
def pages() -> dict[str, dict]:
    """What each page showed in the browser, keyed by its path in the build (about 4 s a page)."""
    browser, seen = Chromium(find_chromium()), {}
    try:
        for page in toc_pages():
            name = page.relative_to(HTML).with_suffix("").as_posix()
            tab = browser.tab()
            tab.open(page)
            tab.wait_for(READY, timeout=15)
            facts = tab.evaluate(FACTS)
            facts["korean_fonts"] = {f["familyName"] for f in tab.fonts(".admonition.lang-ko p")}
            tab.screenshot(SCREENSHOTS / f"{name.replace('/', '_')}.png")
            requests = {e["params"]["requestId"]: e["params"]["request"]["url"]
                        for e in tab.events if e["method"] == "Network.requestWillBeSent"}
            facts["requests"] = list(requests.values())
            facts["failed"] = [f"{requests.get(e['params']['requestId'])}: {e['params']['errorText']}"
                               for e in tab.events
                               if e["method"] == "Network.loadingFailed" and not e["params"].get("canceled")]
            facts["errors"] = [e["params"]["exceptionDetails"] for e in tab.events
                               if e["method"] == "Runtime.exceptionThrown"]
            tab.close()
            seen[name] = facts
    finally:
        browser.close()
    return seen


def test_every_page_has_a_screenshot(pages):
    assert len(pages) >= 2, pages.keys()
    missing = [name for name in pages if not (SCREENSHOTS / f"{name.replace('/', '_')}.png").is_file()]
    assert not missing, f"no screenshot in {SCREENSHOTS} for {missing}"


def test_math_is_typeset(pages):
    assert sum(facts["math"] for facts in pages.values()), "no page has math to typeset"
    raw = {name: facts["raw_tex"] for name, facts in pages.items() if facts["raw_tex"]}
    assert not raw, f"math left as raw TeX (MathJax did not run): {raw}"


def test_widgets_render_wherever_the_book_has_some(pages):
    broken = {name: f"{facts['widgets']} of {facts['widget_views']} widgets rendered"
              for name, facts in pages.items() if facts["widgets"] < facts["widget_views"]}
    assert not broken, broken


def test_widgets_render_on_the_intro(pages):
    intro = pages[toc_pages()[0].relative_to(HTML).with_suffix("").as_posix()]
    if not intro["widget_views"]:
        pytest.skip("the intro page has no widget output yet (the savings explorer is not in the build)")
    assert intro["widgets"] == intro["widget_views"], intro
    # The views are containers (the explorer is a VBox): their controls must show too.
    assert intro["widget_parts"] > intro["widgets"], intro


def test_spanish_and_korean_notes_are_visible(pages):
    hidden = {f"{name} ({lang})": shown for name, facts in pages.items()
              for lang, shown in facts["notes"].items() if not all(shown)}
    assert not hidden, f"notes that take no space on screen: {hidden}"
    missing = [f"{name} ({lang})" for name, facts in pages.items() if facts["sections"]
               for lang, shown in facts["notes"].items() if not shown]
    assert not missing, f"pages with sections but no note in that language: {missing}"


def test_korean_is_drawn_with_a_korean_font(pages):
    korean = korean_fonts()
    wrong = {name: facts["korean_fonts"] for name, facts in pages.items()
             if facts["notes"]["ko"] and not facts["korean_fonts"] & korean}
    assert not wrong, f"Korean notes drawn without a Korean font (fontconfig has {sorted(korean)}): {wrong}"


def test_nothing_comes_from_the_network(pages):
    remote = {name: urls for name, facts in pages.items()
              if (urls := [url for url in facts["requests"] if urlsplit(url).scheme not in LOCAL_SCHEMES])}
    assert not remote, f"requests to the network: {remote}"


def test_every_file_a_page_asks_for_is_there(pages):
    failed = {name: facts["failed"] for name, facts in pages.items() if facts["failed"]}
    assert not failed, f"requests that failed: {failed}"


def test_our_scripts_throw_nothing(pages):
    def where(error):
        frames = error.get("stackTrace", {}).get("callFrames", [])
        return [error.get("url", "")] + [frame["url"] for frame in frames]

    thrown = {name: errors for name, facts in pages.items()
              if (errors := [error.get("exception", {}).get("description", error["text"]) for error in facts["errors"]
                             if any(own in url for url in where(error) for own in OWN_SCRIPTS)])}
    assert not thrown, f"uncaught errors in MathJax, the widget manager or tools/widgets_offline.js: {thrown}"

// The book's own behaviour on every page (html_js_files in _config.yml), styled by tied.css.
// Loaded in <head> without `defer`, so that the chosen notes are set before the page is drawn.

// Which notes the reader sees: folded (each section's notes as one "ES · KO" line that
// opens in place), Spanish, Korean, both or none. Until the reader picks one in the header's
// <select> (kept in localStorage, for the whole book), the browser's languages decide: the
// first of them that the book has (English, Spanish, Korean) opens its notes, English folds
// them all.
(() => {
  const KEY = "tied-notes";
  const CHOICES = {folded: "Notes folded", es: "ES notes", ko: "KO notes", both: "ES + KO notes",
                   none: "No notes"};
  const stored = () => {
    try {
      return localStorage.getItem(KEY);
    } catch {   // storage disabled: the choice lasts for this page only
      return null;
    }
  };
  const preferred = () => {
    const known = (navigator.languages || [navigator.language || ""])
      .map(tag => tag.toLowerCase().split("-")[0])
      .find(lang => ["en", "es", "ko"].includes(lang));
    return known === "es" || known === "ko" ? known : "folded";
  };
  const apply = choice => {
    document.documentElement.dataset.tiedNotes = choice in CHOICES ? choice : preferred();
  };
  apply(stored());
  // Another tab changed it.
  window.addEventListener("storage", event => {
    if (event.key === KEY) {
      apply(event.newValue);
      const select = document.querySelector("select.tied-notes");
      if (select) select.value = document.documentElement.dataset.tiedNotes;
    }
  });
  // A folded pair of notes opens and closes in place (tools/book_ui.py makes the button).
  document.addEventListener("click", event => {
    const button = event.target.closest && event.target.closest("button.tied-notes-open");
    if (!button) return;
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    button.parentElement.classList.toggle("tied-open", open);
  });

  document.addEventListener("DOMContentLoaded", () => {
    // The notes' language, for screen readers and for the fonts the browser picks.
    for (const lang of ["es", "ko"]) {
      document.querySelectorAll(`.admonition.lang-${lang}`).forEach(note => { note.lang = lang; });
    }
    const buttons = document.querySelector(".article-header-buttons");
    if (!buttons) return;
    const select = document.createElement("select");
    select.className = "tied-notes";
    select.title = "Notes in Spanish and Korean";
    select.setAttribute("aria-label", select.title);
    for (const [value, label] of Object.entries(CHOICES)) select.add(new Option(label, value));
    select.value = document.documentElement.dataset.tiedNotes;
    select.addEventListener("change", () => {
      apply(select.value);
      try {
        localStorage.setItem(KEY, select.value);
      } catch {}
    });
    buttons.prepend(select);
  });
})();

// A box whose content is wider than it scrolls sideways; data-tied-scroll tells tied.css
// which side has more (left, right, both), so that the content fades out there.
(() => {
  const SCROLLERS = [
    "div.highlight > pre", ".cell_output pre", ".pst-scrollable-table-container",
    ".cell_output .output.text_html", ".tied-scroll", 'mjx-container[display="true"]',
  ].join(", ");
  const mark = box => {
    const hidden = box.scrollWidth - box.clientWidth - box.scrollLeft;
    const left = box.scrollLeft > 1, right = hidden > 1;
    if (left || right) {
      box.dataset.tiedScroll = left && right ? "both" : left ? "left" : "right";
      // A keyboard reaches it, to scroll it with the arrow keys.
      if (!box.hasAttribute("tabindex")) box.tabIndex = 0;
    } else {
      delete box.dataset.tiedScroll;
    }
  };
  const watched = new WeakSet();
  const resized = new ResizeObserver(entries => entries.forEach(entry => mark(entry.target)));
  const watchAll = () => document.querySelectorAll(SCROLLERS).forEach(box => {
    if (watched.has(box)) return;
    watched.add(box);
    box.addEventListener("scroll", () => mark(box), {passive: true});
    resized.observe(box);   // also marks it once, now
  });
  document.addEventListener("DOMContentLoaded", watchAll);
  // Display math exists once MathJax has typeset the page.
  window.addEventListener("load", () => {
    const typeset = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (typeset) typeset.then(watchAll);
  });
})();

// What axe-core finds in the markup that the theme and docutils write, mended:
// - accessible names that say what is shown (label-content-name-mismatch): the theme names
//   its search button "Search" and shows "Search Ctrl+K", its colour-mode button "Color mode"
//   and holds icons titled "Light" and "Dark"; myst-nb names each folded cell "Toggle hidden
//   content" and shows "Show code cell source". Font Awesome turns the icons into SVGs,
//   titled as the icons were, around DOMContentLoaded: before or after this.
// - a bibliography's entries are items of its list (aria-required-children: docutils gives
//   them the role doc-biblioentry, which ARIA 1.3 deprecates, inside role="list").
(() => {
  const mend = () => {
    document.querySelectorAll('summary[aria-label="Toggle hidden content"], .search-button-field[aria-label]')
      .forEach(e => e.removeAttribute("aria-label"));
    document.querySelectorAll(".theme-switch-button :is(svg, i)").forEach(icon => {
      icon.setAttribute("aria-hidden", "true");
      icon.removeAttribute("title");
      icon.removeAttribute("aria-labelledby");
      icon.querySelectorAll("title").forEach(title => title.remove());
    });
    document.querySelectorAll('[role="list"] > [role="doc-biblioentry"]')
      .forEach(entry => entry.setAttribute("role", "listitem"));
  };
  document.addEventListener("DOMContentLoaded", mend);
  window.addEventListener("load", mend);
})();

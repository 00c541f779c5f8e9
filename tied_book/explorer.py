"""The introduction's explorer of what tying saves: one HTML fragment with a small script.

The same fragment is live in the static book, with no kernel, and in Jupyter (which runs
the scripts of trusted outputs): when the reader picks a preset or types V, d or the rest
of the model, the script recomputes the figures in the browser. Python writes the presets
of ``tied_book.savings`` into the fragment as JSON and fills in the figures of the first one,
so the page reads right before the script runs, or without it. The arithmetic in the script
is ``Saving``'s, a product and two sums; ``tests/test_browser.py`` checks that the browser
shows exactly ``figures()`` for every preset and for typed numbers.
"""
from __future__ import annotations

import json
import uuid
from html import escape

from .savings import BYTES_PER_PARAM, PRESETS, Preset, Saving, human

CUSTOM = "custom"
# (label, smallest, largest) of each number box. Totals stay below 2**53, where a browser's
# numbers are still exact integers.
BOXES = {"vocab": ("vocabulary V", 1, 10**7), "d_model": ("width d", 1, 10**6),
         "rest": ("rest of the model", 0, 10**13)}
ROWS = {"matrix": "one (V, d) matrix: what tying saves", "tied": "whole model, tied",
        "untied": "whole model, untied"}
# Labels wrap on a phone; a figure wraps only between a count and its short form, since
# every other space in the figures is a no-break space (_short).
LABEL, FIGURE = "padding:2px 6px;text-align:left;min-width:8em", "padding:2px 6px;text-align:right"
RULE = "border-bottom:1px solid color-mix(in srgb, currentColor 30%, transparent)"


def _short(n: float, unit: str = "") -> str:
    """``human()`` with a no-break space, so that ``38.6 M`` stays on one line."""
    return human(n, unit).replace(" ", "\u00a0")


def _params(n: int) -> str:
    return f"{n:,} ({_short(n)})"


def figures(s: Saving) -> dict[str, str]:
    """Every figure the explorer shows for one model, keyed by its place in the page."""
    shown = {}
    for row, n in zip(ROWS, (s.matrix, s.tied_total, s.untied_total)):
        shown[row] = _params(n)
        shown |= {f"{row}_{dtype}": _short(n * size, "B") for dtype, size in BYTES_PER_PARAM.items()}
    shown["share_of_untied"] = f"{s.share_of_untied:.1%}"
    shown["share_of_tied"] = f"{s.share_of_tied:.1%}"
    if isinstance(s, Preset):
        shown |= {"checkpoint": s.checkpoint, "tie": "tied" if s.tied else "untied",
                  "total": _params(s.total), "note": s.note}
    return shown


def _figure(key: str, shown: dict[str, str], tag: str = "span", style: str = "") -> str:
    style = f" style='{style}'" if style else ""
    return f"<{tag} data-figure='{key}'{style}>{escape(shown.get(key, ''))}</{tag}>"


def _row(cells: list[str], tag: str = "td") -> str:
    """One table row: the label, then the figures; a header row is ruled below."""
    rule = f";{RULE}" if tag == "th" else ""
    return "<tr>" + "".join(f"<{tag} style='{FIGURE if i else LABEL}{rule}'>{cell}</{tag}>"
                            for i, cell in enumerate(cells)) + "</tr>"


def explorer_html(start: str = "GPT-2 small") -> str:
    """The explorer, showing ``start``'s figures until the reader changes something."""
    chosen, shown = PRESETS[start], figures(PRESETS[start])
    root = f"tied-explorer-{uuid.uuid4().hex}"
    options = "".join(f"<option{' selected' if name == start else ''}>{escape(name)}</option>"
                      for name in [*PRESETS, CUSTOM])
    boxes = "".join(
        f"<label style='white-space:nowrap'>{label} <input type='number' data-box='{key}' "
        f"min='{low}' max='{high}' step='1' value='{getattr(chosen, key)}' required "
        f"style='width:{len(str(high)) + 3}ch'></label>"
        for key, (label, low, high) in BOXES.items())
    table = _row(["", "parameters", *BYTES_PER_PARAM], "th") + "".join(
        _row([label, _figure(row, shown),
              *(_figure(f"{row}_{dtype}", shown) for dtype in BYTES_PER_PARAM)])
        for row, label in ROWS.items())
    units = ", ".join(f"{dtype}: {size}" for dtype, size in BYTES_PER_PARAM.items())
    data = {"presets": {name: {"vocab": p.vocab, "d_model": p.d_model, "rest": p.rest,
                               "tied": p.tied, "checkpoint": p.checkpoint, "note": p.note}
                        for name, p in PRESETS.items()},
            "bytes": BYTES_PER_PARAM, "custom": CUSTOM}
    # "</" would end the script element early; JSON allows "<\/".
    data_json = json.dumps(data).replace("</", "<\\/")
    return (
        f"<div class='tied-explorer' id='{root}'>"
        "<div style='display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin:4px 0 8px'>"
        f"<label>model <select data-box='preset'>{options}</select></label>{boxes}</div>"
        f"<div class='tied-scroll'><table style='border-collapse:collapse'>{table}</table></div>"
        "<p style='margin:6px 0'>Tying removes "
        f"{_figure('share_of_untied', shown, 'b')} of the untied model; the shared matrix is "
        f"{_figure('share_of_tied', shown, 'b')} of the tied one.</p>"
        "<p data-published style='margin:6px 0'>As published ("
        f"{_figure('checkpoint', shown)}): {_figure('tie', shown, 'b')}, "
        f"{_figure('total', shown)} parameters. {_figure('note', shown)}</p>"
        f"<p style='margin:0;opacity:.75'>{units} bytes per parameter; "
        "1 MB = 10<sup>6</sup> bytes.</p>"
        f"<script type='application/json'>{data_json}</script>"
        f"<script>({EXPLORER_JS})(document.getElementById('{root}'));</script>"
        "</div>")


# The browser's half: Saving's arithmetic and human()'s formatting (_short), for typed numbers.
EXPLORER_JS = """function (root) {
  const data = JSON.parse(root.querySelector("script[type='application/json']").textContent);
  const box = name => root.querySelector(`[data-box='${name}']`);
  const numbers = ["vocab", "d_model", "rest"];
  // Python's f"{n:.3g}" for 0 <= n < 999.5, and human() around it.
  const g3 = x => String(Number(x.toPrecision(3)));
  const human = (n, unit = "") => {
    const prefixes = ["", "k", "M", unit ? "G" : "B", "T"];
    let i = 0;
    while (i < prefixes.length - 1 && Math.abs(n) >= 999.5 * 1000 ** i) i++;
    return `${g3(n / 1000 ** i)} ${prefixes[i]}${unit}`.trimEnd();
  };
  const short = (n, unit) => human(n, unit).replaceAll(" ", "\u00a0");
  const params = n => `${n.toLocaleString("en-US")} (${short(n)})`;
  const percent = x => `${(100 * x).toFixed(1)}%`;

  const figures = (s, preset) => {
    const matrix = s.vocab * s.d_model, tied = s.rest + matrix, untied = s.rest + 2 * matrix;
    const shown = {};
    for (const [row, n] of [["matrix", matrix], ["tied", tied], ["untied", untied]]) {
      shown[row] = params(n);
      for (const [dtype, size] of Object.entries(data.bytes)) shown[`${row}_${dtype}`] = short(n * size, "B");
    }
    shown.share_of_untied = percent(matrix / untied);
    shown.share_of_tied = percent(matrix / tied);
    if (preset) {
      Object.assign(shown, {checkpoint: preset.checkpoint, tie: preset.tied ? "tied" : "untied",
                            total: params(preset.tied ? tied : untied), note: preset.note});
    }
    return shown;
  };

  const show = () => {
    const preset = data.presets[box("preset").value];
    if (numbers.some(name => !box(name).checkValidity())) return;   // keep the last figures
    const typed = Object.fromEntries(numbers.map(name => [name, Number(box(name).value)]));
    const shown = figures(typed, preset);
    root.querySelectorAll("[data-figure]").forEach(e => { e.textContent = shown[e.dataset.figure] ?? ""; });
    root.querySelector("[data-published]").hidden = !preset;
  };
  box("preset").addEventListener("change", () => {
    const preset = data.presets[box("preset").value];
    if (preset) numbers.forEach(name => { box(name).value = preset[name]; });
    show();
  });
  numbers.forEach(name => box(name).addEventListener("input", () => {
    box("preset").value = data.custom;   // an edited number is no longer the preset
    show();
  }));
}"""


class SavingsExplorer:
    """Pick a preset, or type V, d and the rest of the model; the figures follow.

    Editing a number switches the dropdown to ``custom``, starting from the preset's values.
    Displays itself as the HTML fragment of ``explorer_html``.
    """

    def __init__(self, start: str = "GPT-2 small"):
        if start not in PRESETS:
            raise ValueError(f"unknown preset {start!r}; the presets are {', '.join(PRESETS)}")
        self.start = start

    def _repr_html_(self) -> str:
        return explorer_html(self.start)


def presets_html() -> str:
    """Every preset in one static table, a column each (readable without JavaScript)."""
    presets = PRESETS.values()
    rows = [
        ("V", [f"{p.vocab:,}" for p in presets]),
        ("d", [f"{p.d_model:,}" for p in presets]),
        ("as published", ["tied" if p.tied else "untied" for p in presets]),
        ("parameters", [_short(p.total) for p in presets]),
        ("saved: V × d", [_short(p.matrix) for p in presets]),
        *((f"saved, {dtype}", [_short(p.saved_bytes(dtype), "B") for p in presets])
          for dtype in BYTES_PER_PARAM),
        ("saved ÷ untied total", [f"{p.share_of_untied:.1%}" for p in presets]),
        ("V × d ÷ tied total", [f"{p.share_of_tied:.1%}" for p in presets]),
    ]
    head = _row(["", *(escape(p.name) for p in presets)], "th")
    body = "".join(_row([label, *cells]) for label, cells in rows)
    return f"<div class='tied-scroll'><table style='border-collapse:collapse'>{head}{body}</table></div>"

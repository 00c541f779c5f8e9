"""The introduction's explorer of what tying saves: ipywidgets over ``grader.savings``."""
from __future__ import annotations

from html import escape

import ipywidgets as w

from .savings import BYTES_PER_PARAM, PRESETS, Preset, Saving, human

CUSTOM = "custom"
PAD = "padding:2px 6px;white-space:nowrap"
RULE = "border-bottom:1px solid #d0d7de"


def _row(cells, tag: str = "td") -> str:
    """One table row: the label on the left, the figures aligned on the right."""
    rule = f";{RULE}" if tag == "th" else ""
    return "<tr>" + "".join(
        f"<{tag} style='{PAD};text-align:{'left' if i == 0 else 'right'}{rule}'>{c}</{tag}>"
        for i, c in enumerate(cells)) + "</tr>"


def _params(n: int) -> str:
    return f"{n:,} ({human(n)})"


def _sizes(n: int) -> list[str]:
    return [human(n * size, "B") for size in BYTES_PER_PARAM.values()]


def figures_html(s: Saving) -> str:
    """The figures for one model: the matrix, both totals, in parameters and bytes, and shares."""
    head = _row(["", "parameters", *BYTES_PER_PARAM], "th")
    rows = [
        ("one (V, d) matrix: what tying saves", s.matrix),
        ("whole model, tied", s.tied_total),
        ("whole model, untied", s.untied_total),
    ]
    body = "".join(_row([label, _params(n), *_sizes(n)]) for label, n in rows)
    text = (f"Tying removes <b>{s.share_of_untied:.1%}</b> of the untied model; the shared matrix "
            f"is <b>{s.share_of_tied:.1%}</b> of the tied one.")
    if isinstance(s, Preset):
        tie = "tied" if s.tied else "untied"
        text += (f"<br>As published ({escape(s.checkpoint)}): <b>{tie}</b>, "
                 f"{_params(s.total)} parameters. {escape(s.note)}")
    return (f"<table style='border-collapse:collapse'>{head}{body}</table>"
            f"<p style='margin:6px 10px'>{text}</p>"
            "<p style='margin:0 10px;color:#57606a'>fp32: 4 bytes per parameter, bf16: 2; "
            "1 MB = 10<sup>6</sup> bytes.</p>")


def presets_html() -> str:
    """Every preset in one static table, a column each (readable without JavaScript)."""
    presets = PRESETS.values()
    rows = [
        ("V", [f"{p.vocab:,}" for p in presets]),
        ("d", [f"{p.d_model:,}" for p in presets]),
        ("as published", ["tied" if p.tied else "untied" for p in presets]),
        ("parameters", [human(p.total) for p in presets]),
        ("saved: V × d", [human(p.matrix) for p in presets]),
        *((f"saved, {dtype}", [human(p.saved_bytes(dtype), "B") for p in presets])
          for dtype in BYTES_PER_PARAM),
        ("saved ÷ untied total", [f"{p.share_of_untied:.1%}" for p in presets]),
        ("V × d ÷ tied total", [f"{p.share_of_tied:.1%}" for p in presets]),
    ]
    head = _row(["", *(escape(p.name) for p in presets)], "th")
    body = "".join(_row([label, *cells]) for label, cells in rows)
    return f"<table style='border-collapse:collapse'>{head}{body}</table>"


class SavingsExplorer(w.VBox):
    """Pick a preset, or type V, d and the rest of the model; the figures follow.

    Editing a number switches the dropdown to ``custom``, starting from the preset's values.
    """

    def __init__(self, start: str = "GPT-2 small"):
        super().__init__()
        label = {"description_width": "initial"}
        self.preset = w.Dropdown(options=[*PRESETS, CUSTOM], value=start, description="model",
                                 style=label)
        self.vocab = w.BoundedIntText(min=1, max=10**7, description="vocabulary V", style=label)
        self.d_model = w.BoundedIntText(min=1, max=10**6, description="width d", style=label)
        self.rest = w.BoundedIntText(min=0, max=10**13, description="rest of the model",
                                     style=label, layout=w.Layout(width="20em"))
        self.figures = w.HTML()
        self._filling = False
        self.preset.observe(self._on_preset, "value")
        for box in (self.vocab, self.d_model, self.rest):
            box.observe(self._on_number, "value")
        self.children = [self.preset, w.HBox([self.vocab, self.d_model, self.rest]), self.figures]
        self._on_preset()

    def saving(self) -> Saving:
        """What the widgets show now: the chosen preset, or the typed numbers."""
        if self.preset.value != CUSTOM:
            return PRESETS[self.preset.value]
        return Saving(self.vocab.value, self.d_model.value, self.rest.value)

    def _on_preset(self, change=None) -> None:
        if self.preset.value != CUSTOM:
            chosen = PRESETS[self.preset.value]
            self._filling = True   # the boxes take the preset's numbers; that is not an edit
            self.vocab.value, self.d_model.value = chosen.vocab, chosen.d_model
            self.rest.value = chosen.rest
            self._filling = False
        self.figures.value = figures_html(self.saving())

    def _on_number(self, change) -> None:
        if self._filling:
            return
        if self.preset.value != CUSTOM:
            self.preset.value = CUSTOM   # redraws through _on_preset
        else:
            self.figures.value = figures_html(self.saving())

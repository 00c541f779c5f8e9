"""The book's figures, drawn with matplotlib while a page runs, shown as SVG.

A figure is ``WIDTH`` inches wide with text of 11 pt or more. A phone's 390 px screen shows
it about 342 px wide, so 11 units of text in an SVG of ``WIDTH`` x 72 units (plus the few
that a label sticking out adds: the figure is cropped to what it draws) stay 11 px or
more; a desktop shows it at its own size, about 430 px. The text stays text in the SVG
(``svg.fonttype`` ``none``), with no date in it, so that a rebuild writes the same file.
A figure is drawn on a white card with dark text, which stays readable in dark mode.
A page calls ``use_book_style()`` once, then the functions that draw its figures; each one
takes the numbers the page computed, draws nothing it did not receive, and returns the
figure as an SVG image (``svg``), the value its cell shows.
"""
from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import SVG
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

WIDTH = 4.5
INK, MUTED, ACCENT, SECOND = "#1f2328", "#6e7781", "#0969da", "#cf222e"


def use_book_style() -> None:
    plt.rcParams.update({
        "figure.figsize": (WIDTH, 3.2), "svg.fonttype": "none", "svg.hashsalt": "tied",
        "figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white",
        "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
        "xtick.labelsize": 11, "ytick.labelsize": 11, "legend.fontsize": 11,
        "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": MUTED,
        "xtick.color": INK, "ytick.color": INK,
        "axes.spines.top": False, "axes.spines.right": False,
        "figure.constrained_layout.use": True,
    })


def svg(fig: Figure) -> SVG:
    """The figure as an SVG image (text kept as text), closed so that pyplot shows it no more."""
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.02)
    plt.close(fig)
    return SVG(data=out.getvalue())


# Chapter 04: the LM head of a small GPT

def gradient_paths(lookup: np.ndarray, head: np.ndarray, tokens: np.ndarray) -> SVG:
    """Row norms of the two contributions to dL/dE, one bar per token id."""
    ids = np.arange(len(lookup))
    counts = np.bincount(tokens, minlength=len(lookup))
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 4.4), sharex=True)
    for ax, path, colour, title in (
        (axes[0], lookup, ACCENT, "lookup: only the tokens in the sequence"),
        (axes[1], head, SECOND, "projection: every row of E"),
    ):
        ax.bar(ids, np.linalg.norm(path, axis=1), color=colour, width=0.8)
        ax.set_title(title, loc="left")
        ax.set_ylabel("row norm")
    for v in np.flatnonzero(counts > 1):
        top = np.linalg.norm(lookup[v])
        axes[0].annotate(f"token {v}, twice", (v, top), (v + 3, top), va="center",
                         arrowprops={"arrowstyle": "-", "color": MUTED})
    axes[1].set_xlabel("token id (row of E)")
    return svg(fig)


def logit_lens(next_prob: np.ndarray, top: np.ndarray, tokens: np.ndarray,
               depths: list[str]) -> SVG:
    """The lens at each position (rows) and depth (columns): the colour is the probability
    of the true next token, the number the token the lens reads."""
    fig, ax = plt.subplots(figsize=(WIDTH, 0.2 * len(tokens) + 0.9))
    image = ax.imshow(next_prob.T, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for (col, row), token in np.ndenumerate(top):
        ax.text(col, row, str(token), ha="center", va="center", fontsize=11,
                color="white" if next_prob[col, row] > 0.55 else INK)
    ax.set_xticks(range(len(depths)), depths)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(tokens)), [str(t) for t in tokens])
    ax.set_ylabel("input token at each position")
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    fig.colorbar(image, ax=ax, label="p(next token)", fraction=0.06, pad=0.03)
    return svg(fig)


def temperatures(row: np.ndarray, taus: list[float], exact: list[np.ndarray],
                 drawn: list[np.ndarray]) -> SVG:
    """softmax(row / tau) as bars, and the share of each token among the draws as dots."""
    fig, axes = plt.subplots(1, len(taus), figsize=(WIDTH, 2.9), sharey=True)
    ids = np.arange(len(row))
    for ax, tau, q, share in zip(axes, taus, exact, drawn):
        ax.bar(ids, q, color=ACCENT, width=0.75, label="softmax(z / τ)")
        ax.plot(ids, share, "o", color=SECOND, markersize=6, label="share of draws")
        ax.set_title(f"τ = {tau:g}")
        ax.set_xticks(ids[::2])
        ax.set_xlabel("token")
    axes[0].set_ylabel("probability")
    axes[0].set_ylim(0, 1.05)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
               frameon=False)
    return svg(fig)


def training_curve(losses: np.ndarray, start: float, floor: float) -> SVG:
    """The training loss, between the uniform guess and the best a bigram table can do."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    ax.plot(np.arange(1, len(losses) + 1), losses, color=ACCENT, linewidth=2)
    for level, text, side in ((start, "ln V: a uniform guess", "bottom"),
                              (floor, "the full table of character pairs", "top")):
        ax.axhline(level, color=MUTED, linestyle="--", linewidth=1)
        ax.text(len(losses), level + (0.03 if side == "bottom" else -0.03), text,
                ha="right", va=side, color=MUTED)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_ylim(floor - 0.4, start + 0.3)
    return svg(fig)


# Chapter 05: a masked language model

def attention_patterns(weights: dict[str, np.ndarray]) -> SVG:
    """Attention weights (query rows, key columns) per mask, one above the other; masked-out
    cells hatched."""
    fig, axes = plt.subplots(len(weights), 1, figsize=(WIDTH, 3.3 * len(weights)))
    for ax, (title, w) in zip(axes, weights.items()):
        ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
        for (q, k), value in np.ndenumerate(w):
            if value == 0:
                ax.add_patch(Rectangle((k - 0.5, q - 0.5), 1, 1, facecolor="#eaeef2",
                                       hatch="///", edgecolor=MUTED, linewidth=0))
            else:
                ax.text(k, q, f"{value:.2f}", ha="center", va="center", fontsize=11,
                        color="white" if value > 0.55 else INK)
        ax.set_title(title)
        ax.set_xticks(range(w.shape[1]))
        ax.set_yticks(range(w.shape[0]))
        ax.set_ylabel("query position")
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
    axes[-1].set_xlabel("key position")
    return svg(fig)


def _flow(ax, x: float, steps: list[str], residual_from: list[int], title: str) -> None:
    """One block as boxes from bottom to top; a residual arrow joins each (+)."""
    ys = np.arange(len(steps)) * 1.0
    for y, step in zip(ys, steps):
        add = step == "+"
        ax.add_patch(FancyBboxPatch(
            (x - (0.22 if add else 0.9), y - 0.27), 0.44 if add else 1.8, 0.54,
            boxstyle="circle,pad=0" if add else "round,pad=0.04,rounding_size=0.12",
            facecolor="white" if add else ("#ddf4ff" if "LN" in step else "#fff8c5"),
            edgecolor=INK, linewidth=1.2))
        ax.text(x, y, step, ha="center", va="center", fontsize=12)
    for y0, y1 in zip(ys[:-1], ys[1:]):
        ax.annotate("", (x, y1 - 0.28), (x, y0 + 0.28),
                    arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 1.2})
    # Each residual leaves the main path just above the box it copies (between that box and
    # the next one), runs up a lane on the left and enters its (+) from the side, so a
    # residual that starts after a sum is drawn as leaving that sum, not the input.
    lane = x - 1.15
    for start, end in zip(residual_from[::2], residual_from[1::2]):
        branch = ys[start] + 0.5
        ax.plot([x, lane, lane], [branch, branch, ys[end]], color=SECOND, lw=1.6)
        ax.plot([x], [branch], "o", color=SECOND, markersize=4)
        ax.annotate("", (x - 0.22, ys[end]), (lane, ys[end]),
                    arrowprops={"arrowstyle": "-|>", "color": SECOND, "lw": 1.6})
    ax.text(x, ys[-1] + 0.75, title, ha="center", fontsize=12, weight="bold")


def pre_and_post_ln() -> SVG:
    """A pre-LN and a post-LN block side by side, residual paths in red."""
    fig, ax = plt.subplots(figsize=(WIDTH, 5.6))
    pre = ["x", "LN", "MHA", "+", "LN", "FFN", "+"]
    post = ["x", "MHA", "+", "LN", "FFN", "+", "LN"]
    _flow(ax, 0, pre, [0, 3, 3, 6], "pre-LN (GPT-2,\nthe exercise)")
    _flow(ax, 4, post, [0, 2, 3, 5], "post-LN\n(BERT)")
    ax.text(0, -0.7, "the stream x is never\nnormalised in the block", ha="center", va="top", color=MUTED)
    ax.text(4, -0.7, "every block ends\nwith a LayerNorm", ha="center", va="top",
            color=MUTED)
    ax.set_xlim(-2.1, 6.1)
    ax.set_ylim(-2.3, 7.6)
    ax.axis("off")
    return svg(fig)


# Chapter 07: one matrix, three frameworks

def _matrix(ax, x: float, top: float, rows: int, cols: int, name: str, shape: str,
            colour: str) -> None:
    """A rows x cols array as a grid of cells, centred on x, hanging from top."""
    cell = 0.26
    left = x - cols * cell / 2
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((left + c * cell, top - (r + 1) * cell), cell, cell,
                                   facecolor=colour, edgecolor="white", linewidth=0.8))
    ax.text(x, top + 0.12, name, ha="center", va="bottom", family="monospace")
    ax.text(x, top - rows * cell - 0.12, shape, ha="center", va="top")


def framework_layouts(vocab: int, d: int) -> SVG:
    """Where Linen, NNX and PyTorch keep the tied matrix, and how each stores a dense
    layer to the vocabulary (an untied head)."""
    fig, ax = plt.subplots(figsize=(WIDTH, 7.4))
    columns = {"Linen": 1.5, "NNX": 4.8, "PyTorch": 8.1}
    ax.text(0.0, 14.6, "tied", weight="bold", color=MUTED)
    ax.text(0.0, 6.5, "untied head", weight="bold", color=MUTED)
    ax.axhline(6.9, color=MUTED, linewidth=0.8, linestyle=":")
    for title, x in columns.items():
        ax.text(x, 14.0, title, ha="center", fontsize=13, weight="bold")
    for title, prefix in (("Linen", "params/"), ("NNX", "")):
        x = columns[title]
        _matrix(ax, x, 12.7, vocab, d, f"{prefix}embed/\nembedding", f"(V, d)\n= ({vocab}, {d})",
                ACCENT)
        ax.text(x, 8.6, "attend:\nh @ embedding.T", ha="center", va="top", color=MUTED)
        _matrix(ax, x, 4.6, d, vocab, f"{prefix}head/\nkernel", f"(in, out)\n= ({d}, {vocab})",
                SECOND)
    x = columns["PyTorch"]
    _matrix(ax, x, 12.7, vocab, d, "embed.weight", f"({vocab}, {d})", ACCENT)
    ax.text(x, 9.3, "lm_head.weight:\nthe same\nParameter", ha="center", va="top", color=MUTED)
    _matrix(ax, x, 4.6, vocab, d, "lm_head.weight", f"(out, in)\n= ({vocab}, {d})", SECOND)
    ax.set_xlim(-0.1, 9.7)
    ax.set_ylim(-0.2, 15.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return svg(fig)


def powers_of_ten(axis, every: int = 1) -> None:
    """Ticks of a log axis at the powers of ten it shows (``every`` other one), written 10⁻⁴
    in plain text: no mathtext superscript, which is drawn smaller than the rest."""
    superscript = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    low, high = np.log10(sorted(axis.get_view_interval()))
    ticks = [10.0 ** k for k in range(int(np.ceil(low)), int(np.floor(high)) + 1) if k % every == 0]
    axis.set_ticks(ticks, ["1" if t == 1 else f"10{str(int(np.log10(t))).translate(superscript)}"
                           for t in ticks])
    axis.set_minor_formatter("")


def rounding_errors(bound: np.ndarray, errors: dict[str, np.ndarray]) -> SVG:
    """How much of its worst-case bound each logit's float32 error uses, per framework."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.4))
    bins = np.logspace(-6, 0.3, 50)
    for (name, error), colour in zip(errors.items(), (ACCENT, SECOND)):
        used = error / bound
        ax.hist(np.clip(used, bins[0], None), bins=bins, color=colour, alpha=0.55,
                label=f"{name}: at most {used.max():.1%}")
    ax.axvline(1.0, color=INK, linewidth=1.5)
    ax.text(0.9, ax.get_ylim()[1] * 0.92, "the bound", ha="right", va="top")
    ax.set_xscale("log")
    powers_of_ten(ax.xaxis, every=2)
    ax.set_xlabel("|float32 logit − float64| / bound")
    ax.set_ylabel("logits")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, frameon=False)
    return svg(fig)

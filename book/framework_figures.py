"""Figures of the introduction and the framework chapters (01 Linen, 02 NNX, 03 PyTorch).

They share the book's style (``figures.use_book_style``: 7.5 in at 100 dpi, text of 11 pt
or more, dark ink on white, which the theme shows on a light card in dark mode). Each
function draws one figure from the numbers its page computed and returns it as a PNG image,
which the page shows as its cell's value.
"""
from __future__ import annotations

import functools
import io

import numpy as np
from IPython.display import Image
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from figures import ACCENT, DPI, INK, MUTED, SECOND, WIDTH, use_book_style

LOOKUP, HEAD = ACCENT, SECOND                 # the two paths into E, as in chapter 04
LOOKUP_FILL, HEAD_FILL, PALE = "#d6e6fb", "#f8d7da", "#eef1f4"


def drawing(height: float):
    """Turn ``draw(fig, ...)`` into a function that returns its figure as a PNG image."""
    def wrap(draw):
        @functools.wraps(draw)
        def render(*args, **kwargs) -> Image:
            use_book_style()
            fig = Figure(figsize=(WIDTH, height), dpi=DPI)
            draw(fig, *args, **kwargs)
            png = io.BytesIO()
            fig.savefig(png, format="png", dpi=DPI)
            return Image(data=png.getvalue(), format="png")
        return render
    return wrap


# Drawing pieces: units are those of ``canvas``, about 2 per inch.

def canvas(fig: Figure, width: float, height: float):
    ax = fig.add_subplot()
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def grid(ax, x, y, rows, cols, cell=0.45, fill=None):
    """A matrix of rows × cols cells, top-left corner at (x, y); ``fill``: (row, col) -> colour."""
    fill = fill or {}
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x + c * cell, y - (r + 1) * cell), cell, cell,
                                   facecolor=fill.get((r, c), "white"), edgecolor=MUTED, lw=1))


def arrow(ax, start, end, color=INK, curve=0.0, lw=1.6):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=16, color=color,
                                 lw=lw, connectionstyle=f"arc3,rad={curve}"))


def node(ax, x, y, text, color=INK, fill="white", w=2.4, h=0.8, size=12):
    """A rounded box centred at (x, y); returns the centre."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.08",
                                facecolor=fill, edgecolor=color, lw=1.6))
    ax.text(x, y, text, ha="center", va="center", color=color, fontsize=size)
    return x, y


def link(ax, a, b, label="", color=INK, curve=0.0, side=0.0):
    """An arrow from the box centred at ``a`` down to the one at ``b``, labelled midway."""
    (x0, y0), (x1, y1) = a, b
    arrow(ax, (x0 + side, y0 - 0.45), (x1 + side / 3, y1 + 0.45), color=color, curve=curve)
    if label:
        ax.text((x0 + x1) / 2 + side * 2.2, (y0 + y1) / 2, label, ha="center", va="center",
                fontsize=11, color=color, family="monospace")


def legend_patches(ax, labels_colors, **kw):
    ax.legend(handles=[Rectangle((0, 0), 1, 1, color=c) for _, c in labels_colors],
              labels=[label for label, _ in labels_colors], frameon=False, **kw)


# Introduction

@drawing(height=4.1)
def one_matrix_two_directions(fig, ids=(1, 4), vocab=6, d=4, scored=2):
    """E read by rows on the way in, and multiplied transposed on the way out."""
    ax = canvas(fig, 15, 8.2)
    c = 0.45
    ex, ey = 6.2, 7.7                                        # E: (V, d), top centre
    fill = {(v, j): LOOKUP_FILL for v in ids for j in range(d)}
    fill.update({(scored, j): HEAD_FILL for j in range(d)})
    grid(ax, ex, ey, vocab, d, c, fill)
    ax.text(ex + d * c / 2, ey + 0.25, "$E$   (V × d)", ha="center", va="bottom", fontsize=13)
    for v in range(vocab):
        ax.text(ex - 0.15, ey - (v + 0.5) * c, str(v), ha="right", va="center", fontsize=11,
                color=MUTED)
    ax.text(ex - 0.6, ey - 0.1, "row v is token v", ha="right", va="top", fontsize=11,
            color=MUTED)

    by = 2.2                                                 # the forward pass, left to right
    ax.text(0.1, by - c, f"ids\n{list(ids)}", ha="left", va="center", fontsize=12)
    xx = 1.6
    grid(ax, xx, by, len(ids), d, c, {(t, j): LOOKUP_FILL for t in range(len(ids))
                                      for j in range(d)})
    ax.text(xx + d * c / 2, by - len(ids) * c - 0.25, r"$x = E[\mathrm{ids}]$", ha="center",
            va="top", fontsize=12, color=LOOKUP)
    node(ax, 5.05, by - c, "blocks", w=1.9, h=0.75)
    arrow(ax, (xx + d * c + 0.1, by - c), (4.0, by - c))
    hx = 6.5
    grid(ax, hx, by, len(ids), d, c)
    ax.text(hx + d * c / 2, by - len(ids) * c - 0.25, "$h$", ha="center", va="top", fontsize=12)
    arrow(ax, (6.1, by - c), (hx - 0.1, by - c))
    lx = 9.6
    grid(ax, lx, by, len(ids), vocab, c, {(t, scored): HEAD_FILL for t in range(len(ids))})
    ax.text(lx + vocab * c / 2, by - len(ids) * c - 0.25, r"logits $= h\,E^{\top}$   (T × V)",
            ha="center", va="top", fontsize=12, color=HEAD)
    arrow(ax, (hx + d * c + 0.1, by - c), (lx - 0.1, by - c))

    for t, v in enumerate(ids):                              # in: rows of E become x
        arrow(ax, (ex - 0.05, ey - (v + 0.5) * c), (xx + d * c, by - (t + 0.5) * c),
              color=LOOKUP, curve=0.25 - 0.1 * t)
    ax.text(1.9, 4.6, "in: look up\nrow ids[t]", ha="center", fontsize=12, color=LOOKUP)
    arrow(ax, (ex + d * c + 0.05, ey - (scored + 0.5) * c), (lx + (scored + 0.5) * c, by + 0.05),
          color=HEAD, curve=-0.25)
    ax.text(10.9, 5.6, f"out: logit[t, {scored}] $= \\langle h_t, E_{scored} \\rangle$\n"
            "every row scores its token", ha="left", fontsize=12, color=HEAD)


@drawing(height=3.2)
def saved_share(fig, presets):
    """Per published model: the share of the untied model that tying removes."""
    ax = fig.add_subplot()
    names = list(presets)[::-1]
    shares = [100 * presets[n].share_of_untied for n in names]
    bars = ax.barh(names, shares, height=0.6,
                   color=[LOOKUP if presets[n].tied else MUTED for n in names])
    for bar, share in zip(bars, shares):
        ax.text(bar.get_width() + 0.4, bar.get_y() + bar.get_height() / 2, f"{share:.1f} %",
                va="center")
    ax.set_xlabel("parameters that tying removes, % of the untied model")
    ax.set_xlim(0, max(shares) * 1.5)
    legend_patches(ax, [("tied as published", LOOKUP), ("untied as published", MUTED)],
                   loc="lower right")


# Chapter 01

@drawing(height=4.4)
def tie_decisions(fig, shares: dict[str, float], tied: dict[str, bool]):
    """Checkpoints sorted by the share of one (V, d) matrix, coloured by what they do."""
    ax = fig.add_subplot()
    names = sorted(shares, key=shares.get)
    values = [100 * shares[n] for n in names]
    bars = ax.barh([n.split("/")[-1] for n in names], values, height=0.65,
                   color=[LOOKUP if tied[n] else MUTED for n in names])
    for bar, value in zip(bars, values):
        ax.text(bar.get_width() + 0.4, bar.get_y() + bar.get_height() / 2, f"{value:.1f} %",
                va="center")
    ax.set_xlabel("one (V, d) matrix, % of the model as published")
    ax.set_xlim(0, max(values) * 1.25)
    legend_patches(ax, [("ties", LOOKUP), ("unties", MUTED)], loc="lower right")


@drawing(height=3.6)
def first_loss(fig, sigmas, losses, vocab: int, marked: float):
    """Mean first loss of random logits against their standard deviation."""
    ax = fig.add_subplot()
    sigmas, losses = np.asarray(sigmas), np.asarray(losses)
    ax.plot(sigmas, losses, "o-", color=HEAD, lw=2, ms=5, label="measured")
    small = sigmas <= 3
    ax.plot(sigmas[small], np.log(vocab) + sigmas[small] ** 2 / 2, ":", color=INK, lw=2.2,
            label=r"$\ln V + \sigma^2/2$")
    ax.axhline(np.log(vocab), color=LOOKUP, ls="--", lw=1.5)
    ax.text(sigmas[-1], np.log(vocab) - 0.6, rf"$\ln V = {np.log(vocab):.1f}$: a uniform guess",
            ha="right", va="top", color=LOOKUP)
    at = losses[np.argmin(abs(sigmas - marked))]
    ax.annotate(f"σ = {marked:g}: {at:.1f}", (marked, at), xytext=(-30, 0),
                textcoords="offset points", ha="right", va="center",
                arrowprops={"arrowstyle": "-", "color": INK})
    ax.set_xlabel(r"standard deviation $\sigma$ of the first logits")
    ax.set_ylabel("first loss (nats)")
    ax.set_ylim(0, max(losses) * 1.12)
    ax.legend(loc="upper left", frameon=False)


# Chapter 02

@drawing(height=3.6)
def graph_and_leaves(fig):
    """One shared Param: a node with two edges for NNX, two leaves for a JAX pytree."""
    ax = canvas(fig, 15, 7.2)
    ax.text(3.6, 7.1, "NNX: a graph of objects", ha="center", va="top", fontsize=13)
    module = node(ax, 3.6, 5.5, "model")
    param = node(ax, 3.6, 2.9, "one nnx.Param", color=LOOKUP, fill=LOOKUP_FILL, w=3.0)
    link(ax, module, param, ".embedding", color=LOOKUP, curve=0.3, side=-0.7)
    link(ax, module, param, ".head", color=LOOKUP, curve=-0.3, side=0.7)
    ax.text(3.6, 1.6, "nnx.state, nnx.grad:\none entry, one gradient", ha="center", va="top",
            color=LOOKUP)

    ax.plot([7.5, 7.5], [0.3, 7.0], color=PALE, lw=2)
    ax.text(11.3, 7.1, "JAX: a tree of leaves", ha="center", va="top", fontsize=13)
    root = node(ax, 11.3, 5.5, "model")
    for x, name in ((9.6, "embedding"), (13.0, "head")):
        link(ax, root, node(ax, x, 2.9, f"leaf {name}", color=HEAD, fill=HEAD_FILL, w=2.9),
             color=HEAD)
    ax.text(11.3, 1.6, "jax.tree.leaves: two leaves;\njax.grad: one gradient per path",
            ha="center", va="top", color=HEAD)


# Chapter 03

@drawing(height=3.3)
def linear_layout(fig, vocab=6, d=3):
    """nn.Embedding and nn.Linear both store (V, d); the tie points the head at the embedding's."""
    ax = canvas(fig, 15, 7.4)
    ax.set_ylim(0.8, 7.4)
    c = 0.45
    for x, title, fill, below in ((1.8, "nn.Embedding(V, d)\n.weight", LOOKUP_FILL,
                                   "(V, d): row v is token v"),
                                  (6.2, "nn.Linear(d, V)\n.weight", HEAD_FILL,
                                   "(out, in) = (V, d)\nforward: x @ weight.T")):
        ax.text(x, 7.4, title, ha="center", va="top", family="monospace")
        grid(ax, x - d * c / 2, 6.4, vocab, d, c, {(v, j): fill for v in range(vocab)
                                                     for j in range(d)})
        ax.text(x, 6.4 - vocab * c - 0.2, below, ha="center", va="top")
    ax.text(4.0, 5.2, "same\nshape", ha="center", va="center", fontsize=12, color=MUTED)

    ax.plot([8.6, 8.6], [0.3, 7.2], color=PALE, lw=2)
    ax.text(11.9, 7.3, "head.weight = embed.weight", ha="center", va="top", family="monospace")
    embed, head = node(ax, 10.2, 5.6, "embed", w=2.0), node(ax, 13.6, 5.6, "head", w=2.0)
    shared = node(ax, 11.9, 3.1, "one Parameter (V, d)", color=LOOKUP, fill=LOOKUP_FILL, w=4.2)
    link(ax, embed, shared, ".weight", curve=0.15, side=-0.4)
    link(ax, head, shared, ".weight", curve=-0.15, side=0.4)
    ax.text(11.9, 1.9, "no transpose: nn.Linear applies it;\nthe head's old weight is dropped",
            ha="center", va="top", color=MUTED)


@drawing(height=3.4)
def row_gradients(fig, lookup, projection):
    """The norm of each row's gradient, per path, on a log scale: a dot per row that gets one."""
    ax = fig.add_subplot()
    rows = np.arange(len(lookup))
    for grad, color, name in ((projection, HEAD, r"projection $h\,E^\top$"),
                              (lookup, LOOKUP, "lookup E[ids]")):
        norms = np.linalg.norm(np.asarray(grad, np.float64), axis=1)
        hit = norms > 0
        ax.plot(rows[hit], norms[hit], "o", ms=3.5, color=color,
                label=f"{name}: {hit.sum()} of {len(rows)} rows")
    ax.set_yscale("log")
    ax.set_xlabel("row v of E (token v)")
    ax.set_ylabel("norm of the row's gradient")
    fig.legend(loc="outside upper center", ncols=2, frameon=False, markerscale=2)


@drawing(height=3.0)
def meta_untie(fig):
    """What to_empty does to a tie made on the meta device, and tying again."""
    ax = canvas(fig, 15, 6.8)
    ax.set_ylim(0.8, 6.8)
    stages = (("built on meta", ["one Parameter"], INK),
              ("to_empty('cpu')", ["Parameter 1", "Parameter 2"], HEAD),
              ("tie again, then init", ["one Parameter"], LOOKUP))
    for i, (title, params, color) in enumerate(stages):
        cx = 2.4 + 5.1 * i
        ax.text(cx, 6.7, title, ha="center", va="top", family="monospace")
        embed = node(ax, cx - 1.2, 4.9, "embed", w=2.1)
        head = node(ax, cx + 1.2, 4.9, "lm_head", w=2.1)
        if len(params) == 1:
            shared = node(ax, cx, 2.5, params[0], color=color, w=3.2)
            link(ax, embed, shared, curve=0.15)
            link(ax, head, shared, curve=-0.15)
        else:
            for owner, name in ((embed, params[0]), (head, params[1])):
                link(ax, owner, node(ax, owner[0], 2.5, name, color=color, w=2.0, size=11),
                     color=color)
        if i < 2:
            arrow(ax, (cx + 2.35, 3.7), (cx + 2.8, 3.7), lw=2.2)
    ax.text(7.5, 1.1, "two Parameters: one matrix more, and the first update splits them",
            ha="center", color=HEAD)


@drawing(height=2.8)
def file_sizes(fig, sizes: dict[str, int], matrix_bytes: int):
    """Bytes of each saved file, with the size of one (V, d) matrix in the axis label."""
    ax = fig.add_subplot()
    names = list(sizes)[::-1]
    kib = [sizes[n] / 1024 for n in names]
    bars = ax.barh(names, kib, height=0.6,
                   color=[MUTED if "untied" in n else LOOKUP for n in names])
    for bar, value in zip(bars, kib):
        ax.text(bar.get_width() + max(kib) * 0.01, bar.get_y() + bar.get_height() / 2,
                f"{value:,.1f} KiB", va="center")
    ax.set_xlim(0, max(kib) * 1.3)
    ax.set_xlabel(f"file size in KiB; one float32 (V, d) matrix is {matrix_bytes / 1024:,.1f} KiB")


@drawing(height=3.0)
def own_row_wins(fig, wins: dict[int, float], vocab: int):
    """How often a token's own row is the argmax of its logits, per width D."""
    ax = fig.add_subplot()
    widths = list(wins)
    bars = ax.bar([f"D = {D}" for D in widths], [100 * wins[D] for D in widths], color=LOOKUP,
                  width=0.6)
    for bar, D in zip(bars, widths):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + 2, f"{wins[D]:.0%}",
                ha="center")
    ax.set_ylim(0, 115)
    ax.set_ylabel(f"own row wins, % of {vocab} tokens")


@drawing(height=3.0)
def self_and_other_logits(fig, scores):
    """Histogram of a token's logit with itself against its logits with the other rows."""
    ax = fig.add_subplot()
    scores = np.asarray(scores)
    own = np.diag(scores)
    other = scores[~np.eye(len(scores), dtype=bool)]
    bins = np.linspace(min(other.min(), own.min()), max(other.max(), own.max()), 80)
    ax.hist(other, bins=bins, color=MUTED, density=True, label="with another row")
    ax.hist(own, bins=bins, color=HEAD, density=True, alpha=0.85,
            label="with itself, ‖E_v‖²")
    ax.set_xlabel("logit at initialisation")
    ax.set_ylabel("density")
    ax.legend(frameon=False, loc="upper center")

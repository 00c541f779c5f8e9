"""Figures of the introduction and the framework chapters (01 Linen, 02 NNX, 03 PyTorch).

They share the book's style (``figures.use_book_style``: ``WIDTH`` inches wide, text of
11 pt or more, dark ink on white, which the theme shows on a light card in dark mode). Each
function draws one figure from the numbers its page computed and returns it as an SVG image
(``figures.svg``), which the page shows as its cell's value.
"""
from __future__ import annotations

import functools

import numpy as np
from IPython.display import SVG
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from figures import ACCENT, INK, MUTED, SECOND, WIDTH, svg, use_book_style

LOOKUP, HEAD = ACCENT, SECOND                 # the two paths into E, as in chapter 04
LOOKUP_FILL, HEAD_FILL, PALE = "#d6e6fb", "#f8d7da", "#eef1f4"


def drawing(height: float):
    """Turn ``draw(fig, ...)`` into a function that returns its figure as an SVG image."""
    def wrap(draw):
        @functools.wraps(draw)
        def render(*args, **kwargs) -> SVG:
            use_book_style()
            fig = Figure(figsize=(WIDTH, height), layout="constrained")
            draw(fig, *args, **kwargs)
            return svg(fig)
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


def legend_patches(holder, labels_colors, **where):
    """A legend of coloured squares in one row, by default above the axes, clear of the bars."""
    where = where or {"loc": "lower center", "bbox_to_anchor": (0.5, 1.0)}
    holder.legend(handles=[Rectangle((0, 0), 1, 1, color=c) for _, c in labels_colors],
                  labels=[label for label, _ in labels_colors], frameon=False,
                  ncols=len(labels_colors), **where)


# Introduction

@drawing(height=4.2)
def one_matrix_two_directions(fig, ids=(1, 4), vocab=6, d=4, scored=2):
    """E read by rows on the way in, and multiplied transposed on the way out."""
    ax = canvas(fig, 9.6, 8.4)
    c = 0.4
    ex, ey = 3.9, 7.6                                        # E: (V, d), top-left corner
    fill = {(v, j): LOOKUP_FILL for v in ids for j in range(d)}
    fill.update({(scored, j): HEAD_FILL for j in range(d)})
    grid(ax, ex, ey, vocab, d, c, fill)
    ax.text(ex + d * c / 2, ey + 0.2, "E  (V × d)", ha="center", va="bottom", fontsize=13)
    for v in range(vocab):
        ax.text(ex - 0.12, ey - (v + 0.5) * c, str(v), ha="right", va="center", color=MUTED)
    ax.text(ex - 0.5, ey - 0.1, "row v:\ntoken v", ha="right", va="top", color=MUTED)

    by = 2.6                                                 # the forward pass, left to right
    ax.text(0.05, by - c, f"ids\n{list(ids)}", ha="left", va="center")
    xx = 1.25
    grid(ax, xx, by, len(ids), d, c, {(t, j): LOOKUP_FILL for t in range(len(ids))
                                      for j in range(d)})
    ax.text(xx + d * c / 2, by - len(ids) * c - 0.2, "x = E[ids]", ha="center", va="top",
            color=LOOKUP)
    node(ax, 3.95, by - c, "blocks", w=1.3, h=0.6, size=11)
    arrow(ax, (xx + d * c + 0.05, by - c), (3.2, by - c))
    hx = 5.05
    grid(ax, hx, by, len(ids), d, c)
    ax.text(hx + d * c / 2, by - len(ids) * c - 0.2, "h", ha="center", va="top")
    arrow(ax, (4.7, by - c), (hx - 0.05, by - c))
    lx = 7.15
    grid(ax, lx, by, len(ids), vocab, c, {(t, scored): HEAD_FILL for t in range(len(ids))})
    ax.text(lx + vocab * c / 2, by - len(ids) * c - 0.2, "logits = h Eᵀ\n(T × V)",
            ha="center", va="top", color=HEAD)
    arrow(ax, (hx + d * c + 0.05, by - c), (lx - 0.05, by - c))

    for t, v in enumerate(ids):                              # in: rows of E become x
        arrow(ax, (ex - 0.05, ey - (v + 0.5) * c), (xx + d * c / 2, by + 0.05),
              color=LOOKUP, curve=0.2 - 0.1 * t)
    ax.text(0.05, 4.6, "in: look up\nrow ids[t]", ha="left", color=LOOKUP)
    arrow(ax, (ex + d * c + 0.05, ey - (scored + 0.5) * c), (lx + (scored + 0.5) * c, by + 0.05),
          color=HEAD, curve=-0.3)
    ax.text(9.55, 7.9, f"out: logit[t, {scored}]\n= ⟨hₜ, E{chr(0x2080 + scored)}⟩:\n"
            "every row\nscores its token", ha="right", va="top", color=HEAD)


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
    ax.set_xlabel("what tying removes, % of the untied model")
    ax.set_xlim(0, max(shares) * 1.5)
    legend_patches(ax, [("tied as published", LOOKUP), ("untied as published", MUTED)])


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
    ax.set_xlabel("one (V, d) matrix, % of the model")
    ax.set_xlim(0, max(values) * 1.35)
    legend_patches(ax, [("ties", LOOKUP), ("unties", MUTED)])


@drawing(height=3.6)
def first_loss(fig, sigmas, losses, vocab: int, marked: float):
    """Mean first loss of random logits against their standard deviation."""
    ax = fig.add_subplot()
    sigmas, losses = np.asarray(sigmas), np.asarray(losses)
    ax.plot(sigmas, losses, "o-", color=HEAD, lw=2, ms=5, label="measured")
    small = sigmas <= 3
    ax.plot(sigmas[small], np.log(vocab) + sigmas[small] ** 2 / 2, ":", color=INK, lw=2.2,
            label="ln V + σ_z²/2")
    ax.axhline(np.log(vocab), color=LOOKUP, ls="--", lw=1.5)
    ax.text(sigmas[-1], np.log(vocab) - 0.6, f"ln V = {np.log(vocab):.1f}: a uniform guess",
            ha="right", va="top", color=LOOKUP)
    at = losses[np.argmin(abs(sigmas - marked))]
    ax.annotate(f"σ_z = {marked:g}: {at:.1f}", (marked, at), xytext=(-30, 0),
                textcoords="offset points", ha="right", va="center",
                arrowprops={"arrowstyle": "-", "color": INK})
    ax.set_xlabel("standard deviation σ_z of the first logits")
    ax.set_ylabel("first loss (nats)")
    ax.set_ylim(0, max(losses) * 1.12)
    ax.legend(loc="upper left", frameon=False)


# Chapter 02

@drawing(height=3.6)
def graph_and_leaves(fig):
    """One shared Param: a node with two edges for NNX, two leaves for a JAX pytree."""
    ax = canvas(fig, 9.6, 7.2)
    ax.text(2.3, 7.1, "NNX: a graph", ha="center", va="top", fontsize=13)
    module = node(ax, 2.3, 5.6, "model", w=1.6, h=0.7)
    param = node(ax, 2.3, 3.0, "one nnx.Param", color=LOOKUP, fill=LOOKUP_FILL, w=2.9, h=0.7)
    link(ax, module, param, ".embedding", color=LOOKUP, curve=0.3, side=-0.45)
    link(ax, module, param, ".head", color=LOOKUP, curve=-0.3, side=0.45)
    ax.text(2.3, 2.2, "nnx.state, nnx.grad:\none entry,\none gradient", ha="center",
            va="top", color=LOOKUP)

    ax.plot([4.75, 4.75], [0.3, 7.0], color=PALE, lw=2)
    ax.text(7.2, 7.1, "JAX: a tree", ha="center", va="top", fontsize=13)
    root = node(ax, 7.2, 5.6, "model", w=1.6, h=0.7)
    for x, name in ((6.0, "embedding"), (8.45, "head")):
        link(ax, root, node(ax, x, 3.0, name, color=HEAD, fill=HEAD_FILL, w=2.1, h=0.7),
             color=HEAD)
    ax.text(7.2, 2.2, "jax.tree.leaves:\ntwo leaves; jax.grad:\none gradient per path",
            ha="center", va="top", color=HEAD)


# Chapter 03

@drawing(height=4.8)
def linear_layout(fig, vocab=6, d=3):
    """nn.Embedding and nn.Linear both store (V, d); the tie points the head at the embedding's."""
    ax = canvas(fig, 9.6, 9.6)
    c = 0.4
    for x, title, fill, below in ((2.2, "nn.Embedding(V, d)\n.weight", LOOKUP_FILL,
                                   "(V, d):\nrow v is token v"),
                                  (7.3, "nn.Linear(d, V)\n.weight", HEAD_FILL,
                                   "(out, in) = (V, d)\nforward: x @ weight.T")):
        ax.text(x, 9.55, title, ha="center", va="top", family="monospace")
        grid(ax, x - d * c / 2, 8.5, vocab, d, c, {(v, j): fill for v in range(vocab)
                                                   for j in range(d)})
        ax.text(x, 8.5 - vocab * c - 0.15, below, ha="center", va="top")
    ax.text(4.75, 7.3, "same\nshape", ha="center", va="center", fontsize=12, color=MUTED)

    ax.plot([0.3, 9.3], [4.45, 4.45], color=PALE, lw=2)
    ax.text(4.8, 4.3, "head.weight = embed.weight", ha="center", va="top", family="monospace")
    embed, head = node(ax, 2.6, 3.1, "embed", w=1.8, h=0.7), node(ax, 7.0, 3.1, "head", w=1.8, h=0.7)
    shared = node(ax, 4.8, 1.3, "one Parameter (V, d)", color=LOOKUP, fill=LOOKUP_FILL, w=4.0,
                  h=0.7)
    link(ax, embed, shared, ".weight", curve=0.15, side=-0.3)
    link(ax, head, shared, ".weight", curve=-0.15, side=0.3)
    ax.text(4.8, 0.55, "no transpose: nn.Linear applies it", ha="center", va="top",
            color=MUTED)


@drawing(height=3.7)
def meta_untie(fig):
    """What to_empty does to a tie made on the meta device, and tying again."""
    ax = canvas(fig, 9.6, 7.8)
    stages = (("built on\nmeta", ["one Parameter"], INK),
              ("to_empty\n('cpu')", ["Parameter 1", "Parameter 2"], HEAD),
              ("tie again,\nthen init", ["one Parameter"], LOOKUP))
    top = 7.7
    for i, (title, params, color) in enumerate(stages):
        ax.text(0.05, top - 0.7, title, ha="left", va="center", family="monospace", color=color)
        embed = node(ax, 4.3, top - 0.4, "embed", w=1.7, h=0.6, size=11)
        head = node(ax, 7.6, top - 0.4, "lm_head", w=1.7, h=0.6, size=11)
        if len(params) == 1:
            shared = node(ax, 5.95, top - 1.5, params[0], color=color, w=2.8, h=0.6, size=11)
            arrow(ax, (embed[0], embed[1] - 0.35), (shared[0] - 0.6, shared[1] + 0.35))
            arrow(ax, (head[0], head[1] - 0.35), (shared[0] + 0.6, shared[1] + 0.35))
            height = 2.4
        else:
            for owner, name in ((embed, params[0]), (head, params[1])):
                below = node(ax, owner[0], top - 1.5, name, color=color, w=2.3, h=0.6, size=11)
                arrow(ax, (owner[0], owner[1] - 0.35), (below[0], below[1] + 0.35), color=color)
            # what to_empty made: two Parameters, each over new, uninitialised memory
            ax.text(5.95, top - 2.0, "two Parameters with separate\n(uninitialised) storage",
                    ha="center", va="top", color=HEAD)
            height = 3.2
        if i < 2:
            ax.plot([0.2, 9.4], [top - height + 0.35, top - height + 0.35], color=PALE, lw=2)
        top -= height


@drawing(height=2.5)
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
    ax.set_xlabel(f"file size (KiB);\none float32 (V, d) matrix: {matrix_bytes / 1024:,.1f} KiB")


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


# Chapters 04 and 05: a model drawn as its stages, with the one matrix at the side

@drawing(height=4.6)
def tied_pipeline(fig, stages, matrix, lookup: int, head: int, hidden=None):
    """The stages of a forward pass from top to bottom, each with the shape it returns, and
    the one matrix beside them with its two arrows: its rows into stage ``lookup``, its
    transpose into stage ``head``. ``hidden``: an (N, T) array of 0/1, drawn as a grid of
    the positions the loss reads."""
    step = 1.15                                   # a box of 0.72 and an arrow between two
    height = step * len(stages) + 0.9
    ax = canvas(fig, 9.6, height)
    ys = [height - 0.6 - step * (i + 0.5) for i in range(len(stages))]
    for i, ((label, shape), y) in enumerate(zip(stages, ys)):
        color, fill = ((LOOKUP, LOOKUP_FILL) if i == lookup else (HEAD, HEAD_FILL) if i == head
                       else (INK, "white"))
        ax.add_patch(FancyBboxPatch((0.1, y - 0.36), 6.8, 0.72, boxstyle="round,pad=0.06",
                                    facecolor=fill, edgecolor=color, lw=1.4))
        ax.text(0.25, y, label, va="center", family="monospace", color=color)
        ax.text(6.8, y, str(tuple(shape)), va="center", ha="right", color=MUTED)
        if i:
            arrow(ax, (3.5, ys[i - 1] - 0.42), (3.5, y + 0.42))
    name, shape = matrix
    my = (ys[lookup] + ys[head]) / 2
    node(ax, 8.4, my, f"{name}\n{tuple(shape)}", color=INK, fill=PALE, w=2.2, h=1.2, size=11)
    arrow(ax, (7.9, my + 0.65), (7.0, ys[lookup]), color=LOOKUP, curve=0.25, lw=2)
    ax.text(8.75, my + 1.0, "rows", ha="center", va="bottom", color=LOOKUP)
    arrow(ax, (7.9, my - 0.65), (7.0, ys[head]), color=HEAD, curve=-0.25, lw=2)
    ax.text(8.75, my - 1.0, "transposed", ha="center", va="top", color=HEAD)
    if hidden is not None:
        rows, cols = np.shape(hidden)
        c = 0.36
        left, top = 8.4 - cols * c / 2, ys[0] + 0.55
        grid(ax, left, top, rows, cols, c, {(r, t): HEAD for r in range(rows)
                                            for t in range(cols) if hidden[r][t]})
        ax.text(8.4, top - rows * c - 0.1, "hidden tokens", ha="center", va="top", color=HEAD)


# Chapter 06b: the papers' regimes and ours

@drawing(height=4.2)
def regimes(fig, rows):
    """Validation perplexity, tied against untied, per model and regime: ``rows`` are
    (regime, label, change, pairs, ours), change = tied / untied - 1 and pairs the changes
    of the single pairs (ours only), drawn as ticks over the bar of their mean."""
    groups = {}
    for row in rows:
        groups.setdefault(row[0], []).append(row[1:])
    axes = fig.subplots(len(groups), 1, sharex=True,
                        gridspec_kw={"height_ratios": [len(g) for g in groups.values()]})
    for ax, (regime, group) in zip(axes, groups.items()):
        for y, (label, change, pairs, ours) in enumerate(group):
            ax.barh(y, 100 * change, height=0.6, color=HEAD if ours else LOOKUP)
            ax.plot([100 * p for p in pairs], [y] * len(pairs), "|", color=INK, ms=10)
        ax.set_yticks(range(len(group)), [g[0] for g in group])
        ax.set_ylim(len(group) - 0.5, -0.5)
        ax.axvline(0, color=INK, lw=1)
        ax.set_title(regime, loc="left")
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)
    axes[-1].set_xlabel("validation perplexity,\ntied against untied (%)")
    legend_patches(fig, [("published", LOOKUP), ("this book", HEAD)], loc="outside upper center")


# Chapter 07b: which ways of saving and loading keep the tie

@drawing(height=4.6)
def tie_outcomes(fig, rows):
    """One line per way of saving or loading, as the page ran it: ``rows`` are (path, count,
    kind), the number of (V, d) torch Parameters or Flax leaves (``kind``: "Parameter" or
    "leaf") the page counted in the reloaded model."""
    plural = {"Parameter": "Parameters", "leaf": "leaves"}
    ax = canvas(fig, 9.6, 9.2)
    step = 9.0 / len(rows)
    for i, (path, matrices, kind) in enumerate(rows):
        y = 9.1 - step * (i + 0.5)
        kept = matrices == 1
        color = LOOKUP if kept else HEAD
        ax.add_patch(FancyBboxPatch((0.1, y - step / 2 + 0.08), 9.4, step - 0.16,
                                    boxstyle="round,pad=0.02", edgecolor="none",
                                    facecolor=LOOKUP_FILL if kept else HEAD_FILL))
        ax.text(0.5, y, "✓" if kept else "✗", ha="center", va="center", fontsize=16,
                color=color, weight="bold")
        ax.text(1.0, y + 0.22, path, va="center", family="monospace")
        what = kind if matrices == 1 else plural[kind]
        ax.text(1.0, y - 0.3, f"{matrices} (V, d) {what}: {'tied' if kept else 'untied'}",
                va="center", color=color)

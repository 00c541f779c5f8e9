"""Chapter 05's cases: the notebook's worked examples, drawn as the notebook draws
them, and the hidden, cost and gradient cases of each exercise.

A cost case (``COST``) holds the inputs at a base size and with one dimension grown at
a time (``cost_case``); a gradient case (``GRADIENT``, ``ATTENTION_GRADIENT``) adds the
cotangent whose gradient the probe sends back.
"""
from __future__ import annotations

import math

import numpy as np

from grader.drawing import hidden_rng
from grader.registry import Case


def normal(rng, shape, std):
    return rng.normal(0.0, std, shape).astype(np.float32)


def sizes_shown(array) -> str:
    return f"x: {tuple(int(n) for n in np.shape(array))}"


def notebook_examples() -> dict:
    """The worked examples exactly as the notebook makes them: its seed, its draws, in
    its order (cells of the solution; ``torch.manual_seed(0)`` in its first cell).

    The draws come from a generator of their own, seeded as the notebook seeds the global
    one (the same numbers): the grader draws cases in several threads at once (a batch,
    the references warmed while the kernel runs), and a shared generator would give each
    thread a different mix of them."""
    import torch

    g = torch.Generator().manual_seed(0)
    n, t, v, d = 2, 5, 11, 8
    x, w = torch.randn(2, 4, 8, generator=g), torch.randn(4, 8, 8, generator=g) / math.sqrt(8)
    ids = torch.randint(0, v, (n, t), generator=g)
    mask = torch.zeros(n, t)
    mask[0, 1] = mask[1, 0] = mask[1, 4] = 1.0
    w_emb, pos = torch.randn(v, d, generator=g), 0.5 * torch.randn(t, d, generator=g)
    blocks = torch.randn(1, 6, d, d, generator=g) / math.sqrt(d)
    forward = dict(input_ids=ids, mask_indicator=mask, w_emb=w_emb, pos_embed=pos, blocks_weights=blocks, num_heads=2)
    bare = dict(forward, mask_indicator=torch.ones(n, t), pos_embed=torch.zeros(t, d),
                blocks_weights=torch.zeros(0, 6, d, d))
    numpy = lambda args: {k: (a.numpy() if isinstance(a, torch.Tensor) else a) for k, a in args.items()}
    return {
        "layer_norm": {"x": torch.linspace(-1.0, 2.0, 12).reshape(1, 3, 4).numpy()},
        "gelu_tanh": {"x": torch.linspace(-3.0, 3.0, 13).numpy()},
        "multi_head_attention": {"x": x.numpy(), **dict(zip(("w_q", "w_k", "w_v", "w_o"), w.numpy())), "num_heads": 2},
        "forward": numpy(forward),
        "bare": numpy(bare),
    }


# ---------------------------------------------------------------- the cost and gradient cases

# The case of what a call costs (``code_rules.cost_finding``).
COST = "mlm.case_cost"
# The gradient cases (the tie's in mlm_forward_tied, the inputs' in multi_head_attention).
GRADIENT, ATTENTION_GRADIENT = "mlm.case_gradient", "mlm.case_attention_gradient"
SIZE_NAMES = {"n": "N", "t": "T", "h": "heads", "m": "M"}  # as the cost case's label shows them


def cost_case(make, base: dict[str, int], grown: dict[str, tuple[str, int]]) -> Case:
    """The cost case: ``make(**sizes)`` at ``base``, then with one size grown at a time
    (``grown``: dimension -> (size, larger value))."""
    variants = [make(**base)] + [make(**{**base, size: big}) for size, big in grown.values()]
    dims = [[dim, base[size], big] for dim, (size, big) in grown.items()]
    shown = ", ".join(f"{SIZE_NAMES[size]} {base[size]} → {big}" for size, big in grown.values())
    return Case(COST, {"variants": variants, "dims": dims}, shown={"shape": shown})


# ---------------------------------------------------------------- layer_norm and gelu_tanh: one tensor x

def ln_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/layer_norm")
    public = notebook_examples()["layer_norm"]["x"]
    found = [Case("case.worked_example", {"x": public}, True, {"shape": sizes_shown(public)})]
    # First the case that tells the eps mistakes apart: a variance near eps, and one
    # constant row, where no eps divides 0 by 0 and a tiny eps gives 0.
    small = normal(rng, (2, 8, 32), 3e-3)
    small[1, 3] = 0.25
    found.append(Case("mlm.case_small_variance", {"x": small, "eps": None}, shown={"shape": sizes_shown(small)}))
    shapes = (
        # x, eps (None: the default)
        (normal(rng, (2, 5, 2), 1.0), None),       # two features
        (normal(rng, (7, 5), 1.0), None),          # 2-D
        (normal(rng, (16,), 1.0), None),           # 1-D: "a tensor of any shape"
        (normal(rng, (2, 3, 4, 8), 1.0), None),    # 4-D
        (normal(rng, (5, 1), 1.0), None),          # one feature: all zeros
        (normal(rng, (3, 6, 16), 0.5), 0.1),       # the eps argument is used
        (normal(rng, (3, 6, 16), 0.01), 1e-12),    # BERT's eps, passed in: right here
        (10.0 + normal(rng, (4, 64, 128), 3.0), None),  # offset and spread
    )
    for x, eps in shapes:
        shown = sizes_shown(x) if eps is None else f"{sizes_shown(x)}, eps={eps:g}"
        found.append(Case("case.hidden", {"x": x, "eps": eps}, shown={"shape": shown}))
    return found


def tensor_cost(item: str):
    """The cost case of a function of one tensor x (N, T, 8): positions and batch grown."""
    rng = hidden_rng(f"05_mlm/{item}/cost")
    return cost_case(lambda n, t: {"x": normal(rng, (n, t, 8), 1.0)}, {"n": 2, "t": 4},
                     {"positions": ("t", 12), "batch": ("n", 6)})


def gelu_cases() -> list[Case]:
    rng = hidden_rng("05_mlm/gelu_tanh")
    public = notebook_examples()["gelu_tanh"]["x"]
    wide = np.concatenate([np.linspace(-30, 30, 61), [-100.0, 100.0]]).astype(np.float32).reshape(-1, 1)
    return [
        Case("case.worked_example", {"x": public}, True, {"shape": sizes_shown(public)}),
        Case("case.hidden", {"x": normal(rng, (4, 64, 128), 3.0)}, shown={"shape": "x: (4, 64, 128), std 3"}),
        Case("case.hidden", {"x": wide}, shown={"shape": "x: (63, 1), |x| ≤ 100"}),
        Case("case.hidden", {"x": normal(rng, (2, 3, 4, 5), 2.0)}, shown={"shape": "x: (2, 3, 4, 5)"}),
    ]


# ---------------------------------------------------------------- multi_head_attention

# (N, T, d, heads) of the hidden attention cases, to d_head = 1 and T = 64.
MHA_SHAPES = ((1, 1, 4, 1), (2, 6, 12, 3), (3, 9, 16, 8), (2, 5, 6, 6), (4, 64, 128, 8), (1, 7, 8, 1))


def mha_shown(n, t, d, heads) -> str:
    return f"N={n}, T={t}, d_model={d}, heads={heads}"


def mha_cases() -> list[Case]:
    public = notebook_examples()["multi_head_attention"]
    found = [Case("case.worked_example", public, True, {"shape": mha_shown(2, 4, 8, 2)})]
    rng = hidden_rng("05_mlm/multi_head_attention")
    for n, t, d, heads in MHA_SHAPES:
        weights = {k: normal(rng, (d, d), d**-0.5) for k in ("w_q", "w_k", "w_v", "w_o")}
        args = {"x": normal(rng, (n, t, d), 1.0), **weights, "num_heads": heads}
        # Queries and keys a little larger than 1/sqrt(d) make the scores spread,
        # so that a missing scale or a wrong softmax axis moves the result visibly.
        args["w_q"] *= 2.0
        args["w_k"] *= 2.0
        found.append(Case("case.hidden", args, shown={"shape": mha_shown(n, t, d, heads)}))
    return found


def mha_cost() -> Case:
    """Heads (d_model 16), positions and batch grown."""
    rng = hidden_rng("05_mlm/multi_head_attention/cost")

    def make(n, t, h):
        return {"x": normal(rng, (n, t, 16), 1.0), **{k: normal(rng, (16, 16), 0.25) for k in
                ("w_q", "w_k", "w_v", "w_o")}, "num_heads": h}
    return cost_case(make, {"n": 2, "t": 4, "h": 2}, {"heads": ("h", 8), "positions": ("t", 12), "batch": ("n", 6)})


# The gradient case of multi_head_attention: x, the weights and a cotangent C.
ATTENTION_INPUTS = ("x", "w_q", "w_k", "w_v", "w_o")
ATTENTION_GRADIENT_SHAPE = (2, 5, 8, 2)


def attention_gradient_case() -> Case:
    rng = hidden_rng("05_mlm/multi_head_attention/gradient")
    n, t, d, heads = ATTENTION_GRADIENT_SHAPE
    args = {"x": normal(rng, (n, t, d), 1.0), **{k: normal(rng, (d, d), 2 * d**-0.5) for k in ATTENTION_INPUTS[1:]},
            "num_heads": heads, "cotangent": normal(rng, (n, t, d), 1.0)}
    return Case(ATTENTION_GRADIENT, args, shown={"shape": mha_shown(n, t, d, heads)})


# ---------------------------------------------------------------- mlm_forward_tied

# (N, T, V, d, heads, blocks, mask) of the hidden forward cases.
# mask: "some" (at least one masked, at least one not), "none" or "all".
FORWARD_SHAPES = (
    (1, 1, 7, 4, 1, 0, "all"),
    (2, 6, 20, 8, 2, 2, "none"),
    (2, 8, 40, 16, 4, 0, "some"),
    (3, 10, 50, 16, 4, 1, "some"),
    (1, 4, 6, 16, 2, 1, "some"),  # V < d: the head still multiplies by w_emb.T
    (2, 7, 30, 12, 3, 3, "all"),
    (2, 16, 64, 32, 1, 2, "some"),
    (4, 64, 200, 128, 8, 3, "some"),
)
# Embeddings this small put the blocks' LayerNorm inputs near eps, where its value matters.
SMALL_EMBEDDINGS = (2, 6, 24, 16, 2, 2, "some")


def _mask(rng, n, t, kind):
    if kind == "none":
        return np.zeros((n, t), np.float32)
    if kind == "all":
        return np.ones((n, t), np.float32)
    mask = (rng.random((n, t)) < 0.3).astype(np.float32)
    mask.flat[0], mask.flat[-1] = 1.0, 0.0  # at least one of each
    return mask


def forward_shown(args) -> str:
    n, t = np.shape(args["input_ids"])
    v, d = np.shape(args["w_emb"])
    masked = int(np.sum(np.asarray(args["mask_indicator"]) > 0.5))
    return (f"N={n}, T={t}, V={v}, d_model={d}, heads={args['num_heads']}, "
            f"blocks={len(args['blocks_weights'])}, M={masked}")


def _forward_args(rng, shape, emb_std=1.0, pos_std=0.5):
    n, t, v, d, heads, blocks, kind = shape
    packed = normal(rng, (blocks, 6, d, d), d**-0.5)
    packed[:, 4] *= 2.0  # spread the GELU inputs to where tanh and erf differ most
    return dict(input_ids=rng.integers(0, v, (n, t)).astype(np.int64), mask_indicator=_mask(rng, n, t, kind),
                w_emb=normal(rng, (v, d), emb_std), pos_embed=normal(rng, (t, d), pos_std),
                blocks_weights=packed, num_heads=heads)


def forward_cases() -> list[Case]:
    examples = notebook_examples()
    found = [Case("case.worked_example", args, True, {"shape": forward_shown(args)})
             for args in (examples["forward"], examples["bare"])]
    rng = hidden_rng("05_mlm/mlm_forward_tied")
    for shape in FORWARD_SHAPES:
        args = _forward_args(rng, shape)
        found.append(Case("case.hidden", args, shown={"shape": forward_shown(args)}))
    args = _forward_args(rng, SMALL_EMBEDDINGS, emb_std=2e-3, pos_std=2e-3)
    found.append(Case("mlm.case_small_embeddings", args, shown={"shape": forward_shown(args)}))
    return found


def forward_cost() -> Case:
    """Heads, positions, batch and masked positions grown; one block at every size."""
    rng = hidden_rng("05_mlm/mlm_forward_tied/cost")

    def make(n, t, h, m):
        args = _forward_args(rng, (n, t, 10, 16, h, 1, "none"))
        args["mask_indicator"].flat[:m] = 1.0
        return args
    return cost_case(make, {"n": 2, "t": 4, "h": 2, "m": 2},
                     {"heads": ("h", 8), "positions": ("t", 12), "batch": ("n", 6), "masked": ("m", 7)})


# The gradient case of mlm_forward_tied: a forward case and a cotangent C for its logits.
GRADIENT_SHAPE = (2, 5, 12, 8, 2, 1, "some")


def gradient_case() -> Case:
    rng = hidden_rng("05_mlm/mlm_forward_tied/gradient")
    args = _forward_args(rng, GRADIENT_SHAPE)
    masked = int(np.sum(args["mask_indicator"] > 0.5))
    args["cotangent"] = normal(rng, (masked, GRADIENT_SHAPE[2]), 1.0)
    return Case(GRADIENT, args, shown={"shape": forward_shown(args)})

"""Chapter 03's cases: modules and inputs drawn for each exercise, the first ones of
each item the notebook's worked examples, the edges the text states among the hidden
ones (V = 1 and V = 1000, sequences of 1 and 64 tokens, h without leading dimensions).
"""
from __future__ import annotations

import numpy as np

from grader.comparisons import describe_shape
from grader.drawing import hidden_rng, token_ids
from grader.registry import Case

CHAPTER_ID = "03_pytorch"


def _matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Entries of std cols^(-1/4): a product over cols of two such factors is O(1)."""
    return rng.normal(0.0, cols ** -0.25, (rows, cols)).astype(np.float32)


def notebook_examples() -> dict:
    """The tensors of the notebook's worked examples exactly as its cells make them, each
    cell after its ``torch.manual_seed(0)``: the public cases are these calls.  Drawn from
    a generator of their own seeded as the notebook seeds the global one (the same
    numbers; the grader draws cases in several threads at once), and ``nn.Linear`` drawn
    as its ``reset_parameters`` does."""
    import math

    import torch
    from torch import nn

    def embedding(v, d):
        return nn.init.normal_(torch.empty(v, d), generator=g).numpy()

    def linear(d, v, bias):
        weight = nn.init.kaiming_uniform_(torch.empty(v, d), a=math.sqrt(5), generator=g).numpy()
        bound = 1 / math.sqrt(d)
        return weight, nn.init.uniform_(torch.empty(v), -bound, bound, generator=g).numpy() if bias else None

    g = torch.Generator().manual_seed(0)
    tie = dict(embedding=embedding(6, 4), **dict(zip(("head", "head_bias"), linear(4, 6, bias=True))))
    refused = dict(embedding=embedding(6, 4), head=linear(4, 7, bias=False)[0])
    g = torch.Generator().manual_seed(0)
    E = torch.randn(7, 4, generator=g).numpy()
    logits = [dict(h=torch.randn(4, generator=g).numpy(), E=E, b=None),
              dict(h=torch.randn(2, 3, 4, generator=g).numpy(), E=E, b=torch.randn(7, generator=g).numpy())]
    return {"tie_weights": tie, "tie_weights.ValueError": refused, "tied_logits": logits,
            "TinyLM": dict(seed=0, input_ids=np.zeros((2, 5), np.int64))}


def _case(n: int, args: dict, shape: str, public: int = 1, visibility: str = "") -> Case:
    """The n-th case of an item: the first ``public`` are worked examples, the rest hidden."""
    return Case("case.worked_example" if n < public else "case.hidden", args, public=n < public,
                shown={"shape": shape}, visibility=visibility)


# ---------------------------------------------------------------- tie_weights, and its refusal

# (V, d, bias, leading shape of the hidden vectors fed to the head); V = 1 and V = 1000
# are the edges of the promise, and on Gradescope what fails there waits for the due date
TIE_SHAPES = ((6, 4, True, (2,)), (5, 5, True, (3,)), (20, 8, True, (2, 3)), (3, 7, False, (4,)),
              (1, 3, True, (2,)), (1000, 64, True, (4,)))


def tie_cases() -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/tie_weights")
    found = []
    for n, (v, d, bias, lead) in enumerate(TIE_SHAPES):
        args = dict(
            embedding=_matrix(rng, v, d),
            head=_matrix(rng, v, d),  # the head's own values, which tying must replace
            head_bias=rng.normal(0.0, 1.0, v).astype(np.float32) if bias else None,
            hidden=rng.normal(0.0, d ** -0.25, (*lead, d)).astype(np.float32),
        )
        args.update(notebook_examples()["tie_weights"] if n == 0 else {})  # hidden: the probe's own
        found.append(_case(n, args, f"nn.Embedding({v}, {d}), nn.Linear({d}, {v}, bias={bias})",
                           visibility="after_due_date" if v in (1, 1000) else ""))
    return found


# (V, d, out_features, in_features): heads whose weight (out, in) is not the embedding's (V, d)
REFUSED = ((6, 4, 7, 4), (6, 4, 6, 5), (6, 4, 4, 6), (8, 8, 5, 8), (1, 3, 3, 1))


def refused_cases() -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/tie_weights.ValueError")
    return [_case(n, notebook_examples()["tie_weights.ValueError"] if n == 0
                  else dict(embedding=_matrix(rng, v, d), head=_matrix(rng, o, i)),
                  f"nn.Embedding({v}, {d}), nn.Linear({i}, {o}, bias=False)")
            for n, (v, d, o, i) in enumerate(REFUSED)]


# ---------------------------------------------------------------- TinyLM: the cases of its three items

DEFAULT_LAYERS = 2  # TinyLM(vocab_size, d_model, n_layers=2)
# (V, d, n_layers, batch, length): n_layers None leaves the default; d is a multiple of 4
# from 4 up, sequences run from 1 to 64 tokens, the limits the exercise states
TINY_SHAPES = ((11, 8, None, 2, 5), (32, 16, 1, 1, 7), (16, 16, 3, 3, 4), (97, 32, None, 2, 16),
               (8, 12, 2, 2, 9), (13, 4, 1, 1, 64), (7, 8, 2, 2, 1))


def _tiny_cases(item: str, shapes, with_upstream: bool = False) -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/{item}")
    found = []
    for n, (v, d, layers, batch, length) in enumerate(shapes):
        ids = np.asarray(token_ids(rng, batch * length, v), np.int64).reshape(batch, length)
        args = dict(vocab_size=v, d_model=d, n_layers=layers, seed=int(rng.integers(0, 2**31 - 1)),
                    input_ids=ids)
        if with_upstream:
            args["upstream"] = rng.normal(0.0, 1.0, (batch, length, v)).astype(np.float32)
        args.update(notebook_examples()["TinyLM"] if n == 0 else {})
        model = f"TinyLM({v}, {d})" if layers is None else f"TinyLM({v}, {d}, n_layers={layers})"
        found.append(_case(n, args, f"{model}, input_ids {describe_shape(ids.shape)}"))
    return found


def structure_cases() -> list[Case]:
    return _tiny_cases("TinyLM.tied", TINY_SHAPES[:4])


def forward_cases() -> list[Case]:
    return _tiny_cases("TinyLM.forward", TINY_SHAPES)


def grad_cases() -> list[Case]:
    # Sequences of at most 16 tokens: the limits of forward are TinyLM.forward's to judge
    return _tiny_cases("TinyLM.grad", TINY_SHAPES[:4], with_upstream=True)


# ---------------------------------------------------------------- tied_logits

# (leading shape of h, V, d, b): b is "given", "omitted" (its default), or "None" (b=None
# by keyword).  Leading shapes from none to four dimensions; V = 1 and V = d are edges.
LOGIT_SHAPES = (((), 7, 4, "omitted"), ((2, 3), 7, 4, "given"), ((3,), 5, 3, "given"), ((2, 5), 16, 8, "None"),
                ((2, 3, 4), 7, 6, "given"), ((4,), 6, 6, "given"), ((), 9, 4, "given"),
                ((1, 2, 1, 3), 5, 2, "omitted"), ((3,), 1, 4, "given"), ((8, 32), 300, 64, "given"))


def logits_cases() -> list[Case]:
    rng = hidden_rng(f"{CHAPTER_ID}/tied_logits")
    found = []
    for n, (lead, v, d, b) in enumerate(LOGIT_SHAPES):
        args = dict(h=rng.normal(0.0, d ** -0.25, (*lead, d)).astype(np.float32), E=_matrix(rng, v, d),
                    b=rng.normal(0.0, 1.0, v).astype(np.float32) if b == "given" else None,
                    upstream=rng.normal(0.0, 1.0, (*lead, v)).astype(np.float32), pass_b=b != "omitted")
        args.update(notebook_examples()["tied_logits"][n] if n < 2 else {})
        shown = {"given": f", b ({v},)", "omitted": "", "None": ", b=None"}[b]
        found.append(_case(n, args, f"h {describe_shape((*lead, d))}, E ({v}, {d}){shown}", public=2))
    return found

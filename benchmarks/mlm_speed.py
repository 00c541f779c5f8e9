"""Chapter 05: the from-scratch MLM forward pass against an equivalent nn.TransformerEncoder.

The solution's ``mlm_forward_tied`` (read from solutions/05_mlm.ipynb) and a PyTorch
``nn.TransformerEncoder`` with the same weights (pre-LN, no biases, d_ff = d_model,
tanh GELU, no dropout), followed by the same tied head and gather, run at N=8, T=128,
d_model=256, 8 heads, 4 blocks.  The two results are checked to agree first; then both
are timed, under ``torch.no_grad()`` and with autograd (forward + backward), the two
runs alternating so that a busy machine slows both alike.

Prints the fastest and the median time of each and the ratio solution / encoder of the
fastest times, the figure least disturbed by other processes (the issue's target: at
most 1.5x); asserts nothing about time.
Usage: python benchmarks/mlm_speed.py [--repeats R] [--threads K]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
from functools import partial
from pathlib import Path

import nbformat
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
N, T, V, D, HEADS, BLOCKS = 8, 128, 1000, 256, 8, 4


def solution_forward():
    """``mlm_forward_tied`` as defined in the solution notebook (its check cell left out)."""
    nb = nbformat.read(ROOT / "solutions" / "05_mlm.ipynb", as_version=4)
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):  # the notebook's own prints
        for cell in nb.cells:
            if cell.cell_type == "code" and "check(" not in cell.source:
                exec(compile(cell.source, "<solution>", "exec"), ns)
    return ns["mlm_forward_tied"]


def encoder_from(blocks_weights: torch.Tensor) -> nn.TransformerEncoder:
    """The same blocks as PyTorch modules: nn.Linear computes x @ weight.T, hence the transposes."""
    layer = nn.TransformerEncoderLayer(
        D, HEADS, dim_feedforward=D, dropout=0.0, activation=partial(F.gelu, approximate="tanh"),
        batch_first=True, norm_first=True, bias=False,
    )
    encoder = nn.TransformerEncoder(layer, BLOCKS, enable_nested_tensor=False)
    with torch.no_grad():
        for blk, (w_q, w_k, w_v, w_o, w_1, w_2) in zip(encoder.layers, blocks_weights):
            blk.self_attn.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))
            blk.self_attn.out_proj.weight.copy_(w_o.T)
            blk.linear1.weight.copy_(w_1.T)
            blk.linear2.weight.copy_(w_2.T)
    return encoder


def alternate(first, second, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds of ``repeats`` calls of each, alternating, after one warm-up call of each."""
    first(), second()
    times = ([], [])
    for _ in range(repeats):
        for fn, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return times


def report(label: str, ours: list[float], theirs: list[float]) -> None:
    ms = lambda ts: f"fastest {min(ts) * 1e3:7.2f} ms, median {statistics.median(ts) * 1e3:7.2f} ms"
    print(f"{label}")
    print(f"  solution           : {ms(ours)}")
    print(f"  TransformerEncoder : {ms(theirs)}")
    print(f"  ratio (fastest)    : {min(ours) / min(theirs):.2f}x   "
          f"(medians: {statistics.median(ours) / statistics.median(theirs):.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    forward = solution_forward()
    input_ids = torch.randint(0, V, (N, T))
    mask = (torch.rand(N, T) < 0.15).float()
    w_emb = torch.randn(V, D)
    pos_embed = 0.5 * torch.randn(T, D)
    blocks_weights = torch.randn(BLOCKS, 6, D, D) / D**0.5
    encoder = encoder_from(blocks_weights)

    def ours():
        return forward(input_ids, mask, w_emb, pos_embed, blocks_weights, HEADS)

    def theirs():
        hidden = encoder(w_emb[input_ids] + pos_embed)
        return (hidden @ w_emb.T)[mask > 0.5]

    with torch.no_grad():
        a, b = ours(), theirs()
    err = (a - b).abs().max().item() / b.abs().max().item()
    print(f"N={N} T={T} V={V} d_model={D} heads={HEADS} blocks={BLOCKS}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {args.repeats} runs each")
    print(f"same logits: {tuple(a.shape)}, largest difference {err:.1e} of the largest logit")
    if err > 1e-4:
        raise SystemExit("the solution and the encoder disagree: nothing to compare")

    with torch.no_grad():
        report("forward, torch.no_grad()", *alternate(ours, theirs, args.repeats))

    for p in (w_emb, pos_embed, blocks_weights):
        p.requires_grad_(True)
    report("forward + backward", *alternate(lambda: ours().sum().backward(), lambda: theirs().sum().backward(),
                                            args.repeats))


if __name__ == "__main__":
    main()

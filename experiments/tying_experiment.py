"""Does weight tying help? Tied and untied LSTM language models, same budget, real text.

The text is the one that ships with Python: the help topics of ``pydoc_data.topics``.
It is cut into a word-level token stream, split deterministically into train and
validation, and two small LSTM language models are trained on it with the same steps,
batches, learning-rate schedule and seeds. They differ only in the output projection:
the tied model reuses the (V, d) embedding matrix, the untied one has its own.

    python experiments/tying_experiment.py --out book/data/06_results.json
    python experiments/tying_experiment.py --steps 200 --seeds 0 --out /tmp/quick.json

Every field of ``Config`` is also a command-line option (``--d-model 64``, ...). The JSON
written holds the configuration, the script's ``VERSION``, facts about the data, and for
every run its parameter count and its train and validation perplexity curves.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import platform
import re
import sys
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

VERSION = 1  # bump when a change to the code changes the results
VARIANTS = ("untied", "tied")
TOKEN = re.compile(r"\w+|[^\w\s]")  # a word (letters, digits, underscores) or one punctuation mark
UNK = "<unk>"


@dataclass(frozen=True)
class Config:
    vocab_size: int = 2000       # V: the most frequent training tokens, the rest become <unk>
    d_model: int = 128           # d: embedding size = LSTM hidden size (tying needs them equal)
    dropout: float = 0.0         # on the embedding output and on the LSTM output
    batch_size: int = 32         # parallel streams
    bptt: int = 32               # tokens per stream per step (truncated backpropagation)
    steps: int = 1000            # optimiser steps per run
    lr: float = 3e-3             # Adam peak learning rate
    warmup: int = 50             # linear warm-up steps, then cosine decay to zero
    clip: float = 1.0            # gradient-norm clipping
    eval_every: int = 50         # steps between two points of the curves
    seeds: tuple[int, ...] = (0, 1, 2)
    block_tokens: int = 1000     # the split cuts the token stream into blocks of this size
    valid_every: int = 10        # ... and every valid_every-th block goes to validation
    max_tokens: int = 0          # use only the first max_tokens tokens (0: the whole text)


def config_dict(cfg: Config) -> dict:
    """The configuration as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(asdict(cfg)))


# ---------------------------------------------------------------- data

def corpus_text() -> str:
    """Every help topic of this Python's ``pydoc_data.topics``, in key order."""
    from pydoc_data.topics import topics

    return "\n".join(topics[key] for key in sorted(topics))


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def split(tokens: list[str], cfg: Config) -> tuple[list[str], list[str]]:
    """Blocks of ``block_tokens``; block i is validation when i % valid_every == valid_every - 1."""
    train, valid = [], []
    for start in range(0, len(tokens), cfg.block_tokens):
        block = tokens[start:start + cfg.block_tokens]
        index = start // cfg.block_tokens
        (valid if index % cfg.valid_every == cfg.valid_every - 1 else train).extend(block)
    return train, valid


def build_vocab(train: list[str], vocab_size: int) -> list[str]:
    """<unk> first, then the vocab_size - 1 most frequent training tokens (ties: first seen)."""
    return [UNK] + [word for word, _ in Counter(train).most_common(vocab_size - 1)]


def encode(tokens: list[str], itos: list[str]) -> torch.Tensor:
    stoi = {word: i for i, word in enumerate(itos)}
    return torch.tensor([stoi.get(word, 0) for word in tokens], dtype=torch.long)


def batchify(ids: torch.Tensor, batch_size: int) -> torch.Tensor:
    """(batch_size, n): row b is one contiguous stretch of the text."""
    n = len(ids) // batch_size
    return ids[: n * batch_size].view(batch_size, n)


def steps_per_epoch(n_train_tokens: int, cfg: Config) -> int:
    """Steps in one pass over the training text (then the streams start again)."""
    return (n_train_tokens // cfg.batch_size - 1) // cfg.bptt


def prepare(cfg: Config) -> dict:
    """Text, split and vocabulary: everything both variants share."""
    text = corpus_text()
    tokens = tokenize(text)
    if cfg.max_tokens:
        tokens = tokens[: cfg.max_tokens]
    train, valid = split(tokens, cfg)
    if not valid:
        raise ValueError(f"no validation block: max_tokens must be at least "
                         f"{cfg.block_tokens * cfg.valid_every}")
    itos = build_vocab(train, cfg.vocab_size)
    train_ids, valid_ids = encode(train, itos), encode(valid, itos)
    facts = {
        "characters": len(text),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "python": platform.python_version(),
        "tokens": len(tokens),
        "types": len(set(tokens)),
        "train_tokens": len(train),
        "valid_tokens": len(valid),
        "train_types": len(set(train)),
        "vocab_size": len(itos),
        "unk_share_train": float((train_ids == 0).float().mean()),
        "unk_share_valid": float((valid_ids == 0).float().mean()),
    }
    return {"train": train_ids, "valid": valid_ids, "itos": itos, "facts": facts}


# ---------------------------------------------------------------- model

class LSTMLanguageModel(nn.Module):
    """Embedding -> one LSTM layer -> linear head over the vocabulary."""

    def __init__(self, vocab_size: int, d_model: int, tied: bool, dropout: float = 0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, vocab_size)
        self.drop = nn.Dropout(dropout)
        # Both variants draw the same random numbers, so that with one seed they start
        # from the same embedding and the same LSTM; only the untied head is extra.
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.uniform_(self.head.weight, -0.1, 0.1)
        nn.init.zeros_(self.head.bias)
        if tied:
            self.head.weight = self.embed.weight  # one Parameter, used by both modules

    def forward(self, ids, state=None):
        hidden, state = self.lstm(self.drop(self.embed(ids)), state)
        return self.head(self.drop(hidden)), state


def count_parameters(model: nn.Module) -> int:
    """Each tensor once: ``parameters()`` yields a shared Parameter a single time."""
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def perplexity(model: LSTMLanguageModel, ids: torch.Tensor, bptt: int) -> float:
    """exp(mean cross-entropy) over every next-token prediction of ``ids`` (4 streams)."""
    model.eval()
    data = batchify(ids, 4)
    state, total, count = None, 0.0, 0
    for pos in range(0, data.size(1) - 1, bptt):
        x = data[:, pos:pos + bptt]
        y = data[:, pos + 1:pos + 1 + bptt]
        x = x[:, : y.size(1)]
        logits, state = model(x, state)
        total += float(F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum"))
        count += y.numel()
    model.train()
    return math.exp(total / count)


def train_run(cfg: Config, variant: str, seed: int, data: dict) -> dict:
    """One model trained for cfg.steps steps; its curves and parameter count."""
    torch.manual_seed(seed)
    vocab_size = len(data["itos"])
    model = LSTMLanguageModel(vocab_size, cfg.d_model, tied=variant == "tied", dropout=cfg.dropout)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda s: min(1.0, (s + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * s / cfg.steps)),
    )
    stream = batchify(data["train"], cfg.batch_size)
    # Train perplexity: the mean training loss over the last epoch's worth of steps, so that
    # every point averages over the whole training text, not over whichever part came last.
    recent = deque(maxlen=steps_per_epoch(len(data["train"]), cfg))
    curve = {"step": [], "train_ppl": [], "valid_ppl": []}
    pos, state = 0, None
    started, cpu_started = time.perf_counter(), time.process_time()
    for step in range(1, cfg.steps + 1):
        if pos + cfg.bptt + 1 > stream.size(1):      # end of an epoch: back to the start
            pos, state = 0, None
        x = stream[:, pos:pos + cfg.bptt]
        y = stream[:, pos + 1:pos + 1 + cfg.bptt]
        pos += cfg.bptt
        if state is not None:                        # truncated backpropagation through time
            state = tuple(s.detach() for s in state)
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, vocab_size), y.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        optimiser.step()
        schedule.step()
        recent.append(loss.item())
        if step % cfg.eval_every == 0 or step == cfg.steps:
            curve["step"].append(step)
            curve["train_ppl"].append(math.exp(sum(recent) / len(recent)))
            curve["valid_ppl"].append(perplexity(model, data["valid"], cfg.bptt))
    best = min(range(len(curve["valid_ppl"])), key=curve["valid_ppl"].__getitem__)
    return {
        "variant": variant,
        "seed": seed,
        "parameters": count_parameters(model),
        "head_is_embedding": model.head.weight is model.embed.weight,
        **curve,
        "final_train_ppl": curve["train_ppl"][-1],
        "final_valid_ppl": curve["valid_ppl"][-1],
        "best_valid_ppl": curve["valid_ppl"][best],
        "best_step": curve["step"][best],
        "seconds": time.perf_counter() - started,         # wall clock
        "cpu_seconds": time.process_time() - cpu_started,  # CPU time of this process
    }


def _one_run(cfg: Config, variant: str, seed: int, threads: int) -> dict:
    """A worker's job: its own thread count, its own copy of the (deterministic) data."""
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    return train_run(cfg, variant, seed, prepare(cfg))


def run_experiment(cfg: Config, threads: int = 1, jobs: int = 1, log=print) -> dict:
    """Both variants for every seed; the dictionary that --out writes as JSON.

    With jobs > 1 the runs go to that many worker processes, each using ``threads``
    threads. Every run depends only on its seed, so the results do not depend on jobs.
    """
    started = time.perf_counter()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    data = prepare(cfg)
    tasks = [(variant, seed) for seed in cfg.seeds for variant in VARIANTS]

    def report(run):
        if log:
            log(f"seed {run['seed']} {run['variant']:6s}: {run['parameters']:,} parameters, "
                f"valid ppl {run['final_valid_ppl']:.1f} (best {run['best_valid_ppl']:.1f} "
                f"at step {run['best_step']}), {run['seconds']:.0f} s")
        return run

    if jobs == 1:
        runs = [report(train_run(cfg, variant, seed, data)) for variant, seed in tasks]
    else:
        context = multiprocessing.get_context("spawn")  # no fork of a process with torch threads
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [pool.submit(_one_run, cfg, variant, seed, threads) for variant, seed in tasks]
            runs = [report(future.result()) for future in futures]
    return {
        "version": VERSION,
        "config": config_dict(cfg),
        "data": data["facts"],
        "environment": {
            "torch": torch.__version__,
            "threads": threads,
            "jobs": jobs,
            "cpu_count": os.cpu_count(),
            "machine": platform.machine(),
        },
        "runs": runs,
        "seconds_total": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- command line

def parse_args(argv=None) -> tuple[Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for field in fields(Config):
        default = getattr(Config(), field.name)
        option = "--" + field.name.replace("_", "-")
        if isinstance(default, tuple):
            parser.add_argument(option, type=int, nargs="+", default=list(default))
        else:
            parser.add_argument(option, type=type(default), default=default)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads in every run")
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at the same time, one process each")
    parser.add_argument("--out", type=Path, help="where to write the JSON of results")
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(Config)}
    values["seeds"] = tuple(values["seeds"])
    return Config(**values), args


def main(argv=None) -> int:
    cfg, args = parse_args(argv)
    results = run_experiment(cfg, threads=args.threads, jobs=args.jobs)
    print(f"total: {results['seconds_total']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

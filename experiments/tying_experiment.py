"""Does weight tying help? Tied and untied LSTM language models, same budget, real text.

The text is the one that ships with Python: the help topics of ``pydoc_data.topics``.
It is cut into a word-level token stream, split deterministically into train and
validation, and two small LSTM language models are trained on it with the same steps,
batches, learning-rate schedule and seeds. They differ only in the output projection:
the tied model reuses the (V, d) embedding matrix, the untied one has its own.

The experiment has two phases:

1. a sweep: each variant is trained at every learning rate of ``lrs`` on the
   ``sweep_seeds``, without dropout, and keeps the rate with the lowest mean final
   validation perplexity;
2. the comparison: both variants, each at its own rate, on every seed of ``seeds`` and at
   every dropout of ``dropouts``. Seed s gives both variants the same start and the same
   batches, so the runs come in pairs. The sweep seeds are not reused here.

    python experiments/tying_experiment.py --out book/data/06_results.json
    python experiments/tying_experiment.py --steps 200 --lrs 0.003 --sweep-seeds 0 \
        --seeds 0 --dropouts 0 --out /tmp/quick.json

Every field of ``Config`` is also a command-line option (``--d-model 64``, ...). The JSON
written holds the configuration, the script's ``VERSION``, facts about the data, the
learning rate each variant kept, and for every run its parameter count and its train and
validation perplexity curves.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
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

VERSION = 2  # bump when a change to the code changes the results
VARIANTS = ("untied", "tied")
TOKEN = re.compile(r"\w+|[^\w\s]")  # a word (letters, digits, underscores) or one punctuation mark
UNK = "<unk>"
EVAL_STREAMS = 16  # parallel streams when a perplexity is measured on a whole split


@dataclass(frozen=True)
class Config:
    vocab_size: int = 2000       # V: the most frequent training tokens, the rest become <unk>
    d_model: int = 128           # d: embedding size = LSTM hidden size (tying needs them equal)
    batch_size: int = 32         # parallel streams
    bptt: int = 32               # tokens per stream per step (truncated backpropagation)
    steps: int = 500             # optimiser steps per run
    warmup: int = 25             # linear warm-up steps, times a cosine from 1 at step 0 to 0 at the last
    clip: float = 1.0            # gradient-norm clipping
    eval_every: int = 50         # steps between two points of the curves
    lrs: tuple[float, ...] = (1e-3, 3e-3, 1e-2)   # Adam peak learning rates of the sweep
    sweep_seeds: tuple[int, ...] = (100, 101)      # the sweep's seeds, kept out of the comparison
    seeds: tuple[int, ...] = tuple(range(8))       # the comparison's seeds: one pair of runs each
    dropouts: tuple[float, ...] = (0.0, 0.3)       # on the embedding output and the LSTM output
    block_tokens: int = 1000     # the split cuts the token stream into blocks of this size
    valid_every: int = 10        # ... and every valid_every-th block goes to validation
    max_tokens: int = 0          # use only the first max_tokens tokens (0: the whole text)


def config_dict(cfg: Config) -> dict:
    """The configuration as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(asdict(cfg)))


# ---------------------------------------------------------------- data

def corpus_topics() -> dict[str, str]:
    """This Python's help topics, ``pydoc_data.topics``: {name: text}."""
    from pydoc_data.topics import topics

    return topics


def corpus_text() -> str:
    """Every help topic of this Python's ``pydoc_data.topics``, in key order."""
    topics = corpus_topics()
    return "\n".join(topics[key] for key in sorted(topics))


def text_sha256(text: str) -> str:
    """The fingerprint the results file keeps of the text it was trained on."""
    return hashlib.sha256(text.encode()).hexdigest()


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
    kept = set(itos)
    dropped = [n for word, n in Counter(train).items() if word not in kept]  # their counts
    facts = {
        "topics": len(corpus_topics()),
        "characters": len(text),
        "character_types": len(set(text)),
        "sha256": text_sha256(text),
        "python": platform.python_version(),
        "tokens": len(tokens),
        "types": len(set(tokens)),
        "train_tokens": len(train),
        "valid_tokens": len(valid),
        "train_types": len(set(train)),
        "vocab_size": len(itos),
        "dropped_types": len(dropped),
        "max_dropped_count": max(dropped, default=0),
        "unk_share_train": float((train_ids == 0).float().mean()),
        "unk_share_valid": float((valid_ids == 0).float().mean()),
    }
    return {"train": train_ids, "valid": valid_ids, "itos": itos, "facts": facts}


# ---------------------------------------------------------------- model

class LSTMLanguageModel(nn.Module):
    """Embedding -> one LSTM layer -> linear head over the vocabulary."""

    def __init__(self, vocab_size: int, d_model: int, tied: bool,
                 dropout: float = 0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, vocab_size)
        self.drop = nn.Dropout(dropout)
        # Both variants draw the same random numbers, so that with one seed they
        # start from the same embedding and the same LSTM; only the untied head
        # is extra.
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.uniform_(self.head.weight, -0.1, 0.1)
        nn.init.zeros_(self.head.bias)
        if tied:
            # one Parameter, used by both modules
            self.head.weight = self.embed.weight

    def forward(self, ids, state=None):
        hidden, state = self.lstm(self.drop(self.embed(ids)), state)
        return self.head(self.drop(hidden)), state


def count_parameters(model: nn.Module) -> int:
    """Each tensor once: ``parameters()`` yields a shared Parameter a single time."""
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def perplexity(model: LSTMLanguageModel, ids: torch.Tensor, bptt: int) -> float:
    """exp(mean cross-entropy) over every next-token prediction of ``ids``, dropout off."""
    model.eval()
    data = batchify(ids, EVAL_STREAMS)
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


def train_run(cfg: Config, data: dict, variant: str, seed: int, lr: float, dropout: float) -> dict:
    """One model trained for cfg.steps steps; its curves and parameter count."""
    torch.manual_seed(seed)
    vocab_size = len(data["itos"])
    model = LSTMLanguageModel(vocab_size, cfg.d_model, tied=variant == "tied", dropout=dropout)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
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
        "lr": lr,
        "dropout": dropout,
        "parameters": count_parameters(model),
        "head_is_embedding": model.head.weight is model.embed.weight,
        **curve,
        # The final weights on the whole training text, dropout off: the same measurement as
        # validation, so that valid / train compares like with like (the curve's train
        # perplexity is what the optimiser saw, with dropout on when there is dropout).
        "final_train_ppl": perplexity(model, data["train"], cfg.bptt),
        "final_valid_ppl": curve["valid_ppl"][-1],
        "best_valid_ppl": curve["valid_ppl"][best],
        "best_step": curve["step"][best],
        "seconds": time.perf_counter() - started,         # wall clock
        "cpu_seconds": time.process_time() - cpu_started,  # CPU time of this process
    }


@functools.lru_cache(maxsize=1)
def _prepared(cfg: Config) -> dict:
    """A worker prepares the (deterministic) data once, not once per run."""
    return prepare(cfg)


def _one_run(cfg: Config, variant: str, seed: int, lr: float, dropout: float, threads: int) -> dict:
    """A worker's job: its own thread count, its own copy of the data."""
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    return train_run(cfg, _prepared(cfg), variant, seed, lr, dropout)


def best_learning_rates(cfg: Config, sweep: list[dict]) -> dict[str, float]:
    """Per variant, the rate of ``lrs`` with the lowest mean final validation perplexity."""
    def mean_valid(variant, lr):
        chosen = [r["final_valid_ppl"] for r in sweep if r["variant"] == variant and r["lr"] == lr]
        return sum(chosen) / len(chosen)

    return {variant: min(cfg.lrs, key=lambda lr: mean_valid(variant, lr)) for variant in VARIANTS}


def run_experiment(cfg: Config, threads: int = 1, jobs: int = 1, log=print) -> dict:
    """The sweep, then the comparison; the dictionary that --out writes as JSON.

    With jobs > 1 the runs go to that many worker processes, each using ``threads``
    threads. Every run depends only on its seed, rate and dropout, so the results do not
    depend on jobs.
    """
    started = time.perf_counter()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    data = prepare(cfg)

    def report(run):
        if log:
            log(f"lr {run['lr']:g} dropout {run['dropout']:g} seed {run['seed']} "
                f"{run['variant']:6s}: valid ppl {run['final_valid_ppl']:.1f} "
                f"(best {run['best_valid_ppl']:.1f} at step {run['best_step']}), "
                f"train ppl {run['final_train_ppl']:.1f}, {run['seconds']:.0f} s")
        return run

    with contextlib.ExitStack() as stack:
        if jobs == 1:
            def train_all(tasks):
                return [report(train_run(cfg, data, *task)) for task in tasks]
        else:
            context = multiprocessing.get_context("spawn")  # no fork of a process with torch threads
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs, mp_context=context))

            def train_all(tasks):
                futures = [pool.submit(_one_run, cfg, *task, threads) for task in tasks]
                return [report(future.result()) for future in futures]

        sweep = train_all([(variant, seed, lr, 0.0) for lr in cfg.lrs
                           for seed in cfg.sweep_seeds for variant in VARIANTS])
        best_lr = best_learning_rates(cfg, sweep)
        if log:
            log(f"learning rates kept: {best_lr}")
        runs = train_all([(variant, seed, best_lr[variant], dropout) for dropout in cfg.dropouts
                          for seed in cfg.seeds for variant in VARIANTS])
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
        "sweep": sweep,
        "best_lr": best_lr,
        "runs": runs,
        "seconds_total": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- analysis

MEASURES = {
    "valid": lambda run: run["final_valid_ppl"],                           # lower is better
    "ratio": lambda run: run["final_valid_ppl"] / run["final_train_ppl"],  # the validation/train ratio
}


def paired_differences(results: dict, dropout: float, measure: str) -> dict[int, float]:
    """Tied minus untied, seed by seed, for the comparison's runs at one dropout (below zero:
    tying helps)."""
    value = MEASURES[measure]
    runs = {(r["variant"], r["seed"]): r for r in results["runs"] if r["dropout"] == dropout}
    return {seed: value(runs["tied", seed]) - value(runs["untied", seed])
            for seed in results["config"]["seeds"]}


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile for p > 0.5: bisection on the CDF, Simpson's rule on the density."""
    scale = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))

    def density(x):
        return scale * (1 + x * x / df) ** (-(df + 1) / 2)

    def cdf(x, n=2000):  # x >= 0
        h = x / n
        inner = sum((4 if i % 2 else 2) * density(i * h) for i in range(1, n))
        return 0.5 + (density(0) + inner + density(x)) * h / 3

    low, high = 0.0, 50.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """The mean and its t-interval, mean ± t((1 + level) / 2, n − 1) · s / √n."""
    values = list(values)
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


# ---------------------------------------------------------------- command line

def parse_args(argv=None) -> tuple[Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for field in fields(Config):
        default = getattr(Config(), field.name)
        option = "--" + field.name.replace("_", "-")
        if isinstance(default, tuple):
            parser.add_argument(option, type=type(default[0]), nargs="+", default=list(default))
        else:
            parser.add_argument(option, type=type(default), default=default)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads in every run")
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at the same time, one process each")
    parser.add_argument("--out", type=Path, help="where to write the JSON of results")
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(Config)}
    values.update({f.name: tuple(values[f.name]) for f in fields(Config)
                   if isinstance(values[f.name], list)})
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

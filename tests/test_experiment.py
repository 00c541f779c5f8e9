"""Chapter 06's experiment: the script sweeps and trains both variants, the tie is one tensor,
and the cached results hold what the book page reads, down to the interval it shows."""
import json
import math
import statistics
import sys

import pytest
import torch
from scipy import stats

from notebooks import ROOT

sys.path.insert(0, str(ROOT / "experiments"))
import tying_experiment as te  # noqa: E402

CACHED = ROOT / "book" / "data" / "06_results.json"
MIN_PAIRS = 8


@pytest.fixture(scope="module")
def cached():
    return json.loads(CACHED.read_text())


def test_the_sweep_picks_a_rate_and_the_pairs_use_it():
    cfg = te.Config(steps=6, eval_every=3, lrs=(1e-3, 1e-2), sweep_seeds=(5,), seeds=(0,),
                    dropouts=(0.0, 0.3), max_tokens=12_000)
    results = te.run_experiment(cfg, threads=1, jobs=1, log=None)
    assert sorted((r["variant"], r["lr"], r["seed"]) for r in results["sweep"]) == sorted(
        (v, lr, 5) for v in te.VARIANTS for lr in cfg.lrs)
    for variant, lr in results["best_lr"].items():
        mine = {r["lr"]: r["final_valid_ppl"] for r in results["sweep"] if r["variant"] == variant}
        assert lr == min(mine, key=mine.get)
    assert sorted((r["variant"], r["dropout"]) for r in results["runs"]) == sorted(
        (v, p) for v in te.VARIANTS for p in cfg.dropouts)
    for run in results["runs"]:
        assert run["lr"] == results["best_lr"][run["variant"]]
        assert run["step"] == [3, 6]
        assert all(math.isfinite(p) and p > 1
                   for p in run["train_ppl"] + run["valid_ppl"] + [run["final_train_ppl"]])
    json.dumps(results)  # what --out writes


def test_the_tied_model_shares_one_tensor():
    V, d = 50, 8
    torch.manual_seed(0)
    tied = te.LSTMLanguageModel(V, d, tied=True)
    torch.manual_seed(0)
    untied = te.LSTMLanguageModel(V, d, tied=False)
    assert tied.head.weight is tied.embed.weight
    assert tied.head.weight.data_ptr() == tied.embed.weight.data_ptr()
    assert untied.head.weight is not untied.embed.weight
    assert te.count_parameters(untied) - te.count_parameters(tied) == V * d
    # the same seed gives both variants the same embedding and the same LSTM
    assert torch.equal(tied.embed.weight, untied.embed.weight)
    assert torch.equal(tied.lstm.weight_hh_l0, untied.lstm.weight_hh_l0)
    # a training step moves the one tensor: the head still reads the embedding
    optimiser = torch.optim.SGD(tied.parameters(), lr=1.0)
    logits, _ = tied(torch.tensor([[1, 2, 3]]))
    logits.sum().backward()
    optimiser.step()
    assert tied.head.weight is tied.embed.weight


@pytest.mark.parametrize("df", [2, 7, 30])
def test_t_quantile_agrees_with_scipy(df):
    assert te.t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-9)


def test_t_quantile_for_eight_pairs_is_the_table_value():
    # NIST/SEMATECH e-Handbook 1.3.6.7.2: t(0.975, 7) = 2.365, the value the page cites
    assert round(te.t_quantile(0.975, 7), 3) == 2.365


def test_cached_results_hold_what_the_page_uses(cached):
    assert cached["version"] == te.VERSION
    assert cached["config"] == te.config_dict(te.Config())
    for key in ("topics", "characters", "character_types", "sha256", "python", "tokens", "types",
                "train_tokens", "valid_tokens", "train_types", "vocab_size", "dropped_types",
                "max_dropped_count", "unk_share_train", "unk_share_valid"):
        assert key in cached["data"], key
    assert {"seconds_total", "environment", "sweep", "best_lr"} <= set(cached)
    cfg = te.Config()
    assert len(cfg.seeds) >= MIN_PAIRS
    assert not set(cfg.sweep_seeds) & set(cfg.seeds), "the sweep's seeds must not be compared"

    sweep = {(r["variant"], r["lr"], r["seed"]) for r in cached["sweep"]}
    assert sweep == {(v, lr, s) for v in te.VARIANTS for lr in cfg.lrs for s in cfg.sweep_seeds}
    assert all(r["dropout"] == 0.0 for r in cached["sweep"])
    assert cached["best_lr"] == te.best_learning_rates(cfg, cached["sweep"])

    runs = {(r["variant"], r["seed"], r["dropout"]): r for r in cached["runs"]}
    assert len(runs) == len(cached["runs"])
    assert set(runs) == {(v, s, p) for v in te.VARIANTS for s in cfg.seeds for p in cfg.dropouts}
    for run in cached["runs"] + cached["sweep"]:
        assert len(run["step"]) == len(run["train_ppl"]) == len(run["valid_ppl"])
        assert run["step"][-1] == cfg.steps
        for key in ("final_train_ppl", "final_valid_ppl", "best_valid_ppl", "best_step",
                    "seconds", "cpu_seconds"):
            assert key in run, key
        assert run["head_is_embedding"] == (run["variant"] == "tied")
    for (variant, seed, dropout), run in runs.items():
        assert run["lr"] == cached["best_lr"][variant]
        if variant == "tied":
            saved = runs["untied", seed, dropout]["parameters"] - run["parameters"]
            assert saved == cached["data"]["vocab_size"] * cfg.d_model


def test_the_interval_on_the_page_is_recomputed_from_the_runs(cached):
    """The page shows te.t_interval(te.paired_differences(...)); recompute it from the raw runs."""
    cfg = te.Config()
    n = len(cfg.seeds)
    t = stats.t.ppf(0.975, n - 1)
    for dropout in cfg.dropouts:
        for measure in ("valid", "ratio"):
            diffs = []
            for seed in cfg.seeds:
                pair = {r["variant"]: r for r in cached["runs"]
                        if r["seed"] == seed and r["dropout"] == dropout}
                assert set(pair) == set(te.VARIANTS)
                value = {v: pair[v]["final_valid_ppl"] / (pair[v]["final_train_ppl"]
                                                          if measure == "ratio" else 1)
                         for v in pair}
                diffs.append(value["tied"] - value["untied"])
            mean = statistics.fmean(diffs)
            half = t * statistics.stdev(diffs) / math.sqrt(n)
            shown = te.t_interval(te.paired_differences(cached, dropout, measure).values())
            assert shown == pytest.approx((mean, mean - half, mean + half), rel=1e-9, abs=1e-12)


def test_the_pages_compare_the_text_with_the_one_trained_on(cached, monkeypatch):
    """The pages state the stored facts; load() says whether this Python's text is the text
    the runs were trained on, by its SHA-256, and another text must not pass for it."""
    sys.path.insert(0, str(ROOT / "book"))
    import experiment_results

    here = te.text_sha256(te.corpus_text())
    assert experiment_results.load()[0]["same_text"] == (here == cached["data"]["sha256"])
    for other in (te.corpus_text() + "\n", "another text"):
        monkeypatch.setattr(te, "corpus_text", lambda other=other: other)
        assert experiment_results.load()[0]["same_text"] is False

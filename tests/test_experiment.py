"""Chapter 06's experiment: the script trains both variants, the tie is one tensor, and the
cached results hold what the book page reads."""
import json
import math
import sys

import torch

from notebooks import ROOT

sys.path.insert(0, str(ROOT / "experiments"))
import tying_experiment as te  # noqa: E402

CACHED = ROOT / "book" / "data" / "06_results.json"


def test_both_variants_train_a_few_steps():
    cfg = te.Config(steps=6, eval_every=3, seeds=(0,), max_tokens=12_000)
    results = te.run_experiment(cfg, threads=1, jobs=1, log=None)
    assert [run["variant"] for run in results["runs"]] == list(te.VARIANTS)
    for run in results["runs"]:
        assert run["step"] == [3, 6]
        assert all(math.isfinite(p) and p > 1 for p in run["train_ppl"] + run["valid_ppl"])
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


def test_cached_results_hold_what_the_page_uses():
    cached = json.loads(CACHED.read_text())
    assert cached["version"] == te.VERSION
    assert cached["config"] == te.config_dict(te.Config())
    for key in ("characters", "sha256", "tokens", "types", "train_tokens", "valid_tokens",
                "vocab_size", "unk_share_train", "unk_share_valid"):
        assert key in cached["data"], key
    assert {"seconds_total", "environment"} <= set(cached)
    cfg = cached["config"]
    runs = {(run["variant"], run["seed"]): run for run in cached["runs"]}
    assert set(runs) == {(v, s) for v in te.VARIANTS for s in cfg["seeds"]}
    for run in runs.values():
        assert len(run["step"]) == len(run["train_ppl"]) == len(run["valid_ppl"])
        assert run["step"][-1] == cfg["steps"]
        for key in ("final_train_ppl", "final_valid_ppl", "best_valid_ppl", "best_step",
                    "seconds", "cpu_seconds"):
            assert key in run, key
        assert run["head_is_embedding"] == (run["variant"] == "tied")
    for seed in cfg["seeds"]:
        saved = runs["untied", seed]["parameters"] - runs["tied", seed]["parameters"]
        assert saved == cached["data"]["vocab_size"] * cfg["d_model"]

"""Chapter 06's cached results, read the same way by its two pages (06 and 06b): the file
``book/data/06_results.json`` that ``experiments/tying_experiment.py`` wrote, checked against
the script's current version and configuration, and the runs of the comparison by key."""
import json
import sys

import numpy as np

from tied_book.pages import ROOT

sys.path.insert(0, str(ROOT / "experiments"))
import tying_experiment as te  # noqa: E402


def load():
    """(cached results, the script's configuration); a stale cache fails the build: the
    results on the pages were produced by the code and the configuration the script has now.

    ``cached["same_text"]`` says whether this Python's help text is the text the runs were
    trained on (its SHA-256 is the stored one). The pages state the stored facts about the
    text, ``cached["data"]``, whatever this Python's text is; when the texts are the same,
    the stored facts are checked against the text here."""
    cached = json.loads((ROOT / "book" / "data" / "06_results.json").read_text())
    cfg = te.Config()
    assert cached["version"] == te.VERSION, (cached["version"], te.VERSION)
    assert cached["config"] == te.config_dict(cfg), "06_results.json was made with another configuration"
    cached["same_text"] = te.text_sha256(te.corpus_text()) == cached["data"]["sha256"]
    if cached["same_text"]:
        here = te.prepare(cfg)["facts"]
        differ = [key for key, value in cached["data"].items() if key != "python" and here[key] != value]
        assert not differ, f"06_results.json's facts about the same text differ: {differ}"
    return cached, cfg


def dtag(dropout):
    """A dropout as a glue name can hold it: 0.3 -> "03"."""
    return f"{dropout:g}".replace(".", "")


def comparison_runs(cached, cfg):
    """{(variant, seed, dropout): run} of the paired comparison, each at its variant's rate."""
    runs = {(r["variant"], r["seed"], r["dropout"]): r for r in cached["runs"]}
    assert set(runs) == {(v, s, p) for v in te.VARIANTS for s in cfg.seeds for p in cfg.dropouts}
    assert all(r["lr"] == cached["best_lr"][r["variant"]] for r in runs.values())
    return runs


def seed_mean(runs, cfg):
    """mean_of(variant, dropout, value): the mean of ``value(run)`` over the seeds."""
    def mean_of(variant, dropout, value):
        return float(np.mean([value(runs[variant, s, dropout]) for s in cfg.seeds]))
    return mean_of


def idle_minutes(cached):
    """Minutes the whole experiment would take on idle cores, from the CPU time of its runs."""
    cpu_total = sum(run["cpu_seconds"] for run in cached["sweep"] + cached["runs"])
    return cpu_total / cached["environment"]["jobs"] / 60

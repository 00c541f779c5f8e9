"""Grading a class on a cluster: a stable share of the submissions per job, then one gradebook.

``grader grade --shard K/N`` grades the submissions whose student and file name hash
into share K of N (for a Slurm array or a Kubernetes indexed job: the same class folder
on every node, K from the job's index), into its own gradebook; ``grader merge`` joins
the shards' gradebooks into the one a single run would have written.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path


class ShardError(ValueError):
    """A ``K/N`` that names no share."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` with 1 ≤ K ≤ N."""
    k, slash, n = text.partition("/")
    if not (slash and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ShardError(f"--shard takes K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def in_shard(student: str, path: Path, shard: tuple[int, int]) -> bool:
    """Whether this submission is share K's: a hash of the student and the file name,
    so the split does not depend on the machine, the order of the files or the class size."""
    k, n = shard
    digest = hashlib.sha256(f"{student}/{path.name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


class ShardSetError(ValueError):
    """Gradebooks that are not one whole set of shards: ``key`` and ``params`` name why
    in the catalogs (``common.shards_*``)."""

    def __init__(self, key: str, **params):
        super().__init__(key)
        self.key, self.params = key, params


def merged_entries(gradebooks: list[Path]) -> tuple[dict[str, dict], dict]:
    """Every shard's submissions and the settings they were graded with.  The set must
    be whole (shares 1 to N of one N, each once) and graded alike (one secret, sandbox,
    grader and language): a missing or foreign shard is an error, not a smaller class."""
    entries: dict[str, dict] = {}
    shares: dict[int, Path] = {}
    counts, graded_with = set(), None
    for folder in gradebooks:
        book = json.loads((folder / "gradebook.json").read_text(encoding="utf-8"))
        shard = book.get("shard")
        if not (isinstance(shard, list) and len(shard) == 2):
            raise ShardSetError("common.shards_not_a_shard", folder=folder)
        k, n = shard
        counts.add(n)
        if k in shares or len(counts) > 1:
            raise ShardSetError("common.shards_mixed", folder=folder)
        shares[k] = folder
        if graded_with is None:
            graded_with = book.get("settings", {})
        elif book.get("settings", {}) != graded_with:
            raise ShardSetError("common.shards_mixed", folder=folder)
        found = book["submissions"]
        twice = set(found) & set(entries)
        if twice:
            raise ShardError(f"{folder} grades {sorted(twice)[0]} again: shards must not overlap")
        entries.update(found)
    missing = sorted(set(range(1, counts.pop() + 1)) - set(shares)) if counts else []
    if missing:
        raise ShardSetError("common.shards_incomplete", shares=", ".join(f"{k}/{n}" for k in missing))
    return entries, graded_with or {}

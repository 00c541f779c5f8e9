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


def merged_entries(gradebooks: list[Path]) -> dict[str, dict]:
    """Every shard's submissions; a submission in two shards is an error, not a choice."""
    entries: dict[str, dict] = {}
    for folder in gradebooks:
        found = json.loads((folder / "gradebook.json").read_text(encoding="utf-8"))["submissions"]
        twice = set(found) & set(entries)
        if twice:
            raise ShardError(f"{folder} grades {sorted(twice)[0]} again: shards must not overlap")
        entries.update(found)
    return entries

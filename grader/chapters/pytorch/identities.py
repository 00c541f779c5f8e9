"""What the identities, data pointers and strides the kernel sent say about a tie.

The probes report, raw, the ``id`` of the embedding's and the head's Parameters, their
data pointers and strides, and whether assigning the head bumped the embedding's version
counter; every comparison is made here, where the notebook's code cannot reach.
"""
from __future__ import annotations

from grader.registry import Finding


def is_transposed_view(facts: dict, v: int, d: int) -> bool:
    if list(facts["head_shape"]) != [d, v]:
        return False
    return v != d or list(facts["head_stride"]) == list(reversed(facts["embed_stride"]))


def same_object(facts: dict) -> bool:
    """Whether the head holds the embedding's Parameter itself, from the identities the
    kernel sent: the comparison is made here, where the notebook's code cannot reach."""
    return facts["head_id"] == facts["embed_id"]


def distinct(numbers: list) -> int:
    """How many different identities (or pointers) the kernel sent."""
    return len(set(numbers))


def untied_finding(facts: dict, v: int, d: int, copied: bool, transposed: bool = False) -> Finding:
    """Why the head's weight is not the embedding's (V, d) Parameter, as far as the facts
    tell; ``copied`` and ``transposed``: it holds the embedding's values, or their transpose."""
    same_memory = facts["head_ptr"] == facts["embed_ptr"]
    if same_memory and is_transposed_view(facts, v, d):
        return Finding("pytorch.transposed")
    if same_memory:  # nn.Parameter(weight) shares the version counter, a .data alias does not
        return Finding("pytorch.new_parameter" if facts["version_bump"] else "pytorch.data_alias")
    if copied:
        return Finding("pytorch.copied")
    return Finding("pytorch.transposed" if transposed else "pytorch.not_tied")

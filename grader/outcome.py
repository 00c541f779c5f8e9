"""What grading a notebook comes to, in the words both sides use.

The supervisor says how a worker stopped (``TIMEOUT``, ``OOM``), the judge and the
in-notebook check say how each item did (a ``Verdict``, with a ``Finding`` when it
failed), and the reports, the gradebook and the platforms show them: all of them
import these names from here, and this module imports nothing of the grader.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Outcomes of an item.  PASS earns the points; everything else earns none.
PASS, FAIL, TIMEOUT, OOM, NOT_REACHED = "pass", "fail", "timeout", "oom", "not_reached"

# The item every chapter has besides its exercises: did every cell of the notebook run?
NOTEBOOK_ITEM = "notebook"


@dataclass(frozen=True)
class Finding:
    """What went wrong, as a message key of the catalogs and its parameters."""

    key: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    item: str
    points: int
    max_points: int
    status: str
    finding: Finding | None = None
    case: str = ""  # catalog key of the label of the case that failed
    shown: dict = field(default_factory=dict)  # the sizes that label shows
    visibility: str = "visible"  # the failing case's (registry.VISIBILITIES)

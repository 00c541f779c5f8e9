"""``Result``: the verdicts of one notebook, as ``grader check``, ``grader grade`` and the
in-notebook ``check()`` return them.  A plain record: the reports (``grader.outputs``)
write it, and ``check()``'s ``CheckResult`` (``grader.selfcheck.panel``) shows it in a
notebook."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.outcome import PASS, Finding, Verdict

GRADER_ERROR = "common.grader_error"  # the finding of a notebook the grader itself failed on


@dataclass
class Result:
    path: Path
    chapter: str = ""
    sha256: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    bad: Finding | None = None  # set when the file could not be graded at all
    seconds: float = 0.0
    log: str = ""  # the end of the worker's log: pytest's report, errors outside the cells
    lang: str = "en"  # the language it shows itself in

    @property
    def points(self) -> int:
        return sum(v.points for v in self.verdicts)

    @property
    def max_points(self) -> int:
        return sum(v.max_points for v in self.verdicts)

    @property
    def passed(self) -> bool:
        return self.bad is None and all(v.status == PASS for v in self.verdicts)


def grader_error(path: Path, exc: BaseException) -> Result:
    """The row of a submission the grader itself failed on."""
    return Result(path, bad=Finding(GRADER_ERROR, {"type": type(exc).__name__, "message": str(exc)[:200]}))

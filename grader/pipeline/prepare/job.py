"""The job: what the grader hands the worker for one notebook, written once.

``runner.prepare`` builds it, ``write`` puts it in the job's folder as ``job.json``,
the supervisor starts the worker on that file, and the worker reads it back with
``read``, which accepts exactly the fields below with their types and nothing else.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

FILE = "job.json"


class BadJob(ValueError):
    """``job.json`` is not a job this grader wrote."""


@dataclass(frozen=True)
class Job:
    path: str  # this job's file, ``<folder>/job.json``; the folder is the job's alone
    notebook: str  # the copy of the submission the kernel runs, in the kernel's working directory
    spec: str  # the probe spec (``probe_bundle.write_spec``): the cases the kernel is given
    ini: str  # an empty pytest configuration, so that nothing of the submission's folder configures pytest
    probe_module: str  # the chapter's probe module, sent as source into the kernel
    items: tuple[str, ...]  # the items whose checks run, in the chapter's order

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

    def write(self) -> None:
        Path(self.path).write_text(json.dumps({**asdict(self), "items": list(self.items)}), encoding="utf-8")


def read(path: str) -> Job:
    """The job in ``path``; ``BadJob`` when a field is missing, extra or of another type."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadJob(f"{path}: {exc}") from None
    names = [f.name for f in fields(Job)]
    if not isinstance(data, dict) or sorted(data) != sorted(names):
        raise BadJob(f"{path}: the fields are not {', '.join(names)}")
    items = data["items"]
    if not all(isinstance(data[name], str) for name in names if name != "items") or not (
            isinstance(items, list) and all(isinstance(item, str) for item in items)):
        raise BadJob(f"{path}: every field is a string, and items a list of strings")
    return Job(**{**data, "items": tuple(items)})

"""Installed size of what grading each chapter needs (``grader.outputs.grading_requirements``).

Run with the project's virtualenv: ``.venv/bin/python tools/grading_install_size.py``.
It follows each requirement's dependencies (for this Python and platform) through the
installed distributions' metadata and adds up the files they installed, once each: the
size of a Gradescope image's virtualenv, less Python and the system.  torch here is the
CPU build, as PyTorch's CPU wheel index serves it.
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.chapters import chapters
from grader.outputs.grading_requirements import requirements  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def closure(names: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = [Requirement(n).name for n in names]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def installed_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    return sum(f.size or 0 for f in dist.files or [])


def main() -> None:
    for chapter in chapters():
        pypi, cpu_index = requirements(chapter, ROOT)
        names = closure(pypi + cpu_index)
        total = sum(installed_bytes(n) for n in names)
        print(f"{chapter}: {len(names)} distributions, {total / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()

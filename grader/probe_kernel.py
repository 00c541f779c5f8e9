"""Building the probe program: the same source runs in a kernel and in-process."""
from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

from . import judge
from .probe_runtime import decode_items, encode, run_items
from .registry import Chapter


@cache
def probe_source(chapter_probe_module: str) -> str:
    """The runtime plus the chapter's probes, as one self-contained program."""
    parts = []
    for name in ("grader.probe_runtime", chapter_probe_module):
        origin = importlib.util.find_spec(name).origin
        parts.append(Path(origin).read_text(encoding="utf-8"))
    return "\n\n".join(parts)


def spec_items(ch: Chapter, only: str | None = None) -> list[dict]:
    """Every item's probe and cases, encoded as they travel to the kernel."""
    return [
        {
            "name": item.name,
            "probe": item.probe,
            "cases": [{"label": c.label, "args": encode(c.args)} for c in judge.cases(ch.id, item.name)],
        }
        for item in ch.items
        if only is None or only in (item.name, item.target)
    ]


def write_spec(ch: Chapter, spec_path: Path, out_path: Path) -> None:
    spec_path.write_text(json.dumps({"out": str(out_path), "items": spec_items(ch)}), encoding="utf-8")


def run_in_process(ch: Chapter, namespace: dict, only: str | None = None) -> dict[str, list]:
    """The probes over ``namespace`` in this process (the in-notebook check)."""
    program = {"__name__": "_tied_probe"}
    exec(compile(probe_source(ch.probe_module), "<tied-probe>", "exec"), program)
    items = decode_items(spec_items(ch, only))
    facts: dict[str, list] = {}
    run_items(items, program, namespace, lambda name, found: facts.__setitem__(name, json.loads(json.dumps(found))))
    return facts

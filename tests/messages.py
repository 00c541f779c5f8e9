"""What the grader tells a student about one item of a wrong notebook of ``tests/pitfalls/``,
for the chapter tests that check a message quotes the right values."""
from __future__ import annotations

from conftest import judged_in_process
from pitfalls import PITFALLS


def message(pitfall_id: str, item: str) -> str:
    """The English message on ``item`` when the pitfall ``pitfall_id`` is judged in process."""
    entry = judged_in_process(next(p for p in PITFALLS if p.id == pitfall_id))
    return next(i["message"] for i in entry["items"] if i["item"] == item)

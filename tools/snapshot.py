"""A snapshot of the grader's behaviour: the verdict, key and message of every item of
every pitfall (``tests/pitfalls``), solution and exercise notebook, in the three
languages, judged in this process as ``tests/inprocess.py`` does.

    .venv/bin/python tools/snapshot.py OUT.json [CHAPTER ...]
    .venv/bin/python tools/snapshot.py --diff BEFORE.json AFTER.json

A change to the grader's rules is then reviewed as the list of entries whose verdict
or message moved (``--diff``), so that behaviour elsewhere is seen to be unchanged.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LANGS = ("en", "es", "ko")


def _entries(nb, chapter_id: str) -> dict:
    import grader.pipeline.judge.items as judging
    from grader import disk_cache
    from grader.chapters import chapter
    from grader.outputs.report import as_dict
    from grader.pipeline.judge.notebook import notebook_item_verdict
    from grader.pipeline.prepare.probe_bundle import run_in_process
    from grader.result import Result
    from inprocess import run_cells

    ch = chapter(chapter_id)
    namespace, cells = run_cells(nb)
    facts = run_in_process(ch, namespace)
    result = Result("<snapshot>", ch.id)
    result.verdicts = [notebook_item_verdict(cells)] + [
        judging.judge_item(ch, item, facts[item.name], disk_cache) for item in ch.items]
    out = {}
    for lang in LANGS:
        entry = as_dict(result, lang)
        out[lang] = {i["item"]: [i["verdict"], i["key"], i["message"]] for i in entry["items"]}
    return out


def take(only: list[str]) -> dict:
    import nbformat

    from notebooks import replace_regions
    from pitfalls import PITFALLS

    snap = {}
    chapters = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
    for ch in chapters:
        if only and ch not in only:
            continue
        for kind in ("solutions", "exercises"):
            snap[f"{kind}/{ch}"] = _entries(nbformat.read(ROOT / kind / f"{ch}.ipynb", as_version=4), ch)
            print(kind, ch, file=sys.stderr, flush=True)
        for p in PITFALLS:
            if p.chapter == ch:
                snap[f"pitfall/{p.id}"] = _entries(replace_regions(p.chapter, p.regions), ch)
    return snap


def diff(before: dict, after: dict) -> list[str]:
    lines = []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            lines.append(f"{name}: {'added' if name in after else 'removed'}")
            continue
        for lang in LANGS:
            b, a = before[name][lang], after[name][lang]
            for item in sorted(set(b) | set(a)):
                if b.get(item) != a.get(item):
                    lines.append(f"{name} [{lang}] {item}: {b.get(item)} -> {a.get(item)}")
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] == ["--diff"] and len(argv) == 3:
        before, after = (json.loads(Path(p).read_text()) for p in argv[1:])
        print("\n".join(diff(before, after)) or "no difference")
        return 0
    if not argv or argv[0].startswith("-"):
        print("usage: tools/snapshot.py OUT.json [CHAPTER ...] | --diff BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(json.dumps(take(argv[1:]), ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

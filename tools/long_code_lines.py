"""List the code lines of the book that a reader sees and that are longer than 88 columns.

At 1280 px the book's code box holds about 88 columns of its monospace font; a longer line
scrolls sideways in its box (the book fades the cut side, see book/_static/tied.css). Run
from the repository root: ``.venv/bin/python tools/long_code_lines.py [book/01_linen.md ...]``;
prints ``page:line (columns) text`` and exits 1 when it finds any.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext

COLUMNS = 88
HIDDEN = {"remove-input", "remove-cell", "hide-input", "hide-cell"}
FENCE = re.compile(r"^(`{3,}|~{3,})")


def long_lines(page: Path) -> list[tuple[int, int, str]]:
    """(line number in the page, columns, text) of each visible code line over COLUMNS."""
    text = page.read_text(encoding="utf-8")
    notebook = jupytext.reads(text, fmt="md:myst")
    lines = text.splitlines()
    found, searched_to = [], 0
    for cell in notebook.cells:
        source = cell.source.splitlines()
        if cell.cell_type == "code":
            shown = not HIDDEN & set(cell.metadata.get("tags", []))
        else:   # code fenced in prose (```sh, ```{code-block}); not a directive's text
            shown, fence, code = [], None, False
            for line in source:
                if fence is None and (m := FENCE.match(line)):
                    fence, info = m.group(1), line[m.end():].strip()
                    code = not info.startswith("{") or info.startswith(("{code-block}", "{code}"))
                elif fence is not None and line.strip() == fence:
                    fence = None
                elif code and fence is not None:
                    shown.append(line)
            source, shown = shown, True
        for line in source if shown else []:
            if len(line) > COLUMNS:
                number = lines.index(line, searched_to) + 1
                searched_to = number
                found.append((number, len(line), line.strip()))
    return found


def main(pages: list[str]) -> int:
    any_found = False
    for page in [Path(p) for p in pages] or sorted(Path("book").glob("*.md")):
        for number, columns, text in long_lines(page):
            any_found = True
            print(f"{page}:{number} ({columns}) {text[:90]}")
    return int(any_found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

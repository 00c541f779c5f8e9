"""List the code lines of the book that a reader sees and that are longer than 80 columns.

At 1280 px the book's code box holds a little more than 80 columns of its monospace font;
a longer line scrolls sideways in its box (the book fades the cut side, see
book/_static/tied.css), so a reader at a desk would miss its end. Seen are a page's code
cells (folded ones too, but not those whose input is removed), the code fenced in its prose, and what
it shows of other files with ``{literalinclude}`` (the object that ``:pyobject:`` names,
the lines from ``:start-at:`` up to ``:end-before:``, or else the whole file). Run from
the repository root:
``.venv/bin/python tools/long_code_lines.py [book/01_linen.md ...]``; prints
``file:line (columns) text`` and exits 1 when it finds any.
"""
from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import jupytext

COLUMNS = 80
HIDDEN = {"remove-input", "remove-cell"}
FENCE = re.compile(r"^(`{3,}|~{3,})")
INCLUDE = re.compile(r"^(`{3,}|~{3,}|:{3,})\{literalinclude\}\s+(\S+)")
OPTION = re.compile(r"^:([\w-]+):\s*(.*)$")


def included_lines(path: Path, options: dict[str, str]) -> list[str]:
    """The lines of ``path`` that a literalinclude with these options shows."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if name := options.get("pyobject"):
        node: ast.AST = ast.parse("\n".join(lines))
        for part in name.split("."):
            node = next(n for n in ast.iter_child_nodes(node)
                        if getattr(n, "name", None) == part)
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        return lines[first - 1:node.end_lineno]
    start = options.get("start-at", "").strip('"')
    end = options.get("end-before", "").strip('"')
    first = next(i for i, line in enumerate(lines) if start in line) if start else 0
    last = next((i for i, line in enumerate(lines[first + 1:], first + 1)
                 if end in line), len(lines)) if end else len(lines)
    return lines[first:last]


def shown_code(page: Path) -> Iterator[tuple[Path, str]]:
    """(file, line) of each code line that the page shows."""
    notebook = jupytext.reads(page.read_text(encoding="utf-8"), fmt="md:myst")
    for cell in notebook.cells:
        if cell.cell_type == "code":
            if not HIDDEN & set(cell.metadata.get("tags", [])):
                yield from ((page, line) for line in cell.source.splitlines())
            continue
        # code fenced in prose (```sh, ```{code-block}); not a directive's text
        fence, code, include = None, False, None
        for line in cell.source.splitlines():
            if include is not None:
                if m := OPTION.match(line.strip()):
                    include[1][m.group(1)] = m.group(2).strip()
                    continue
                yield from ((include[0], shown)
                            for shown in included_lines(*include))
                include = None
            if fence is None and (m := FENCE.match(line)):
                fence, info = m.group(1), line[m.end():].strip()
                code = not info.startswith("{") or info.startswith(("{code-block}", "{code}"))
            elif fence is not None and line.strip() == fence:
                fence = None
            elif code and fence is not None:
                yield page, line
            if m := INCLUDE.match(line.strip()):
                include = ((page.parent / m.group(2)).resolve(), {})


def long_lines(page: Path) -> list[tuple[Path, int, int, str]]:
    """(file, line number in it, columns, text) of each shown code line over COLUMNS."""
    found, searched_to = [], {}
    for path, line in shown_code(page):
        if len(line) > COLUMNS:
            lines = path.read_text(encoding="utf-8").splitlines()
            try:   # the next such line in the file
                number = lines.index(line, searched_to.get(path, 0)) + 1
            except ValueError:   # the file is shown again, from an earlier line
                number = lines.index(line) + 1
            searched_to[path] = number
            found.append((path, number, len(line), line.strip()))
    return found


def main(pages: list[str]) -> int:
    any_found, seen = False, set()
    for page in [Path(p) for p in pages] or sorted(Path("book").glob("*.md")):
        for path, number, columns, text in long_lines(page):
            if (path, number) not in seen:
                seen.add((path, number))
                any_found = True
                where = path.relative_to(Path.cwd().resolve()) if path.is_absolute() else path
                print(f"{where}:{number} ({columns}) {text[:90]}")
    return int(any_found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

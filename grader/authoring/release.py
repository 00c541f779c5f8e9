"""``grader release``: write exercises/ from solutions/, the single source.

In a solution cell, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
become one ``raise NotImplementedError("<hint>")`` at the same indentation; the hint
is whatever follows the BEGIN marker.  The worked examples (cells marked
``# NBVAL_CHECK_OUTPUT``) carry the marker as a cell tag instead, and a markdown cell
after each states what the executed solution printed, in text that running the cell
does not replace; the grader's copy of those outputs goes to
``grader/expected/<chapter>.json``.  A cell after the first lists the points of each
graded item.  Every output and execution count is dropped, the cells keep the
solution's ids (nbformat 4.5: JupyterLab opens the file unmodified), and the
solution's saved widget state stays behind.

The marker's hint is the only place it is written: release also writes it into the
English catalog as ``<chapter>.hint_<owner>`` (``marker_key``), the owner being the
function or method the marker sits in, and records that key by the owner's name in
``grader/expected/<chapter>.json`` (``stub_hints``): the kernel reports which function
raised, so the grader gives the stub's hint from the catalog, in Spanish and Korean too
(``tests/test_item_properties.py`` requires those two entries), whatever the raise says.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from grader.authoring.notebook_clean import clean, cleaned_text
from grader.chapters import chapter, chapter_modules
from grader.expected_outputs import (
    MARKER,
    MARKER_TAG,
    dumps,
    expected_from,
    is_checked,
    marker,
    output_text,
    shown_outputs,
)
from grader.outcome import NOTEBOOK_ITEM

BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION:?\s*(.*)$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
DEFAULT_HINT = "write your solution here"


class MarkerError(ValueError):
    pass


STUB_COLUMNS = 80  # the book shows the stubs; its code lines fit 80 columns


def raise_not_implemented(indent: str, hint: str) -> list[str]:
    """The stub's ``raise NotImplementedError(hint)``, its hint split between words into
    adjacent string literals when one line would pass STUB_COLUMNS (the message is the same)."""
    line = f"{indent}raise NotImplementedError({hint!r})"
    if len(line) <= STUB_COLUMNS:
        return [line]
    inner, width = indent + "    ", STUB_COLUMNS - len(indent) - 4 - 3  # 3: quotes and a margin
    parts, part = [], ""
    for word in hint.split(" "):
        if part and len(part) + 1 + len(word) > width:
            parts.append(part + " ")
            part = word
        else:
            part = f"{part} {word}" if part else word
    parts.append(part)
    return [f"{indent}raise NotImplementedError(", *(f"{inner}{p!r}" for p in parts), f"{indent})"]


def strip_solutions(source: str, where: str) -> str:
    out, inside = [], False
    for number, line in enumerate(source.splitlines(), 1):
        begin = BEGIN.match(line)
        if begin:
            if inside:
                raise MarkerError(f"{where}, line {number}: BEGIN SOLUTION inside a solution")
            indent, hint = begin.groups()
            hint = hint.strip() or DEFAULT_HINT
            out.extend(raise_not_implemented(indent, hint))
            inside = True
        elif END.match(line):
            if not inside:
                raise MarkerError(f"{where}, line {number}: END SOLUTION without BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{where}: BEGIN SOLUTION never ends")
    return "\n".join(out)


def owner(source: str, start: int, indent: str) -> str:
    """The function, method or class a marker at ``start`` sits in: ``TiedIO.__call__``.
    Each enclosing ``def`` or ``class`` is the nearest one above, indented less."""
    names, width = [], len(indent)
    for match in reversed(list(DEF.finditer(source, 0, start))):
        if len(match.group(1)) < width:
            names.append(match.group(2))
            width = len(match.group(1))
    return ".".join(reversed(names))


def catalog_prefix(chapter_id: str) -> str:
    """The prefix of a chapter's catalog keys, its module's name below ``grader.chapters``
    (``grader.chapters.linen.grade``, or its folder's, ``grader.chapters.linen.grade``): ``linen``
    for 01_linen."""
    return chapter_modules()[chapter_id].removeprefix("grader.chapters.").split(".")[0]


def marker_key(chapter_id: str, owner_name: str) -> str:
    """The catalog key of the hint of the stub in ``owner_name``: ``TiedIO.__call__`` of
    01_linen is ``linen.hint_tiedio_call`` (lower case, dunders dropped)."""
    words = (part.strip("_").lower() for part in owner_name.split("."))
    return f"{catalog_prefix(chapter_id)}.hint_{'_'.join(words)}"


def stubs(nb: nbformat.NotebookNode) -> dict[str, tuple[str, str]]:
    """Every solution marker with a hint, by the function it sits in (``TinyLM.__init__``):
    its catalog key and its hint."""
    chapter_id, found = nb.metadata["tied"]["chapter"], dict[str, tuple[str, str]]()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        offset = 0
        for line in cell.source.splitlines(keepends=True):
            begin = BEGIN.match(line.rstrip("\n"))
            if begin and begin.group(2).strip():
                name = owner(cell.source, offset, begin.group(1))
                key = marker_key(chapter_id, name)
                if key in dict(found.values()):
                    raise MarkerError(f"{chapter_id}: two hints for {key}; one stub per function")
                found[name] = (key, begin.group(2).strip())
            offset += len(line)
    return found


def hints(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The hint of every solution marker of a solution notebook, by its catalog key."""
    return dict(stubs(nb).values())


def catalog_with_hints(path: Path, prefix: str, found: dict[str, str]) -> str:
    """The English catalog of a chapter with its hints replaced by ``found``, in the
    catalogs' format (sorted keys, two spaces, UTF-8 as written)."""
    current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    kept = {k: v for k, v in current.items() if not k.startswith(f"{prefix}.hint_")}
    return json.dumps(dict(sorted({**kept, **found}.items())), ensure_ascii=False, indent=2) + "\n"


def worked_example_outputs(cell, where: str) -> list:
    """A worked example's outputs, refused unless the solution was stored executed."""
    if cell.execution_count is None or any(o.output_type == "error" for o in cell.outputs):
        raise MarkerError(f"{where}: a worked example (NBVAL_CHECK_OUTPUT) needs the outputs of a "
                          "successful run; execute the solution and save it")
    return shown_outputs(cell.outputs)


def expected_cell(example, outputs: list) -> nbformat.NotebookNode:
    """The markdown that states a worked example's expected output, after it."""
    printed = output_text(outputs).rstrip("\n")
    cell = nbformat.v4.new_markdown_cell(
        "**Expected output.** `check()` and `grader check` run the cell above and compare what it "
        f"prints with this:\n\n```text\n{printed}\n```")
    cell.id = f"{example.id}-expected"[:64]
    return cell


def points_cell(chapter_id: str) -> nbformat.NotebookNode:
    """The markdown that lists what is graded, and for how many points."""
    items = chapter(chapter_id).items
    listed = "\n".join(f"- `{item.name}`: {item.points}" for item in items)
    cell = nbformat.v4.new_markdown_cell(
        f"**Points: {sum(i.points for i in items) + 1}.**\n\n{listed}\n- `{NOTEBOOK_ITEM}`: 1, when every cell "
        "runs from the top and each worked example prints its expected output")
    cell.id = "points"
    return cell


def tagged(cell) -> None:
    """A worked example marked by its tag rather than by a comment line the student reads."""
    cell.source = "\n".join(line for line in cell.source.split("\n") if marker(line) != MARKER)
    tags = cell.metadata.get("tags", [])
    cell.metadata["tags"] = tags + [MARKER_TAG] * (MARKER_TAG not in tags)


def exercise_from(solution: Path) -> tuple[nbformat.NotebookNode, dict]:
    """The exercise of a solution notebook, and its expected outputs (``expected_from``)
    with the catalog key of each stub's hint by the function it sits in, and the code it
    gives: the code cells with no solution region that are no worked example
    (``expected_outputs.given_lines``)."""
    nb = nbformat.read(solution, as_version=4)
    nbformat.validator.normalize(nb)  # every cell has an id
    hint_keys = {name: key for name, (key, _) in stubs(nb).items()}
    cells, given = [], []
    for number, cell in enumerate(nb.cells):
        cells.append(cell)
        if number == 0:
            cells.append(points_cell(nb.metadata["tied"]["chapter"]))
        if cell.cell_type == "code":
            where = f"{solution.name}, cell {number + 1}"
            source, cell.source = cell.source, strip_solutions(cell.source, where)
            if is_checked(cell):
                cell.outputs = worked_example_outputs(cell, where)
                tagged(cell)
                cells.append(expected_cell(cell, cell.outputs))
            elif cell.source == source:
                given.append(source)
    nb.cells = cells
    expected = {**expected_from(nb), "stub_hints": hint_keys,  # the judge names a stub's hint by these
                "given": given}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.nbformat, nb.nbformat_minor = 4, 5
    return clean(nb), expected


def release(root: Path, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) every exercise, the grader's expected
    outputs and the English catalog's hints; return the files that differ."""
    differ = []
    for solution in sorted((root / "solutions").glob("*.ipynb")):
        exercise, expected = exercise_from(solution)
        prefix = catalog_prefix(exercise.metadata["tied"]["chapter"])
        catalog = root / "grader" / "messages" / "en" / f"{prefix}.json"
        for target, content in (
            (solution, cleaned_text(solution)),
            (root / "exercises" / solution.name, nbformat.writes(exercise) + "\n"),
            (root / "grader" / "expected" / f"{solution.stem}.json", dumps(expected)),
            (catalog, catalog_with_hints(catalog, prefix, hints(nbformat.read(solution, as_version=4)))),
        ):
            current = target.read_text(encoding="utf-8") if target.exists() else None
            if current != content:
                differ.append(str(target.relative_to(root)))
                if not check:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(content, encoding="utf-8")
    return differ

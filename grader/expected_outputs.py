"""The worked examples' outputs: what nbval compares a submission's checked cells with.

A code cell marked ``# NBVAL_CHECK_OUTPUT`` is a worked example: the exercise shows
what it prints, and nbval (``--nbval-lax``) compares what the cell prints now with the
outputs saved in the notebook.  Those saved outputs must be the solution's, never the
student's.  ``grader release`` writes them to ``grader/expected/<chapter>.json`` (so an
installed grader needs no ``solutions/``), and ``install`` puts them into the grader's
working copy of a submission, whatever the student's file holds; every other output
there is cleared, so a student's saved outputs are neither the reference nor judged.
"""
from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from pathlib import Path

from grader.cells import first_line
from grader.kernel.runtime import shorten
from grader.registry import ErrorPattern

MARKER = "NBVAL_CHECK_OUTPUT"
MARKER_TAG = "nbval-check-output"
# Other nbval markers would let a cell skip the run, raise, or escape the comparison;
# the grader decides what is checked, so in its copy they become plain comments.
ESCAPES = ("NBVAL_IGNORE_OUTPUT", "PYTEST_VALIDATE_IGNORE_OUTPUT", "NBVAL_RAISES_EXCEPTION", "NBVAL_SKIP")
ESCAPE_TAGS = {m.lower().replace("_", "-") for m in ESCAPES} | {"raises-exception"}
MISSING_KEY = "worked_examples_missing"  # in the copy's metadata["tied"], read by the worker
SANITIZERS = Path(__file__).with_name("nbval_sanitize.cfg")  # for --nbval-sanitize-with
SHOWN = 100  # characters of each side of a mismatch in a message
NEWLINE = " ↵ "

# What the worker records for a worked example that fails, and the message of each.
MISMATCH, NOTHING_PRINTED, MISSING = "OutputMismatch", "NothingPrinted", "WorkedExampleMissing"
STOPPED = "CellStopped"  # check(): a cell's last run raised before binding a name (its error unseen)
ERRORS = (
    ErrorPattern("common.output_mismatch", MISMATCH),
    ErrorPattern("common.output_nothing", NOTHING_PRINTED),
    ErrorPattern("common.worked_example_missing", MISSING),
    ErrorPattern("common.cell_stopped", STOPPED),
)


def source_text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(map(str, source)) if isinstance(source, list) else str(source)


def tags_of(cell: dict) -> list:
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return tags if isinstance(tags, list) else []


def marker(line: str) -> str:
    """The nbval marker a source line holds, as nbval reads it, or ``""``."""
    line = line.strip()
    return line.lstrip("#").strip() if line.startswith("#") else ""


def is_checked(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and (
        MARKER_TAG in tags_of(cell) or any(marker(line) == MARKER for line in source_text(cell).splitlines()))


def shown_outputs(outputs: list) -> list:
    """A worked example's outputs as the exercise shows them: warnings on stderr, which
    depend on the machine, are left out (nbval is told to skip stderr as well)."""
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def expected_from(exercise) -> dict:
    """The expected outputs of an exercise notebook (as ``grader release`` makes it,
    its worked examples' outputs still in), in the form ``grader/expected/<chapter>.json``
    holds: each example's code cell number, position among all cells, source, outputs."""
    code = [(position, cell) for position, cell in enumerate(exercise["cells"], 1) if cell["cell_type"] == "code"]
    return {
        "chapter": exercise["metadata"]["tied"]["chapter"],
        "worked_examples": [
            {"cell": number, "position": position, "source": source_text(cell),
             "outputs": shown_outputs(cell["outputs"])}
            for number, (position, cell) in enumerate(code, 1)
            if is_checked(cell)
        ],
    }


def dumps(expected: dict) -> str:
    return json.dumps(expected, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


@cache
def for_chapter(chapter_id: str) -> dict:
    folder = resources.files("grader").joinpath("expected")
    return json.loads(folder.joinpath(f"{chapter_id}.json").read_text(encoding="utf-8"))


def stub_hint(chapter_id: str, error: dict) -> dict:
    """``{"message_key": key}`` for a NotImplementedError raised in one of the chapter's
    stubs, the key ``grader release`` recorded for the function it sits in (``stub_hints``);
    ``{}`` for one raised anywhere else."""
    stubs = for_chapter(chapter_id).get("stub_hints", {}) if chapter_id else {}
    key = stubs.get(str(error.get("function", "")))
    return {"message_key": key} if key else {}


@cache
def example_lines(chapter_id: str) -> frozenset[str]:
    """The worked examples' lines, as a failing line is quoted: the exercise wrote them,
    so a message quoting one says it is in the worked example, not the student's line."""
    return frozenset(shorten(line.strip()) for example in for_chapter(chapter_id)["worked_examples"]
                     for line in example["source"].splitlines() if line.strip() and marker(line) != MARKER)


@cache
def given_lines(chapter_id: str) -> frozenset[str]:
    """The lines of the code the exercise gives outside the worked examples and the
    exercises' own cells (chapter 03's ``Block``), as a failing line is quoted: a
    message names the student's line that called them (``judge.items.own_line``)."""
    return frozenset(shorten(line.strip()) for source in for_chapter(chapter_id).get("given", [])
                     for line in source.splitlines() if line.strip())


def install(data: bytes, chapter_id: str) -> bytes:
    """The grader's working copy of a submission: see ``with_expected_outputs``."""
    return with_expected_outputs(data, for_chapter(chapter_id))


def comparable(source: str) -> str:
    """A cell's code as ``align`` compares it: no trailing spaces, no marker line (the
    exercise marks its worked examples with a tag, the solution with the comment)."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines() if marker(line) != MARKER).strip()


def align(expected: list[str], student: list[str]) -> list[int | None]:
    """For each worked example's source, the index of the student's checked cell that
    stands for it, or None when there is none (deleted, or its marker removed).

    Cells with the same source pair up; between those, edited cells pair in order, so
    a student who inserts, deletes or edits cells still has each example compared.
    """
    pairs: list[int | None] = [None] * len(expected)
    matcher = difflib.SequenceMatcher(None, list(map(comparable, expected)), list(map(comparable, student)),
                                      autojunk=False)
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(min(i2 - i1, j2 - j1)):
            pairs[i1 + k] = j1 + k
    return pairs


def without_escapes(cell: dict) -> None:
    lines = source_text(cell).split("\n")
    cell["source"] = "\n".join("#" if marker(line) in ESCAPES else line for line in lines)
    if tags_of(cell):  # tags that are not strings mean nothing to Jupyter and crash nbval
        cell["metadata"]["tags"] = [t for t in tags_of(cell) if isinstance(t, str) and t not in ESCAPE_TAGS]


def with_expected_outputs(data: bytes, expected: dict) -> bytes:
    """The notebook ``data`` with every worked example holding the solution's outputs.

    Each checked cell that stands for a worked example (see ``align``) gets the
    example's outputs and an execution count (nbval compares only cells that have
    one); every other code cell loses its outputs and count, so nbval runs it without
    comparing.  Worked examples with no counterpart are listed in the metadata, for
    the worker to report.  ``data`` is a notebook ``submission.load`` accepted.
    """
    nb = json.loads(data.decode("utf-8"))
    code = [cell for cell in nb["cells"] if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    for cell in code:
        without_escapes(cell)
        cell["outputs"], cell["execution_count"] = [], None
    checked = [cell for cell in code if is_checked(cell)]
    examples = expected["worked_examples"]
    missing = []
    for example, index in zip(examples, align([e["source"] for e in examples], list(map(source_text, checked)))):
        if index is None:
            missing.append({"cell": example["cell"], "position": example.get("position", example["cell"]),
                            "first_line": first_line(example["source"]), "expected": output_text(example["outputs"])})
        else:
            checked[index]["outputs"], checked[index]["execution_count"] = example["outputs"], example["cell"]
    metadata = nb.setdefault("metadata", {})
    metadata["tied"] = {**metadata.get("tied", {}), MISSING_KEY: missing}
    return json.dumps(nb, ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------- in the worker

def output_text(outputs: list) -> str:
    """What a cell showed, as text: streams but stderr, results, errors."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream" and out.get("name") != "stderr":
            parts.append(out.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            parts.append(str(out.get("data", {}).get("text/plain", "")) + "\n")
        elif kind == "error":
            parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}\n")
    return "".join(parts)


def excerpt(text: str, at: int = 0) -> str:
    """At most SHOWN characters of ``text`` around position ``at``, cut between words."""
    if len(text) <= SHOWN:
        return text
    start = 0
    if at > SHOWN // 2:
        start = text.rfind(" ", 0, at - SHOWN // 4) + 1
    end = start + SHOWN
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    return ("… " if start else "") + text[start:end].strip() + (" …" if end < len(text) else "")


def first_difference(printed: str, expected: str) -> tuple[str, str]:
    """Both outputs from the line before their first difference on, lines joined by ↵,
    each shortened around the first differing character; the lines left out before
    are one "…", so that "True ↵ False" is not read as the whole output."""
    lines_a, lines_b = printed.rstrip("\n").split("\n"), expected.rstrip("\n").split("\n")
    first = next((n for n in range(max(len(lines_a), len(lines_b))) if lines_a[n:n + 1] != lines_b[n:n + 1]), 0)
    elided = ["…"] if first > 1 else []
    a, b = (NEWLINE.join(elided + lines[max(first - 1, 0):]) for lines in (lines_a, lines_b))
    at = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return excerpt(a, at), excerpt(b, at)


def differs(exc: BaseException) -> bool:
    """Did nbval fail a cell because its outputs differ (rather than because it raised)?"""
    return type(exc).__name__ == "NbCellError" and str(exc) == "Cell outputs differ"


def mismatch_error(item) -> dict:
    """The failure record of a worked example that printed something else (an nbval
    cell item, after its run); both sides pass through nbval's sanitizers."""
    printed = item.sanitize(output_text(item.test_outputs or []))
    # nbval's comparison merged the cell's streams in place (into the first, the others
    # left in the list): the expected outputs are read again from the grader's copy.
    code = [c for c in json.loads(Path(str(item.parent.fspath)).read_text(encoding="utf-8"))["cells"]
            if c.get("cell_type") == "code"]
    expected = item.sanitize(output_text(code[item.cell_num]["outputs"]))
    shown_printed, shown_expected = first_difference(printed, expected)
    return {"type": MISMATCH if printed.strip() else NOTHING_PRINTED, "message": "", "line": "",
            "cell": item.cell_num + 1, "printed": shown_printed, "expected": shown_expected}


def missing_records(notebook: Path) -> list[dict]:
    """Failure records of the worked examples the submission no longer has."""
    tied = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {}).get("tied", {})
    return [
        {"cell": example["cell"] - 1, "passed": False,
         "error": {"type": MISSING, "message": "", "line": "", "cell": example.get("position", example["cell"]),
                   "first_line": example.get("first_line", ""),
                   "expected": excerpt(example["expected"].rstrip("\n").replace("\n", NEWLINE))}}
        for example in tied.get(MISSING_KEY, [])
    ]


def skip_stderr(notebook_file) -> None:
    """Have nbval leave stderr out of its comparisons (``IPyNbFile.skip_compare``):
    warnings there depend on the machine and the libraries, not on the answer."""
    if "stderr" not in notebook_file.skip_compare:
        notebook_file.skip_compare += ("stderr",)

"""nbval compares each worked example (a cell marked NBVAL_CHECK_OUTPUT) with the
solution's output, whatever outputs the student's file holds (issue 14, part 4).

The pairing of cells is tested on the pure function; four notebooks of the NumPy
chapter (the fastest kernel) go through the real worker.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from grader import expected_outputs
from grader.expected_outputs import MARKER, first_difference, install, is_checked, marker
from grader.i18n import LANGUAGES, render
from grader.outcome import NOTEBOOK_ITEM
from grader.pipeline.runner import grade
from grader.pipeline.supervise.supervisor import Limits
from notebooks import ROOT, replace_regions, solution, write

CHAPTER = "04_gpt_head"
EXPECTED = expected_outputs.for_chapter(CHAPTER)["worked_examples"]


def example_of(function: str) -> dict:
    """The worked example of the exercise ``function``: the first cell marked as one after
    the cell that defines it.  The tests name the examples they use, so that adding an
    exercise and its example, which may call this one too, moves none of them."""
    cells = [cell for cell in nbformat.read(solution(CHAPTER), as_version=4).cells if cell.cell_type == "code"]
    start = next(n for n, cell in enumerate(cells) if f"def {function}(" in cell.source)
    example = next(cell for cell in cells[start:] if is_checked(cell))
    source = "\n".join(line for line in example.source.split("\n") if marker(line) != MARKER)
    (found,) = [entry for entry in EXPECTED if entry["source"] == source]
    return found


FORWARD, GRADIENT = example_of("tied_head_forward"), example_of("tied_embedding_grad")
STALE_ERROR = nbformat.v4.new_output("error", ename="NameError", evalue="name 'E' is not defined", traceback=[])
STALE_PRINT = nbformat.v4.new_output("stream", name="stdout", text="(2, 4) float32\n")


def code_cells(nb) -> list:
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def stale(nb):
    """Every code cell saved with an old error, the worked examples with a wrong print."""
    for cell in code_cells(nb):
        cell.outputs = [STALE_PRINT] if is_checked(cell) else [STALE_ERROR]
        cell.execution_count = 41
    return nb


def prepared(nb) -> dict:
    """The grader's working copy of ``nb``, as JSON."""
    return json.loads(install(nbformat.writes(nb).encode(), CHAPTER))


def checked_outputs(nb: dict) -> list:
    return [cell["outputs"] for cell in code_cells(nb) if is_checked(cell)]


# ---------------------------------------------------------------- the working copy

def test_the_worked_examples_hold_the_solution_outputs_whatever_the_file_holds():
    copy = prepared(stale(nbformat.read(solution(CHAPTER), as_version=4)))
    assert checked_outputs(copy) == [example["outputs"] for example in EXPECTED]
    others = [cell for cell in code_cells(copy) if not is_checked(cell)]
    assert others and all(c["outputs"] == [] and c["execution_count"] is None for c in others)
    assert copy["metadata"]["tied"][expected_outputs.MISSING_KEY] == []


def test_a_deleted_worked_example_is_listed_and_the_others_keep_their_outputs():
    nb = stale(nbformat.read(solution(CHAPTER), as_version=4))
    nb.cells = [cell for cell in nb.cells if not (is_checked(cell) and "tied_head_forward(" in cell.source)]
    copy = prepared(nb)
    assert checked_outputs(copy) == [example["outputs"] for example in EXPECTED if example is not FORWARD]
    missing = copy["metadata"]["tied"][expected_outputs.MISSING_KEY]
    assert missing == [{"cell": FORWARD["cell"], "position": FORWARD["position"],
                        "first_line": "E = np.random.default_rng(0).normal(0.0, 0.02, (6, 4))",
                        "expected": "(4, 6)\nFalse False\npositions 1 and 2 (token 3) give one row: True\n"
                                    "positions 0 and 3 as expected: True\n"}]


def test_inserted_and_edited_cells_keep_the_pairing():
    nb = nbformat.read(solution(CHAPTER), as_version=4)
    checked = [cell for cell in nb.cells if is_checked(cell)]
    checked[2].source += "\nprint('my own line')"  # an edited example is still compared
    mine = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('mine')", outputs=[STALE_PRINT], execution_count=1)
    nb.cells.insert(2, mine)  # a checked cell of the student's own: no reference, not compared
    copy = prepared(nb)
    outputs = checked_outputs(copy)
    assert outputs[0] == [] and code_cells(copy)[1]["execution_count"] is None
    assert outputs[1:] == [example["outputs"] for example in EXPECTED]


def test_nbval_markers_that_would_skip_or_excuse_a_cell_become_plain_comments():
    nb = nbformat.read(solution(CHAPTER), as_version=4)
    first = next(cell for cell in nb.cells if is_checked(cell))
    first.source = "# NBVAL_IGNORE_OUTPUT\n" + first.source
    code_cells(nb)[1].source = "# NBVAL_SKIP\n" + code_cells(nb)[1].source
    code_cells(nb)[2].metadata["tags"] = ["raises-exception", "keep-me"]
    copy = code_cells(prepared(nb))
    assert copy[1]["source"].startswith("#\n") and copy[2]["source"].startswith("#\n# NBVAL_CHECK_OUTPUT")
    assert copy[2]["metadata"]["tags"] == ["keep-me"]
    assert checked_outputs({"cells": copy})[0] == EXPECTED[0]["outputs"]


@pytest.mark.parametrize("odd", [
    {"metadata": [1]}, {"metadata": {"tags": "nbval-skip"}}, {"metadata": {"tags": [1, None, ["x"], {"a": 1}]}},
    {"source": ["import numpy", 1, None]}, {"outputs": None}, {"execution_count": "x"},
], ids=str)
def test_odd_cells_are_copied_without_a_crash(odd):
    nb = json.loads(solution(CHAPTER).read_text(encoding="utf-8"))
    first_code = next(cell for cell in nb["cells"] if cell["cell_type"] == "code")
    first_code.update(odd)
    copy = json.loads(install(json.dumps(nb).encode(), CHAPTER))
    assert checked_outputs(copy) == [example["outputs"] for example in EXPECTED]
    assert code_cells(copy)[0]["outputs"] == []


def test_a_mismatch_shows_the_first_differing_lines_cut_between_words():
    assert first_difference("(2, 4) float32\n", "(8,) float32\n") == ("(2, 4) float32", "(8,) float32")
    assert first_difference("(4, 6)\nTrue\n", "(4, 6)\nFalse\n") == ("(4, 6) ↵ True", "(4, 6) ↵ False")
    words = " ".join(f"word{n}" for n in range(60))
    printed, expected = first_difference(words + " X", words + " Y")
    assert printed.startswith("… ") and printed.endswith("X") and expected.endswith("Y")
    assert len(printed) <= expected_outputs.SHOWN + 2
    assert all(part.startswith("word") for part in printed[2:-2].split())  # no word cut in half


# ---------------------------------------------------------------- release

def test_release_writes_the_solutions_worked_example_outputs_for_the_grader():
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        sol = nbformat.read(path, as_version=4)
        exercise = nbformat.read(ROOT / "exercises" / path.name, as_version=4)
        expected = expected_outputs.for_chapter(path.stem)["worked_examples"]
        assert expected and [expected_outputs.shown_outputs(o) for o in checked_outputs(sol)] == \
               [example["outputs"] for example in expected]
        assert [number for number, cell in enumerate(code_cells(exercise), 1) if is_checked(cell)] == \
               [example["cell"] for example in expected]
        assert all(cell.outputs == [] for cell in code_cells(exercise))


# ---------------------------------------------------------------- through the worker

def notebook_verdict(nb, tmp_path):
    path = write(nb, tmp_path / f"{CHAPTER}.ipynb")
    result = grade(path, Limits(timeout=90))
    return next(v for v in result.verdicts if v.item == NOTEBOOK_ITEM)


def test_a_wrong_shape_in_a_worked_example_fails_the_notebook_naming_both_outputs(tmp_path):
    transposed = "E = np.asarray(E, dtype=np.float64)\nreturn (E[np.asarray(tokens)] @ E.T).T"
    nb = replace_regions(CHAPTER, {"tied_head_forward": transposed})
    verdict = notebook_verdict(nb, tmp_path)
    assert verdict.status == "fail" and verdict.finding.key == "common.output_mismatch"
    # named as JupyterLab shows it: its position among all the cells, and its first line
    position, cell = next((n, c) for n, c in enumerate(nb.cells, 1)
                          if is_checked(c) and "tied_head_forward(" in c.source)
    first = next(line for line in cell.source.splitlines() if "NBVAL" not in line)
    assert verdict.finding.params["cell"] == position
    assert render(verdict.finding, "en") == (
        f"Cell {position} (“{first}”) printed “(6, 4) ↵ False False ↵ positions 1 and 2 (token 3) give "
        "one row: False ↵ positions 0 and 3 as …”, the worked example prints “(4, 6) ↵ False False ↵ "
        "positions 1 and 2 (token 3) give one row: True ↵ positions 0 and 3 as …”.")
    for lang in LANGUAGES:
        message = render(verdict.finding, lang)
        assert "(6, 4)" in message and "(4, 6)" in message and "raise" not in message


def test_a_correct_notebook_saved_with_stale_outputs_and_warnings_passes(tmp_path):
    nb = stale(nbformat.read(solution(CHAPTER), as_version=4))
    first = next(cell for cell in nb.cells if is_checked(cell))
    first.source += "\nimport sys\nprint('a warning on stderr', file=sys.stderr)"
    assert notebook_verdict(nb, tmp_path).status == "pass"


def test_a_correct_notebook_with_every_output_stripped_passes(tmp_path):
    assert notebook_verdict(replace_regions(CHAPTER, {}), tmp_path).status == "pass"


def test_a_deleted_worked_example_gets_a_clear_verdict(tmp_path):
    nb = replace_regions(CHAPTER, {})
    nb.cells = [cell for cell in nb.cells if not (is_checked(cell) and "tied_embedding_grad(" in cell.source)]
    verdict = notebook_verdict(nb, tmp_path)
    assert verdict.status == "fail" and verdict.finding.key == "common.worked_example_missing"
    message = render(verdict.finding, "en")
    assert message.startswith(f"A worked example is missing: cell {GRADIENT['position']} of the exercise "
                              "(“E = np.random.default_rng(1)")
    assert "which prints “(5, 3) (5, 3) ↵" in message

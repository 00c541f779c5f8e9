"""Notebooks that diff like source (issue 26, item 2): what a run leaves behind (cell
timestamps, widget state and ids) is stripped from solutions/ and exercises/ by
``grader release``, so that a change of ten lines is a diff of about ten lines."""
import copy
import difflib
import json
import uuid

import nbformat
import pytest

from grader.authoring.notebook_clean import WIDGET_VIEW, calls_check, clean, cleaned_text
from notebooks import ROOT, solution, write

STORED = sorted((ROOT / "solutions").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))


def rerun(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as a new run stores it: fresh timestamps on every cell, fresh widget ids."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata["execution"] = {"iopub.execute_input": f"2031-01-01T00:00:0{len(cell.source) % 10}Z",
                                      "shell.execute_reply": "2031-01-01T00:00:09Z"}
        for output in cell.get("outputs", []):
            if "data" in output:
                output["data"][WIDGET_VIEW] = {"model_id": uuid.uuid4().hex, "version_major": 2}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {uuid.uuid4().hex: {}}}}
    return nb


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_notebooks_hold_nothing_a_run_leaves_behind(path):
    assert path.read_text(encoding="utf-8") == cleaned_text(path)
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in stored["metadata"]
    for cell in stored["cells"]:
        assert "execution" not in cell["metadata"]
        assert not any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))


def test_ten_more_lines_of_solution_are_a_diff_of_ten_lines(tmp_path):
    chapter = "04_gpt_head"
    before = nbformat.read(solution(chapter), as_version=4)
    after = rerun(before)
    code = next(cell for cell in after.cells if cell.cell_type == "code")
    code.source += "".join(f"\nnote_{n} = {n}" for n in range(10))
    changed = write(clean(after), tmp_path / "after.ipynb").read_text(encoding="utf-8")
    diff = [line for line in difflib.unified_diff(solution(chapter).read_text(encoding="utf-8").splitlines(),
                                                   changed.splitlines(), lineterm="")
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert 10 <= len(diff) <= 12, "\n".join(diff)


def test_what_a_reader_sees_is_kept_the_check_verdicts_are_not():
    nb = rerun(nbformat.read(solution("04_gpt_head"), as_version=4))
    (panel,) = [cell for cell in nb.cells if calls_check(cell)]
    panel.outputs = [nbformat.v4.new_output("display_data", {"text/plain": "Total: 7/7", WIDGET_VIEW: {}})]
    panel.execution_count = 10
    kept = clean(copy.deepcopy(nb))
    assert [(c.outputs, c.execution_count) for c in kept.cells if calls_check(c)] == [([], None)]
    shown = lambda cells: [([o.get("data", {}).get("text/plain", o.get("text")) for o in c.outputs], c.execution_count)
                           for c in cells if c.cell_type == "code" and not calls_check(c)]
    assert shown(kept.cells) == shown(nb.cells) and any(outputs for outputs, _ in shown(nb.cells))

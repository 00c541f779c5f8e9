"""exercises/ is generated from solutions/ and stays in step with it."""
import nbformat
import pytest

from conftest import chapters, grader
from grader.expected_outputs import is_checked
from grader.release import MarkerError, release, strip_solutions
from notebooks import ROOT, solution, write


def test_release_check_passes():
    done = grader("release", "--check")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("chapter", chapters())
def test_exercise_is_stubs_without_outputs_but_the_worked_examples(chapter):
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code if not is_checked(c))
    assert all(c.outputs and c.execution_count for c in code if is_checked(c))
    assert not any("SOLUTION" in c.source for c in code)
    assert any("raise NotImplementedError(" in c.source for c in code)
    assert nb.metadata["tied"]["chapter"] == chapter


def test_markers_become_one_raise_with_the_hint():
    src = "def f(x):\n    ### BEGIN SOLUTION: add one\n    return x + 1\n    ### END SOLUTION\n"
    assert strip_solutions(src, "t") == "def f(x):\n    raise NotImplementedError('add one')"


@pytest.mark.parametrize("src", ["### BEGIN SOLUTION\nx = 1\n", "x = 1\n### END SOLUTION\n",
                                 "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n"])
def test_unbalanced_markers_are_refused(src):
    with pytest.raises(MarkerError):
        strip_solutions(src, "t")


def test_release_refuses_a_solution_stored_without_running_its_worked_examples(tmp_path):
    nb = nbformat.read(solution("04_gpt_head"), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    write(nb, tmp_path / "solutions" / "04_gpt_head.ipynb")
    with pytest.raises(MarkerError, match="NBVAL_CHECK_OUTPUT"):
        release(tmp_path)

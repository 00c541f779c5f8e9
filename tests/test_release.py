"""exercises/ is generated from solutions/ and stays in step with it."""
import nbformat
import pytest

from conftest import chapters, grader
from grader.release import MarkerError, strip_solutions
from notebooks import ROOT


def test_release_check_passes():
    done = grader("release", "--check")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("chapter", chapters())
def test_exercise_is_stubs_without_outputs(chapter):
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
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

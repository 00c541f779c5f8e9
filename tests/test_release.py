"""exercises/ is generated from solutions/ and stays in step with it."""
import re

import nbformat
import pytest

from conftest import chapters, grader
from grader import expected_outputs
from grader.authoring.release import MarkerError, release, strip_solutions
from grader.expected_outputs import is_checked
from notebooks import ROOT, solution, write


def test_release_check_passes():
    done = grader("release", "--check")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("chapter", chapters())
def test_exercise_is_stubs_that_say_what_they_grade(chapter):
    """No outputs, no execution counts, cell ids (nbformat 4.5: JupyterLab opens it
    unmodified); each worked example is followed by its expected output as text, the
    points are listed, and nothing of the solution's run is left."""
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5) and all(c.get("id") for c in nb.cells)
    assert nbformat.validate(nb) is None and "widgets" not in nb.metadata
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None and "execution" not in c.metadata for c in code)
    assert not any("SOLUTION" in c.source or "NBVAL" in c.source for c in code)
    assert any("raise NotImplementedError(" in c.source for c in code)
    assert nb.metadata["tied"]["chapter"] == chapter
    examples = expected_outputs.for_chapter(chapter)["worked_examples"]
    assert len(examples) == sum(map(is_checked, code)) > 0
    for example in examples:
        stated = nb.cells[example["position"]]  # the cell after the example
        assert "compare" in stated.source and expected_outputs.output_text(example["outputs"]).strip() in stated.source


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


@pytest.mark.parametrize("parted", ["catalog", "stub_hints"])
def test_release_check_fails_when_the_stub_and_its_hint_key_part(tmp_path, parted):
    """The stub, its English catalog entry and the key the judge names it by are written
    together from the solution's marker: an edit to one alone is a difference."""
    import shutil

    for folder in ("solutions", "exercises", "grader/expected", "grader/messages/en"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    assert release(tmp_path, check=True) == []
    if parted == "catalog":
        path = tmp_path / "grader/messages/en/gpt_head.json"
        path.write_text(path.read_text(encoding="utf-8").replace("normalise each row", "normalize each row"),
                        encoding="utf-8")
    else:
        path = tmp_path / "grader/expected/04_gpt_head.json"
        path.write_text(path.read_text(encoding="utf-8").replace('"gpt_head.hint_tied_head_forward"',
                                                                 '"gpt_head.hint_sample_next"'), encoding="utf-8")
    assert release(tmp_path, check=True) == [str(path.relative_to(tmp_path))]


def test_release_check_fails_on_a_solution_that_holds_its_check_verdicts(tmp_path):
    """The check() cell's outputs are the student's own verdicts to come, and a stale total
    after an item is added: release clears them, and ``--check`` names a solution saved
    with them."""
    import shutil

    from grader.authoring.notebook_clean import calls_check

    for folder in ("solutions", "exercises", "grader/expected", "grader/messages/en"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    path = tmp_path / "solutions" / "04_gpt_head.ipynb"
    nb = nbformat.read(path, as_version=4)
    (cell,) = [cell for cell in nb.cells if calls_check(cell)]
    cell.execution_count = 10
    cell.outputs = [nbformat.v4.new_output("display_data", {"text/plain": "Total: 7/7"})]
    write(nb, path)
    assert release(tmp_path, check=True) == ["solutions/04_gpt_head.ipynb"]
    release(tmp_path)
    (cell,) = [cell for cell in nbformat.read(path, as_version=4).cells if calls_check(cell)]
    assert cell.outputs == [] and cell.execution_count is None


def test_a_long_hint_is_split_between_words_and_raises_the_same_message():
    from grader.authoring.release import STUB_COLUMNS, raise_not_implemented

    hint = "declare self.param(\"embedding\", ...) once, look the ids up with it and " * 3
    lines = raise_not_implemented("        ", hint.strip())
    assert len(lines) > 3 and all(len(line) <= STUB_COLUMNS for line in lines)
    with pytest.raises(NotImplementedError) as raised:
        exec("\n".join(line[8:] for line in lines))
    assert str(raised.value) == hint.strip()
    assert raise_not_implemented("    ", "short") == ["    raise NotImplementedError('short')"]


# A stub's raise as release writes it: one line, or its hint split into adjacent literals.
STUB_RAISE = re.compile(r"""NotImplementedError\((?:\s*(['"])(?:(?!\1)[^\\]|\\.)*\1\s*)+\)""")


def test_a_hint_the_student_rewrites_changes_no_verdict_and_no_message():
    """The grader names a stub's hint by the function that raised (``stub_hints``), not
    by the text it raises: the exercise with every hint rewritten gets the verdicts and
    messages of the exercise as released, the hints in Spanish from the catalog."""
    from grader.i18n import catalog
    from inprocess import check_in_process

    chapter = "04_gpt_head"
    released = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    rewritten = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    for cell in rewritten.cells:
        cell.source = STUB_RAISE.sub('NotImplementedError("my own note")', cell.source)
    assert rewritten != released
    entries = [check_in_process(nb, chapter, ("en", "es")) for nb in (released, rewritten)]
    for lang in ("en", "es"):
        before, after = ([(i["item"], i["verdict"], i["message"]) for i in e[lang]["items"]] for e in entries)
        assert before == after and not any("my own note" in message for *_, message in after)
    hint = catalog("es")["gpt_head.hint_tied_head_forward"]
    assert any(hint in i["message"] for i in entries[1]["es"]["items"])


def test_the_worker_names_the_function_a_cell_error_left_last():
    """The kernel's traceback as nbval hands it over: the innermost frame of a cell says
    which function raised, as ``error_fact`` says it in-process."""
    from grader.cells import cell_error

    traceback = "\n".join([
        "NotImplementedError                       Traceback (most recent call last)",
        "Cell In[7], line 2", "----> 2 model = TinyLM(vocab_size=11, d_model=8)", "",
        "Cell In[6], line 4, in TinyLM.__init__(self, vocab_size, d_model, n_layers)",
        "----> 4     raise NotImplementedError('create embed')", "",
        "NotImplementedError: create embed"])
    assert cell_error(traceback)["function"] == "TinyLM.__init__"
    assert cell_error(traceback.replace(", in TinyLM.__init__(self, vocab_size, d_model, n_layers)", ""))[
        "function"] == ""

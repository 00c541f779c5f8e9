"""What a gradebook keys on: a rerun regrades what other settings graded, a merge takes
only a whole set of shards graded alike, and a mistyped class folder writes nothing."""

import pytest

import grader.outputs.gradebook as gradebook
from conftest import grader
from grader.drawing import use_secret
from grader.outcome import Finding
from grader.outputs.shards import ShardSetError, merged_entries
from grader.result import Result


@pytest.fixture
def no_secret():
    yield
    use_secret(b"")


def graded(out, graded_with, notebook, shard=None):
    """A gradebook in ``out`` holding one graded (bad) file."""
    book = gradebook.Gradebook(out, "en", graded_with=graded_with, shard=shard)
    book.add(notebook.parent.name, Result(notebook, bad=Finding("bad.empty", {"path": str(notebook)})))
    return book


def test_a_rerun_regrades_what_other_settings_graded(tmp_path, no_secret):
    notebook = tmp_path / "ana" / "04_gpt_head.ipynb"
    notebook.parent.mkdir()
    notebook.write_text("")
    plain = gradebook.settings(sandbox=False, lang="en")
    graded(tmp_path / "out", plain, notebook)
    assert gradebook.Gradebook(tmp_path / "out", "en", graded_with=plain).is_current(notebook)
    use_secret(b"the teacher's secret")
    for other in (gradebook.settings(sandbox=True, lang="en"), gradebook.settings(sandbox=False, lang="en"),
                  {**plain, "grader": "another version"}):
        assert other != plain
        assert not gradebook.Gradebook(tmp_path / "out", "en", graded_with=other).is_current(notebook)
    graded(tmp_path / "out", gradebook.settings(sandbox=False, lang="en"), notebook)
    assert "teacher's secret" not in (tmp_path / "out" / "gradebook.json").read_text()  # only its hash


def test_merge_takes_only_a_whole_set_of_shards_graded_alike(tmp_path, no_secret):
    plain = gradebook.settings(sandbox=False, lang="en")
    shards = []
    for k, student in ((1, "ana"), (2, "bo"), (3, "chen")):
        notebook = tmp_path / student / "04_gpt_head.ipynb"
        notebook.parent.mkdir()
        notebook.write_text("")
        shards.append(graded(tmp_path / f"shard{k}", plain, notebook, shard=(k, 3)).out)
    entries, settings = merged_entries(shards)
    assert len(entries) == 3 and settings == plain
    with pytest.raises(ShardSetError) as missing:
        merged_entries(shards[:2])
    assert missing.value.key == "common.shards_incomplete" and missing.value.params["shares"] == "3/3"
    foreign = graded(tmp_path / "foreign", {**plain, "secret": "another"}, tmp_path / "chen" / "04_gpt_head.ipynb",
                     shard=(3, 3)).out
    with pytest.raises(ShardSetError) as mixed:
        merged_entries([*shards[:2], foreign])
    assert mixed.value.key == "common.shards_mixed"
    unsharded = graded(tmp_path / "whole", plain, tmp_path / "ana" / "04_gpt_head.ipynb").out
    with pytest.raises(ShardSetError) as whole:
        merged_entries([unsharded])
    assert whole.value.key == "common.shards_not_a_shard"
    done = grader("merge", str(tmp_path / "merged"), *map(str, shards[:2]), "--lang", "en")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "missing 3/3" in done.stderr
    assert not (tmp_path / "merged").exists()


def test_a_class_folder_that_does_not_exist_is_a_usage_error(tmp_path):
    done = grader("grade", str(tmp_path / "submision"), "--out", str(tmp_path / "gbx"), "--lang", "en")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no such file or folder" in done.stderr
    assert not (tmp_path / "gbx").exists()

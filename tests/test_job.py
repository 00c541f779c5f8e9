"""The job the grader hands the worker: written once, read back only as it was written."""
import json

import pytest

from grader.job import BadJob, Job, read


def a_job(tmp_path) -> Job:
    return Job(path=str(tmp_path / "job.json"), notebook=str(tmp_path / "work" / "01_linen.ipynb"),
               spec=str(tmp_path / "spec.json"), ini=str(tmp_path / "pytest.ini"),
               probe_module="grader.chapters.linen_probe", items=("TiedIO", "tied_io_embed"))


def test_the_worker_reads_the_job_the_grader_wrote(tmp_path):
    job = a_job(tmp_path)
    job.write()
    assert read(job.path) == job
    assert job.folder == tmp_path


@pytest.mark.parametrize("change", [
    lambda d: d.pop("spec"),
    lambda d: d.update(extra="x"),
    lambda d: d.update(items="TiedIO"),
    lambda d: d.update(items=["TiedIO", 3]),
    lambda d: d.update(notebook=None),
], ids=["missing", "extra", "items_not_a_list", "item_not_a_string", "not_a_string"])
def test_a_job_of_another_shape_is_refused(tmp_path, change):
    job = a_job(tmp_path)
    job.write()
    data = json.loads((tmp_path / "job.json").read_text())
    change(data)
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(BadJob):
        read(job.path)


@pytest.mark.parametrize("text", ["", "[]", "{", "null"])
def test_a_job_file_that_is_not_a_job_is_refused(tmp_path, text):
    (tmp_path / "job.json").write_text(text)
    with pytest.raises(BadJob):
        read(str(tmp_path / "job.json"))

"""What the grader keeps on disk: references read back are the ones it would compute, and
kernels keep their compiled programs beside them.

Chapter 04 (NumPy) keeps the reference tests fast; the code path is the same for every chapter.
"""
import hashlib
import json
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from grader import disk_cache
from grader.chapters import chapter
from grader.kernel.runtime import encode
from notebooks import ROOT

CHAPTER = "04_gpt_head"
ITEM = "tied_embedding_grad"


@pytest.fixture(autouse=True)
def no_references_in_memory():
    """Each test starts, and leaves, with nothing in ``disk_cache.references``'s own cache."""
    disk_cache.references.cache_clear()
    yield
    disk_cache.references.cache_clear()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TIED_CACHE_DIR", str(tmp_path))
    return tmp_path


def stored_file(folder):
    (path,) = folder.rglob(f"{CHAPTER}.{ITEM}.json")
    return path


def computed():
    """The references straight from the reference implementation, no cache involved."""
    item = chapter(CHAPTER).item(ITEM)
    return [item.reference(case) for case in disk_cache.cases(CHAPTER, ITEM)]


def assert_equal_to_computed(values):
    """Each case's (grad_lookup, grad_head) equals the reference's, bit for bit."""
    direct = computed()
    assert len(values) == len(direct)
    for value, ref in zip(values, direct):
        assert len(value) == len(ref) == 2
        for v, r in zip(value, ref):
            np.testing.assert_array_equal(v, r)
            assert np.asarray(v).dtype == np.asarray(r).dtype


def test_read_back_equals_computed(cache_dir):
    assert_equal_to_computed(disk_cache.references(CHAPTER, ITEM))  # computed, then stored
    assert stored_file(cache_dir).exists()
    disk_cache.references.cache_clear()
    assert_equal_to_computed(disk_cache.references(CHAPTER, ITEM))  # read from the file


@pytest.mark.parametrize("content", [
    "not json at all",
    "[]",  # a file with too few cases would silently skip the hidden ones
    json.dumps([{"__nd__": "bm90IGFuIGFycmF5"}]),  # base64 of bytes that are no .npy
    json.dumps([{"__nd__": 12}]),
])
def test_a_damaged_file_is_computed_again_and_rewritten(cache_dir, content):
    disk_cache.references(CHAPTER, ITEM)
    path = stored_file(cache_dir)
    path.write_text(content, encoding="utf-8")
    disk_cache.references.cache_clear()
    assert_equal_to_computed(disk_cache.references(CHAPTER, ITEM))
    assert json.loads(path.read_text(encoding="utf-8")) == [encode(v) for v in computed()]


def test_an_empty_setting_keeps_nothing_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("TIED_CACHE_DIR", "")
    monkeypatch.chdir(tmp_path)
    assert disk_cache.references(CHAPTER, ITEM)
    assert disk_cache.folder() is None
    assert not any(tmp_path.iterdir())


def test_a_folder_that_cannot_be_written_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    monkeypatch.setenv("TIED_CACHE_DIR", str(blocker))
    assert len(disk_cache.references(CHAPTER, ITEM)) == len(disk_cache.cases(CHAPTER, ITEM))


def test_another_library_version_uses_another_folder(monkeypatch):
    before = disk_cache.fingerprint()
    real = disk_cache.metadata.version
    monkeypatch.setattr(disk_cache.metadata, "version",
                        lambda name: "0.0.0" if name == "jax" else real(name))
    disk_cache.fingerprint.cache_clear()
    try:
        assert disk_cache.fingerprint() != before
    finally:
        monkeypatch.undo()
        disk_cache.fingerprint.cache_clear()
    assert disk_cache.fingerprint() == before


def test_kernels_keep_compiled_programs_beside_the_references(tmp_path, monkeypatch):
    from conftest import grader

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)  # the suite's own; a user's wins
    monkeypatch.setenv("TIED_CACHE_DIR", str(tmp_path))
    notebook = str(ROOT / "solutions" / "01_linen.ipynb")
    for run in ("computes and stores", "reads back"):
        done = grader("check", notebook, "--json")
        assert done.returncode == 0, (run, done.stdout[-2000:], done.stderr[-2000:])
        assert json.loads(done.stdout)["passed"], run
    compiled = list((tmp_path / "jax").rglob("*-cache"))
    assert compiled, "no compiled program was kept"
    assert all(p.parent.name == reference_cache_name(tmp_path) for p in compiled)


def reference_cache_name(root):
    """The one fingerprint folder the run wrote its references into."""
    (folder,) = (root / "references").iterdir()
    return folder.name


def test_with_the_cache_off_compiled_programs_go_to_a_temporary_folder(monkeypatch):
    monkeypatch.setenv("TIED_CACHE_DIR", "")
    with disk_cache.compiled_programs() as folder:
        assert Path(folder).is_dir()
    assert not Path(folder).exists()


def code_hash(package: Path) -> str:
    digest = hashlib.sha256()
    disk_cache.hash_code(digest, package)
    return digest.hexdigest()


def test_the_fingerprint_covers_the_grading_code_only(tmp_path):
    package = ROOT / "grader"
    hashed = {p.relative_to(package).as_posix() for p in disk_cache.grading_code(package)}
    assert {"pipeline/judge/items.py", "drawing.py", "chapters/linen/grade.py", "chapters/linen/probe.py"} <= hashed
    assert not hashed & {"cli.py", "outputs/report.py", "outputs/platforms.py", "outputs/class_report.py"}
    # The book's widgets and counts are no part of the grader: editing them cannot move it.
    assert not list(package.glob("*explorer*")) + list(package.glob("*savings*"))
    assert (ROOT / "tied_book" / "explorer.py").is_file()
    # In a copy of the package: an edited CLI keeps the hash, an edited judge changes it.
    copy = tmp_path / "grader"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_hash(copy)
    with open(copy / "cli.py", "a") as f:
        f.write("\n# edited\n")
    assert code_hash(copy) == before
    with open(copy / "pipeline/judge/items.py", "a") as f:
        f.write("\n# edited\n")
    assert code_hash(copy) != before


def test_folders_of_other_fingerprints_are_pruned(cache_dir):
    old = cache_dir / "references" / "0123456789abcdef0123"
    old.mkdir(parents=True)
    (old / "01_linen.tied_io_embed.json").write_text("[]")
    month_ago = time.time() - 30 * 24 * 3600
    os.utime(old, (month_ago, month_ago))  # unused for a month: no grader runs that version
    recent = cache_dir / "references" / "fedcba9876543210fedc"  # another clone's, in use
    recent.mkdir()
    kept = cache_dir / "references" / f"{disk_cache.fingerprint()}-secretid"  # this grader, with a secret
    kept.mkdir()
    disk_cache.references(CHAPTER, ITEM)
    assert not old.exists() and kept.is_dir() and recent.is_dir()
    assert stored_file(cache_dir).parent.name == disk_cache.fingerprint()


def _encoded_cases(ch_id: str, item_name: str) -> str:
    drawn = chapter(ch_id).item(item_name).drawn_cases()
    return json.dumps([[c.label, encode(c.args)] for c in drawn])


def test_cases_drawn_in_threads_at_once_are_the_cases_drawn_alone():
    """A batch draws an item's cases in several threads of one process at once (each
    notebook's probe bundle, each notebook's references warmed while its kernel runs).
    A draw from a generator they share (``torch.manual_seed`` then ``torch.randn``) hands
    each thread a different mix of numbers: the kernel then runs other arguments than
    the judge compares, and a right answer is told it is wrong."""
    from grader.chapters import chapters

    names = [(ch.id, item.name) for ch in chapters().values() for item in ch.items]
    alone = {key: _encoded_cases(*key) for key in names}
    start = threading.Barrier(4)

    def draw_all(_):
        start.wait()
        return {key: _encoded_cases(*key) for key in names}

    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(draw_all, range(4)))
    for drawn in together:
        assert [key for key in names if drawn[key] != alone[key]] == []


def test_an_item_is_built_once_whatever_the_threads():
    built = []
    start = threading.Barrier(4)

    @disk_cache.once_per_item
    def build(chapter_id, item_name):
        built.append((chapter_id, item_name))
        return object()

    def ask(_):
        start.wait()
        return build("05_mlm", "mlm_forward_tied")

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ask, range(4)))
    assert built == [("05_mlm", "mlm_forward_tied")] and all(g is got[0] for g in got)

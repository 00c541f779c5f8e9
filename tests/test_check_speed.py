"""The warm in-notebook check() compiles nothing it compiled before, and still sees a change.

Chapter 02's ``tied_grad_paths`` jits a fresh ``nnx.grad`` on every call, so JAX's
in-memory caches (keyed by the Python function) miss on each call, and a warm check()
spent seconds compiling the same programs again.  check() now lends JAX the grader's
compilation cache, keyed by the program itself (``disk_cache.compiled_programs_in_process``).
Counted, never timed: a wall-clock assert fails on a busy machine.
"""
import jax
import nbformat
import pytest
from jax.experimental.compilation_cache.compilation_cache import reset_cache

from conftest import chapters
from grader import check
from inprocess import run_cells
from notebooks import solution

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # a cache hit included
CACHE_HIT = "/jax/compilation_cache/cache_hits"


@pytest.fixture
def no_cache_of_its_own(monkeypatch, tmp_path):
    """The process as a student's kernel starts: no JAX compilation cache set up (the
    suite sets one for the kernels it starts), and the grader's disk cache in ``tmp_path``."""
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("TIED_CACHE_DIR", str(tmp_path))
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    reset_cache()
    yield
    jax.config.update("jax_compilation_cache_dir", before)
    reset_cache()


def compilations(run) -> int:
    """How many programs ``run()`` had XLA compile: compile requests not answered by the cache."""
    counts = {"requests": 0, "hits": 0}

    def on_duration(event, duration, **kwargs):
        counts["requests"] += event == BACKEND_COMPILE_EVENT

    def on_event(event, **kwargs):
        counts["hits"] += event == CACHE_HIT

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        run()
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
    return counts["requests"] - counts["hits"]


def points(result, item: str) -> int:
    return next(v.points for v in result.verdicts if v.item == item)


@pytest.mark.skipif("02_nnx" not in chapters(), reason="chapter 02 not selected")
def test_a_warm_check_compiles_nothing_and_sees_a_changed_function(no_cache_of_its_own):
    namespace, _ = run_cells(nbformat.read(solution("02_nnx"), as_version=4))
    first = check("02_nnx", "en", namespace)
    assert first.points == first.max_points
    assert compilations(lambda: check("02_nnx", "en", namespace)) == 0
    assert jax.config.jax_compilation_cache_dir is None  # the notebook's settings are back

    right = namespace["tied_grad_paths"]
    namespace["tied_grad_paths"] = lambda embedding, token_ids, targets: right(embedding, token_ids, targets)[::-1]
    changed = check("02_nnx", "en", namespace)  # the same programs: the new verdict all the same
    assert points(changed, "tied_grad_paths") == 0
    namespace["tied_grad_paths"] = right
    assert points(check("02_nnx", "en", namespace), "tied_grad_paths") == points(first, "tied_grad_paths") > 0


@pytest.mark.skipif("02_nnx" not in chapters(), reason="chapter 02 not selected")
def test_a_cache_the_notebook_set_up_is_left_alone(no_cache_of_its_own, tmp_path):
    own = str(tmp_path / "own")
    jax.config.update("jax_compilation_cache_dir", own)
    namespace, _ = run_cells(nbformat.read(solution("02_nnx"), as_version=4))
    check("02_nnx", "en", namespace)
    assert jax.config.jax_compilation_cache_dir == own
    assert not (tmp_path / "jax").exists()  # the grader's folder for compiled programs was never made


@pytest.mark.skipif("02_nnx" not in chapters(), reason="chapter 02 not selected")
def test_a_cache_folder_that_cannot_be_made_changes_nothing(no_cache_of_its_own, monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TIED_CACHE_DIR", str(blocked))
    namespace, _ = run_cells(nbformat.read(solution("02_nnx"), as_version=4))
    result = check("02_nnx", "en", namespace)
    assert result.points == result.max_points
    assert jax.config.jax_compilation_cache_dir is None

"""The kernel side of the grader is ``grader/kernel/`` and every chapter's ``probe.py``:
the bundle's library is that folder, and a probe, which sits beside its chapter's
``grade.py``, imports nothing else of the grader."""
import ast
from pathlib import Path

import pytest

from grader.chapters import chapter_modules, chapters
from grader.pipeline.prepare.probe_bundle import LIBRARY, LOADER

GRADER = Path(__file__).resolve().parent.parent / "grader"


def kernel_modules() -> set[str]:
    return {f"grader.kernel.{path.stem}" for path in (GRADER / "kernel").glob("*.py") if path.name != "__init__.py"}


def grader_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "grader"):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "grader"}
    return found


def test_the_bundles_library_is_the_kernel_folder():
    assert {*LIBRARY, LOADER} == kernel_modules()


def test_the_kernel_folder_imports_only_itself():
    for path in (GRADER / "kernel").glob("*.py"):
        assert grader_imports(path) <= kernel_modules(), path


@pytest.mark.parametrize("chapter_id", list(chapters()))
def test_a_probe_sits_beside_its_chapter_and_imports_only_the_kernel_folder(chapter_id):
    probe, grade = chapters()[chapter_id].probe_module, chapter_modules()[chapter_id]
    assert probe.rpartition(".") == (grade.rpartition(".")[0], ".", "probe")
    assert grader_imports(GRADER.parent / (probe.replace(".", "/") + ".py")) <= kernel_modules()


@pytest.mark.parametrize("chapter_id", ["03_pytorch", "05_mlm"])
def test_check_leaves_the_kernels_random_generators_as_they_were(chapter_id):
    """``check()`` runs in the student's kernel: drawing its cases and building the
    student's model for the probes must not reseed the generators the notebook draws
    from next (torch's and NumPy's global ones)."""
    import nbformat
    import numpy as np
    import torch

    from grader import disk_cache
    from grader.selfcheck.check import check
    from inprocess import run_cells
    from notebooks import solution

    namespace, _ = run_cells(nbformat.read(solution(chapter_id), as_version=4))
    disk_cache.cases.cache_clear()  # the cases are drawn again, in this "kernel"
    torch.manual_seed(1234)
    np.random.seed(1234)
    check(chapter_id, "en", namespace)
    assert torch.equal(torch.randn(3), (torch.manual_seed(1234), torch.randn(3))[1])
    after_numpy = np.random.random(3)
    np.random.seed(1234)
    assert np.array_equal(after_numpy, np.random.random(3))

"""What a platform's image installs to grade a chapter: every framework its grading imports."""
from pathlib import Path

from grader.outputs.grading_requirements import chapter_frameworks

ROOT = Path(__file__).resolve().parent.parent


def test_a_framework_imported_by_a_chapters_reference_module_is_installed():
    # Chapter 04's notebook and probes are plain NumPy; its references (reference.py,
    # beside grade.py) compute with PyTorch, so grading it needs torch.
    assert chapter_frameworks("04_gpt_head", ROOT) == ["torch"]
    assert chapter_frameworks("01_linen", ROOT) == ["flax", "jax"]

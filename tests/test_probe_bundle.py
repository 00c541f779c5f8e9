"""Probe modules are ordinary modules bundled with the kernel-side library they import."""
import sys
import types

import pytest

from grader.chapters import chapters
from grader.pipeline.prepare.probe_bundle import LIBRARY, BundleError, bundle, library_imports, probe_source


def program(chapter_probe_module: str) -> dict:
    """What the kernel's program defines, run here as the in-notebook check runs it."""
    namespace = {"__name__": "_tied_probe"}
    exec(compile(probe_source(chapter_probe_module), "<tied-probe>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("ch", chapters().values(), ids=list(chapters()))
def test_every_item_finds_its_probe_in_the_bundle(ch):
    names = [module for module, _ in bundle(ch.probe_module)]
    assert names[0] == "grader.kernel.runtime" and names[-1] == ch.probe_module
    assert set(names[:-1]) <= set(LIBRARY)
    probes = program(ch.probe_module)["PROBES"]
    assert {item.probe for item in ch.items} <= set(probes)


def test_a_library_import_takes_the_bundles_module_not_sys_modules(monkeypatch):
    fake = types.ModuleType("grader.kernel.jax_tools")
    fake.mean_cross_entropy = fake.path_name = lambda *args: "forged"
    monkeypatch.setitem(sys.modules, "grader.kernel.jax_tools", fake)
    modules = program("grader.chapters.linen.probe")["MODULES"]
    probe, library = modules["grader.chapters.linen.probe"], modules["grader.kernel.jax_tools"]
    assert probe.mean_cross_entropy is library.mean_cross_entropy
    assert probe.path_name(("a", "b")) == "a/b"


@pytest.mark.parametrize("line,says", [
    ("from grader.pipeline.judge.items import close", "a probe may import only"),
    ("from ..probe_runtime import lookup", "relative import"),
    ("import grader.kernel.runtime", "not 'import grader.kernel.runtime'"),
])
def test_a_probe_importing_the_grader_outside_the_library_is_refused(line, says):
    with pytest.raises(BundleError, match=says):
        library_imports("grader.chapters.x.probe", f"import numpy as np\n{line}\n")


def test_library_imports_are_listed_in_order():
    source = "from grader.kernel.jax_tools import path_name\nfrom grader.kernel.runtime import lookup\nimport json\n"
    assert library_imports("m", source) == ["grader.kernel.jax_tools", "grader.kernel.runtime"]


FORGE_LIBRARY = '''
import grader.kernel.runtime as runtime

class Quiet:  # builds and runs without a warning: the warnings item would pass on it
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, token_ids):
        return token_ids

runtime.lookup = lambda namespace, name: Quiet
'''


def test_a_patched_library_module_in_the_kernel_forges_nothing(tmp_path):
    """The probes take the bundle's library, not the grader's modules that the notebook
    can import and patch: the stub still raises where a patched ``lookup`` would hand
    the probe a class of the notebook's choosing."""
    import json

    import nbformat

    from conftest import grader
    from notebooks import ROOT, write

    nb = nbformat.read(ROOT / "exercises" / "02_nnx.ipynb", as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(FORGE_LIBRARY))
    done = grader("check", str(write(nb, tmp_path / "02_nnx.ipynb")), "--json", "--lang", "en")
    items = {i["item"]: i for i in json.loads(done.stdout)["items"]}
    assert items["TiedEmbed.warnings"]["key"] == "common.not_implemented"
    assert sum(i["points"] for i in items.values()) == 0

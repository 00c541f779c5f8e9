"""Chapter 07, one model in three frameworks, beyond what every item must have
(tests/test_item_properties.py): the checkpoint each item's public case converts is the
one the notebook's worked example builds, array for array, with its ids."""
import numpy as np
import pytest

from conftest import chapters
from inprocess import notebook_namespace, public_args

pytestmark = pytest.mark.skipif("07_three_frameworks" not in chapters(),
                                reason="TIED_CHAPTERS leaves chapter 07 out")


def test_every_public_case_is_the_notebooks_checkpoint():
    ns = notebook_namespace("07_three_frameworks", until="path = os.path.join(")
    params = ns["variables"]["params"]
    held = {"embedding": params["embed"]["embedding"], "kernel": params["mixer"]["kernel"],
            "bias": params["mixer"]["bias"]}
    for item in ("linen_to_torch.tied", "linen_to_torch", "torch_to_nnx.params", "torch_to_nnx"):
        (case,) = public_args("07_three_frameworks", item)
        for name, value in held.items():
            np.testing.assert_array_equal(case[name], np.asarray(value), err_msg=f"{item}: {name}")
        assert case["token_ids"] == np.asarray(ns["ids"]).tolist(), item

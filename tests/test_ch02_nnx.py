"""Chapter 02, Flax NNX, beyond what every item must have (tests/test_item_properties.py).

The public cases the grader builds from a module are the notebook's worked example; and
``tied_grad_paths`` is graded against a closed-form gradient (no compilation in the
grader's process), which is held here to ``nnx.grad`` itself, on every public and hidden
case.
"""
import numpy as np
import pytest

from conftest import chapters
from grader.disk_cache import cases
from inprocess import notebook_namespace, public_args

pytestmark = pytest.mark.skipif("02_nnx" not in chapters(), reason="TIED_CHAPTERS leaves chapter 02 out")


def test_nnx_gradient_reference_is_what_nnx_grad_gives():
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from grader.chapters.tied_matrix import gradient_paths

    class TwoCopies(nnx.Module):
        """An untied copy: the lookup matrix and the projection matrix start equal."""

        def __init__(self, matrix):
            self.lookup = nnx.Param(jnp.asarray(matrix))
            self.project = nnx.Param(jnp.asarray(matrix))

        def __call__(self, ids):
            return self.lookup[...][ids] @ self.project[...].T

    def mean_cross_entropy(model, ids, targets):
        logp = jax.nn.log_softmax(model(ids))
        return -jnp.take_along_axis(logp, targets[:, None], axis=1).mean()

    checked = 0
    for case in cases("02_nnx", "tied_grad_paths"):
        embedding, ids, targets = case.args["args"]
        loss = lambda m: mean_cross_entropy(m, ids, targets)  # noqa: E731
        grads = nnx.grad(loss)(TwoCopies(embedding))
        from_autodiff = np.stack([grads["lookup"][...], grads["project"][...]])
        np.testing.assert_allclose(gradient_paths(embedding, ids, targets), from_autodiff,
                                   rtol=1e-4, atol=1e-6)
        checked += 1
    assert checked >= 3, "public and hidden cases"


def test_nnx_public_cases_are_the_notebook_examples():
    ns = notebook_namespace("02_nnx")
    gradient = public_args("02_nnx", "TiedEmbed.gradient")[0]
    embedding, ids, targets = public_args("02_nnx", "tied_grad_paths")[0]["args"]
    for matrix in (gradient["embedding"], embedding):
        np.testing.assert_array_equal(matrix, np.asarray(ns["E"]))
    for got in (gradient["token_ids"], ids.tolist()):
        assert got == ns["ids"].tolist()
    for got in (gradient["targets"], targets.tolist()):
        assert got == ns["targets"].tolist()
    from flax import nnx

    drawn = ns["TiedEmbed"](4, 3, rngs=nnx.Rngs(0)).embedding[...]
    np.testing.assert_array_equal(public_args("02_nnx", "TiedEmbed.__call__")[0]["embedding"], np.asarray(drawn))

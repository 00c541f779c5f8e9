"""The tied NNX model of chapter 02, its untied twin and a helper to list their
parameters, shared by the chapter's two pages (02 shows the class with
``literalinclude``: written once, run as shown)."""
import jax
import jax.numpy as jnp
from flax import nnx


class TiedLM(nnx.Module):
    """Embedding lookup and tied output projection, with nothing in between."""

    def __init__(self, vocab_size, d_model, rngs):
        draw = jax.random.normal(rngs.params(), (vocab_size, d_model))
        # the one (V, d) parameter
        self.embedding = nnx.Param(draw / jnp.sqrt(d_model))

    def __call__(self, token_ids):
        E = self.embedding[...]      # the jax.Array inside the Param
        x = E[token_ids]             # lookup: (T,) -> (T, d)
        # ... a real model runs its transformer blocks on x here ...
        return x @ E.T               # projection: (T, d) @ (d, V) -> (T, V)


def param_entries(module):
    """Path -> shape of every entry of nnx.state(module, nnx.Param)."""
    state = nnx.state(module, nnx.Param)
    return {"/".join(map(str, path)): tuple(leaf.shape)
            for path, leaf in nnx.to_flat_state(state)}


class UntiedLM(nnx.Module):
    """The same model with its own output matrix: two (V, d) parameters."""

    def __init__(self, vocab_size, d_model, rngs):
        scale, shape = 1 / jnp.sqrt(d_model), (vocab_size, d_model)
        self.embedding = nnx.Param(
            jax.random.normal(rngs.params(), shape) * scale
        )
        self.head = nnx.Param(jax.random.normal(rngs.params(), shape) * scale)

    def __call__(self, token_ids):
        return self.embedding[...][token_ids] @ self.head[...].T

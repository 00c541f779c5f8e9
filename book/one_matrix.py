"""Chapter 07's one matrix loaded into the three models, and the converters
between their parameters, shared by the chapter's two pages (07 shows the
code with ``literalinclude``: written once, run as shown)."""
import jax.numpy as jnp
import numpy as np
import torch
from flax import nnx

from three_spellings import LinenTiedLM, NNXTiedLM, TorchTiedLM

V, d = 1000, 64


def draw(seed=7):
    """E, the mixer's kernel M and bias b, 16 token ids and 8 hidden states, all
    float32 but the ids."""
    rng = np.random.default_rng(seed)
    # the one (V, d) matrix; std d^-1/4 gives logits of order one
    E = rng.normal(0.0, d ** -0.25, (V, d)).astype(np.float32)
    # mixer, Flax's (in, out)
    M = rng.normal(0.0, d ** -0.5, (d, d)).astype(np.float32)
    b = rng.normal(0.0, 0.1, d).astype(np.float32)
    ids = rng.integers(0, V, 16)
    # hidden states, for the head
    h = rng.normal(0.0, 1.0, (8, d)).astype(np.float32)
    return E, M, b, ids, h


def load_three(E, M, b):
    """The same values in the three models, each framework its own way."""
    linen_model = LinenTiedLM(V, d)
    linen_vars = {
        "params": {
            "embed": {"embedding": jnp.asarray(E)},
            "mixer": {"kernel": jnp.asarray(M), "bias": jnp.asarray(b)},
        }
    }

    nnx_model = NNXTiedLM(V, d, rngs=nnx.Rngs(0))
    nnx_model.embed.embedding[...] = E
    nnx_model.mixer.kernel[...] = M
    nnx_model.mixer.bias[...] = b

    torch_model = TorchTiedLM(V, d)
    with torch.no_grad():
        # (V, d) on both sides
        torch_model.embed.weight.copy_(torch.from_numpy(E))
        # (in, out) -> (out, in)
        torch_model.mixer.weight.copy_(torch.from_numpy(M.T))
        torch_model.mixer.bias.copy_(torch.from_numpy(b))
    return linen_model, linen_vars, nnx_model, torch_model


# the tolerance of every comparison with the float64 reference, the grader's too
RTOL, ATOL = 1e-5, 1e-5


def reference_logits(E, M, b, ids):
    """The model in float64: x = E[ids], h = x + tanh(x @ M + b), z = h E^T."""
    E, M, b = (np.asarray(a, np.float64) for a in (E, M, b))
    x = E[ids]
    return (x + np.tanh(x @ M + b)) @ E.T


def gap(a, b):
    """The largest absolute difference."""
    return float(np.max(np.abs(a - b)))


def params_of(model):
    return nnx.to_pure_dict(nnx.state(model, nnx.Param))


def abstract_nnx():
    return nnx.eval_shape(lambda: NNXTiedLM(V, d, rngs=nnx.Rngs(0)))


def flax_to_torch_state(params):
    """A TorchTiedLM state_dict from Flax parameters (Linen's or NNX's pure
    dict)."""
    # (V, d) both sides
    E_t = torch.tensor(np.asarray(params["embed"]["embedding"]))
    kernel = np.asarray(params["mixer"]["kernel"])
    return {
        "embed.weight": E_t,
        # (in, out) -> (out, in)
        "mixer.weight": torch.tensor(kernel.T),
        "mixer.bias": torch.tensor(np.asarray(params["mixer"]["bias"])),
        "lm_head.weight": E_t,                                  # the tied alias
    }


def torch_state_to_flax(state_dict):
    """Flax parameters from a TorchTiedLM state_dict; lm_head.weight is not
    needed."""
    def array(name):
        return jnp.asarray(np.asarray(state_dict[name]), jnp.float32)

    return {
        "embed": {"embedding": array("embed.weight")},
        "mixer": {
            "kernel": array("mixer.weight").T,
            "bias": array("mixer.bias"),
        },
    }

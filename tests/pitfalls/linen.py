"""Chapter 01 (Flax Linen): each pitfall the chapter teaches, as a wrong solution.

Solution regions, by the function they sit in: ``TiedIO.__call__``, ``tied_io_embed``,
``SharedEmbedLM.setup``, ``SharedEmbedLM.__call__``.
"""
from . import Pitfall

LINEN_INIT = 'nn.initializers.normal(stddev=0.02), (self.vocab_size, self.d_model)'
DECLARE = f'embedding = self.param("embedding", {LINEN_INIT})\n'


def module(body: str) -> dict:
    """A ``TiedIO.__call__`` that declares the one parameter, then runs ``body``."""
    return {"TiedIO.__call__": DECLARE + body}


def embed(body: str, sizes: str = "int(vocab_size), int(d_model)", seed: str = "int(seed)") -> dict:
    """A ``tied_io_embed`` that builds the module from ``sizes`` and initialises it with
    the key of ``seed``, then runs ``body``."""
    v, d = sizes.split(", ")
    return {"tied_io_embed": f'''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size={v}, d_model={d})
variables = module.init(jax.random.PRNGKey({seed}), ids)
{body}
'''}


# tied_io_embed: every argument arrives as a float; the result is float32.
APPLY = "return module.apply(variables, ids).reshape(-1)"
FLOAT_SIZES = embed(APPLY, sizes="vocab_size, d_model")
FLOAT_SEED = embed(APPLY, seed="seed")
FLOAT64 = embed("return np.asarray(module.apply(variables, ids), np.float64).reshape(-1)")

# SharedEmbedLM: one nn.Embed for the lookup and the head, a mixer between them.
EMBED = "self.embed = nn.Embed(self.vocab_size, self.d_model, embedding_init=nn.initializers.normal(stddev=0.02))\n"
MIXER = "self.mixer = nn.Dense(self.d_model)\n"


def shared(setup: str, call: str) -> dict:
    """A ``SharedEmbedLM`` whose ``setup`` and ``__call__`` run these bodies."""
    return {"SharedEmbedLM.setup": setup, "SharedEmbedLM.__call__": call}


# The other items of a notebook whose mistake is in the module's gradient only.
FORWARD_RIGHT = {"TiedIO.params": "pass", "TiedIO.__call__": "pass", "tied_io_embed": "pass"}

PITFALLS = [
    # tied_io_embed runs with the book's TiedIO: an initialiser that ignores its key, or
    # draws another shape, is held to the key's draw by TiedIO.params (two keys, two matrices).
    Pitfall("01_linen", "init_fixed_key", {"TiedIO.__call__": '''
init = lambda key, shape: nn.initializers.normal(stddev=0.02)(jax.random.PRNGKey(0), shape)
embedding = self.param("embedding", init, (self.vocab_size, self.d_model))
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "linen.init_fixed_key", "TiedIO.__call__": "pass", "tied_io_embed": "pass"}),
    Pitfall("01_linen", "init_transposed_draw", {"TiedIO.__call__": '''
init = lambda key, shape: nn.initializers.normal(stddev=0.02)(key, shape[::-1]).T
embedding = self.param("embedding", init, (self.vocab_size, self.d_model))
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "linen.init_transposed_draw", "TiedIO.__call__": "pass", "tied_io_embed": "pass"}),
    Pitfall("01_linen", "init_other_initialiser", {"TiedIO.__call__": '''
init = lambda key, shape: nn.initializers.normal(stddev=0.02)(jax.random.split(key)[0], shape)
embedding = self.param("embedding", init, (self.vocab_size, self.d_model))
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "linen.init_other_draw", "TiedIO.__call__": "pass", "tied_io_embed": "pass"}),
    # the logits as a tuple of rows: right numbers, not the one array asked (judged from the raw type)
    Pitfall("01_linen", "logits_as_rows", module("return tuple(embedding[i] @ embedding.T for i in token_ids)\n"),
            {"TiedIO.__call__": "common.not_one_array", "TiedIO.gradient": "common.not_one_array",
             "tied_io_embed": "pass"}),
    Pitfall("01_linen", "embed_plus_dense", {"TiedIO.__call__": '''
x = nn.Embed(self.vocab_size, self.d_model, embedding_init=nn.initializers.normal(stddev=0.02), name="embedding")(token_ids)
return nn.Dense(self.vocab_size, use_bias=False)(x)
'''}, {"TiedIO.params": "linen.param_count", "TiedIO.__call__": "linen.submodule", "TiedIO.gradient": "linen.submodule",
       "tied_io_embed": "pass"}),
    Pitfall("01_linen", "second_param", {"TiedIO.__call__": f'''
embedding = self.param("embedding", {LINEN_INIT})
head = self.param("head", {LINEN_INIT})
return embedding[token_ids] @ head.T
'''}, {"TiedIO.params": "linen.param_count", "TiedIO.__call__": "linen.param_not_found",
       "tied_io_embed": "pass"}),
    Pitfall("01_linen", "same_name_twice", {"TiedIO.__call__": f'''
embedding = self.param("embedding", {LINEN_INIT})
head = self.param("embedding", {LINEN_INIT})
return embedding[token_ids] @ head.T
'''}, {"TiedIO.params": "linen.second_param", "tied_io_embed": "pass"}),
    Pitfall("01_linen", "missing_transpose", {"TiedIO.__call__": f'''
embedding = self.param("embedding", {LINEN_INIT})
return embedding[token_ids] @ embedding
'''}, {"TiedIO.__call__": "linen.missing_transpose", "tied_io_embed": "pass",
       "TiedIO.gradient": "linen.missing_transpose"}),
    Pitfall("01_linen", "float_ids", {"tied_io_embed": '''
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
variables = module.init(jax.random.PRNGKey(int(seed)), token_ids)
return module.apply(variables, token_ids).reshape(-1)
'''}, {"tied_io_embed": "linen.float_ids", "TiedIO.params": "pass"}),
    Pitfall("01_linen", "not_flattened", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), ids), ids)
'''}, {"tied_io_embed": "common.not_flattened"}),
    Pitfall("01_linen", "wrong_init_std", {"TiedIO.__call__": '''
embedding = self.param("embedding", nn.initializers.normal(stddev=1.0), (self.vocab_size, self.d_model))
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "common.init_std", "TiedIO.__call__": "pass", "TiedIO.gradient": "pass",
       "tied_io_embed": "pass"}),
    Pitfall("01_linen", "param_name", {"TiedIO.__call__": f'''
W = self.param("W", {LINEN_INIT})
return W[token_ids] @ W.T
'''}, {"TiedIO.params": "linen.param_name", "TiedIO.__call__": "linen.param_not_found"}),
    Pitfall("01_linen", "typo", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), idz), ids).reshape(-1)
'''}, {"tied_io_embed": "common.exception"}),
    # The gradient of the one matrix is the sum of both paths: a blocked path is named.
    Pitfall("01_linen", "stop_gradient_lookup", module(
        "return jax.lax.stop_gradient(embedding)[token_ids] @ embedding.T\n"),
        {**FORWARD_RIGHT, "TiedIO.gradient": "linen.grad_lookup_blocked"}),
    # Paired with a mistake of tied_io_embed that shows before the module is applied.
    Pitfall("01_linen", "stop_gradient_head_and_float_sizes", {**module(
        "return embedding[token_ids] @ jax.lax.stop_gradient(embedding).T\n"), **FLOAT_SIZES},
        {**FORWARD_RIGHT, "TiedIO.gradient": "linen.grad_head_blocked", "tied_io_embed": "linen.float_sizes"}),
    Pitfall("01_linen", "stop_gradient_both_and_float_seed", {**module(
        "frozen = jax.lax.stop_gradient(embedding)\nreturn frozen[token_ids] @ frozen.T\n"), **FLOAT_SEED},
        {**FORWARD_RIGHT, "TiedIO.gradient": "linen.grad_blocked", "tied_io_embed": "linen.float_seed"}),
    Pitfall("01_linen", "numpy_round_trip_and_float64", {**module(
        "x = jnp.asarray(np.asarray(embedding)[np.asarray(token_ids)])\nreturn x @ embedding.T\n"), **FLOAT64},
        {**FORWARD_RIGHT, "TiedIO.gradient": "linen.grad_numpy", "tied_io_embed": "common.wrong_dtype"}),
    # Mistakes once called "untied": each gets its own name.
    Pitfall("01_linen", "off_by_one_lookup", module("return embedding[token_ids + 1] @ embedding.T\n"),
            {"TiedIO.params": "pass", "TiedIO.__call__": "linen.wrong_rows", "tied_io_embed": "pass",
             "TiedIO.gradient": "linen.grad_after_forward"}),
    Pitfall("01_linen", "product_transposed", module("return embedding @ embedding[token_ids].T\n"),
            {"TiedIO.params": "pass", "TiedIO.__call__": "linen.product_transposed",
             "tied_io_embed": "pass", "TiedIO.gradient": "linen.grad_after_forward"}),
    Pitfall("01_linen", "no_lookup", module("return embedding @ embedding.T\n"),
            {"TiedIO.__call__": "linen.no_lookup", "tied_io_embed": "pass",
             "TiedIO.gradient": "linen.grad_after_forward"}),
    Pitfall("01_linen", "scaled_logits", module(
        "return embedding[token_ids] @ embedding.T / jnp.sqrt(self.d_model)\n"),
        {"TiedIO.__call__": "linen.scaled", "tied_io_embed": "pass", "TiedIO.params": "pass"}),
    # tied_io_embed: every argument arrives as a float, the seed matters, the dtype is float32.
    Pitfall("01_linen", "ignores_seed", embed(APPLY, seed="0"),
            {"tied_io_embed": "linen.ignores_seed", "TiedIO.gradient": "pass"}),
    Pitfall("01_linen", "shape_d_by_v", {"TiedIO.__call__": '''
embedding = self.param("embedding", nn.initializers.normal(stddev=0.02), (self.d_model, self.vocab_size))
return embedding[:, token_ids].T @ embedding
'''}, {"TiedIO.params": "common.wrong_param_shape", "TiedIO.__call__": "linen.param_shape",
       "TiedIO.gradient": "linen.param_shape", "tied_io_embed": "pass"}),
    # SharedEmbedLM: each way of untying it, or of dropping the mixer, is named.
    Pitfall("01_linen", "shared_two_embeds", shared(
        EMBED + MIXER + EMBED.replace("self.embed ", "self.out_embed "),
        "return self.out_embed.attend(self.mixer(self.embed(token_ids)))\n"),
        {"SharedEmbedLM.params": "linen.shared_two_embeds", "SharedEmbedLM.__call__": "linen.param_not_found",
         "TiedIO.params": "pass"}),
    Pitfall("01_linen", "shared_dense_head", shared(
        EMBED + MIXER + "self.head = nn.Dense(self.vocab_size, use_bias=False)\n",
        "return self.head(self.mixer(self.embed(token_ids)))\n"),
        {"SharedEmbedLM.params": "linen.shared_dense_head", "SharedEmbedLM.__call__": "linen.param_not_found"}),
    # A mixer created in setup but never called has no parameters: both items name it.
    Pitfall("01_linen", "shared_mixer_skipped", {"SharedEmbedLM.__call__": "return self.embed.attend(self.embed(token_ids))\n"},
            {"SharedEmbedLM.params": "linen.shared_no_mixer", "SharedEmbedLM.__call__": "linen.shared_mixer_skipped",
             "SharedEmbedLM.gradient": "linen.shared_grad_after_forward", "tied_io_embed": "pass"}),
    Pitfall("01_linen", "shared_param_name", shared(
        EMBED.replace("self.embed ", "self.embedding ") + MIXER,
        "return self.embedding.attend(self.mixer(self.embedding(token_ids)))\n"),
        {"SharedEmbedLM.params": "linen.shared_param_names", "SharedEmbedLM.__call__": "linen.param_not_found"}),
    Pitfall("01_linen", "shared_mixer_without_bias", shared(
        EMBED + "self.mixer = nn.Dense(self.d_model, use_bias=False)\n",
        "return self.embed.attend(self.mixer(self.embed(token_ids)))\n"),
        {"SharedEmbedLM.params": "linen.shared_param_names", "SharedEmbedLM.__call__": "common.wrong_values"}),
    # The head's gradient is judged too: a stop_gradient on it keeps the logits right (issue 27).
    Pitfall("01_linen", "shared_head_stop_gradient", {"SharedEmbedLM.__call__": '''
h = self.mixer(self.embed(token_ids))
return h @ jax.lax.stop_gradient(self.embed.embedding).T
'''}, {"SharedEmbedLM.params": "pass", "SharedEmbedLM.__call__": "pass",
       "SharedEmbedLM.gradient": "linen.shared_grad_head_blocked"}),
    Pitfall("01_linen", "shared_lookup_stop_gradient", {"SharedEmbedLM.__call__": '''
return self.embed.attend(self.mixer(jax.lax.stop_gradient(self.embed(token_ids))))
'''}, {"SharedEmbedLM.__call__": "pass", "SharedEmbedLM.gradient": "linen.shared_grad_lookup_blocked"}),
    # A bfloat16 parameter is a dtype finding wherever it shows, never "could not be judged".
    Pitfall("01_linen", "bfloat16_param", {"TiedIO.__call__": f'''
embedding = self.param("embedding", {LINEN_INIT}, jnp.bfloat16)
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "common.wrong_dtype", "tied_io_embed": "pass"}),
    # One array is asked: the flattened logits inside a tuple fail from the raw type.
    Pitfall("01_linen", "logits_in_a_tuple", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
variables = module.init(jax.random.PRNGKey(int(seed)), ids)
return (module.apply(variables, ids).reshape(-1),)
'''}, {"tied_io_embed": "common.not_one_array"}),
    # A column short: the shape is named before any symptom is looked for.
    Pitfall("01_linen", "logits_one_column_short", module("return (embedding[token_ids] @ embedding.T)[:, 1:]\n"),
            {"TiedIO.__call__": "common.wrong_shape"}),
    # Right logits, and no gradient reaches the table by either path.
    Pitfall("01_linen", "shared_stop_gradient", {"SharedEmbedLM.__call__":
            "return jax.lax.stop_gradient(self.embed.attend(self.mixer(self.embed(token_ids))))\n"},
            {"SharedEmbedLM.__call__": "pass", "SharedEmbedLM.gradient": "linen.shared_grad_blocked"}),
    # tied_io_embed scoring with a head of its own: a token's logit with itself turns negative.
    Pitfall("01_linen", "embed_own_head", embed('table = variables["params"]["embedding"]\n'
                                               'return (table[ids] @ (-jnp.abs(table) * table).T).reshape(-1)'),
            {"tied_io_embed": "common.untied", "TiedIO.__call__": "pass"}),
]

"""Chapter 01 (Flax Linen): each pitfall the chapter teaches, as a wrong solution."""
from . import Pitfall

LINEN_INIT = 'nn.initializers.normal(stddev=0.02), (self.vocab_size, self.d_model)'

PITFALLS = [
    Pitfall("01_linen", "embed_plus_dense", {0: f'''
x = nn.Embed(self.vocab_size, self.d_model, embedding_init=nn.initializers.normal(stddev=0.02), name="embedding")(token_ids)
return nn.Dense(self.vocab_size, use_bias=False)(x)
'''}, {"TiedIO.params": "linen.param_count"}),
    Pitfall("01_linen", "second_param", {0: f'''
embedding = self.param("embedding", {LINEN_INIT})
head = self.param("head", {LINEN_INIT})
return embedding[token_ids] @ head.T
'''}, {"TiedIO.params": "linen.param_count", "TiedIO.__call__": "linen.param_not_found",
       "tied_io_embed": {"common.untied", "common.wrong_values"}}),
    Pitfall("01_linen", "same_name_twice", {0: f'''
embedding = self.param("embedding", {LINEN_INIT})
head = self.param("embedding", {LINEN_INIT})
return embedding[token_ids] @ head.T
'''}, {"TiedIO.params": "linen.second_param", "tied_io_embed": "linen.second_param"}),
    Pitfall("01_linen", "missing_transpose", {0: f'''
embedding = self.param("embedding", {LINEN_INIT})
return embedding[token_ids] @ embedding
'''}, {"TiedIO.__call__": "linen.missing_transpose", "tied_io_embed": "linen.missing_transpose"}),
    Pitfall("01_linen", "float_ids", {1: '''
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
variables = module.init(jax.random.PRNGKey(int(seed)), token_ids)
return module.apply(variables, token_ids).reshape(-1)
'''}, {"tied_io_embed": "linen.float_ids", "TiedIO.params": "pass"}),
    Pitfall("01_linen", "not_flattened", {1: '''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), ids), ids)
'''}, {"tied_io_embed": "common.not_flattened"}),
    Pitfall("01_linen", "wrong_init_std", {0: '''
embedding = self.param("embedding", nn.initializers.normal(stddev=1.0), (self.vocab_size, self.d_model))
return embedding[token_ids] @ embedding.T
'''}, {"TiedIO.params": "common.init_std", "TiedIO.__call__": "pass"}),
    Pitfall("01_linen", "param_name", {0: f'''
W = self.param("W", {LINEN_INIT})
return W[token_ids] @ W.T
'''}, {"TiedIO.params": "linen.param_name", "TiedIO.__call__": "linen.param_not_found"}),
    Pitfall("01_linen", "typo", {1: '''
ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), idz), ids).reshape(-1)
'''}, {"tied_io_embed": "common.exception"}),
]

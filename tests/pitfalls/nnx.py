"""Chapter 02 (Flax NNX): each pitfall the chapter teaches, as a wrong solution.

Regions of solutions/02_nnx.ipynb: 0 ``TiedEmbed.__init__``, 1 ``TiedEmbed.__call__``,
2 ``tied_io_embed``, 3 ``tied_grad_paths``.  ``tied_grad_paths`` does not use
``TiedEmbed``, so a mistake in it is paired with a mistake in the module in the same
notebook: the items are judged apart, and the suite grades half as many notebooks.
"""
from . import Pitfall

DRAW = "jax.random.normal(rngs.params(), (vocab_size, d_model)) / jnp.sqrt(d_model)"

# The two paths from an untied copy, as in the solution; ``STACK`` decides what is returned.
TWO_COPIES = '''
class TwoCopies(nnx.Module):
    def __init__(self, matrix):
        self.lookup = nnx.Param(jnp.array(matrix))
        self.project = nnx.Param(jnp.array(matrix))

    def __call__(self, ids):
        return self.lookup[...][ids] @ self.project[...].T

ids = jnp.asarray(token_ids, jnp.int32)
loss = lambda m: mean_cross_entropy(m(ids), targets)
grads = nnx.jit(nnx.grad(loss))(TwoCopies(embedding))
lookup, project = grads["lookup"][...], grads["project"][...]
'''


def grad_region(returned: str, loss: str = "") -> str:
    code = TWO_COPIES + f"return {returned}\n"
    return code.replace("loss = lambda m: mean_cross_entropy(m(ids), targets)", loss) if loss else code


PITFALLS = [
    Pitfall("02_nnx", "two_params_and_grad_swapped", {0: f'''
self.embedding = nnx.Param({DRAW})
self.head = nnx.Param({DRAW})
''', 1: '''
return self.embedding[...][token_ids] @ self.head[...].T
''', 3: grad_region("jnp.stack([project, lookup])")},
        {"TiedEmbed.params": "nnx.param_count", "TiedEmbed.__call__": "nnx.forward_untied",
         "tied_io_embed": {"common.untied", "common.wrong_values"}, "TiedEmbed.warnings": "pass",
         "tied_grad_paths": "nnx.grad_swapped"}),
    Pitfall("02_nnx", "copied_param_and_grad_total", {0: f'''
self.embedding = nnx.Param({DRAW})
self.head = nnx.Param(self.embedding[...].T)
''', 1: '''
return self.embedding[...][token_ids] @ self.head[...]
''', 3: grad_region("jnp.stack([lookup + project, jnp.zeros_like(lookup)])")},
        {"TiedEmbed.params": "nnx.copied_param", "TiedEmbed.__call__": "nnx.forward_untied",
         "tied_io_embed": "pass", "tied_grad_paths": "nnx.grad_total"}),
    Pitfall("02_nnx", "missing_transpose_and_grad_sum", {1: '''
matrix = self.embedding[...]
return matrix[token_ids] @ matrix
''', 3: grad_region("jnp.stack([lookup, project])",
                    loss="loss = lambda m: mean_cross_entropy(m(ids), targets) * len(ids)")},
        {"TiedEmbed.__call__": "nnx.missing_transpose", "tied_io_embed": "nnx.missing_transpose",
         "TiedEmbed.params": "pass", "tied_grad_paths": "nnx.grad_sum_not_mean"}),
    # Worked out by hand: right but for .set, which keeps one of the repeated rows.
    Pitfall("02_nnx", "deprecated_value_float_ids_and_grad_set", {1: '''
return self.embedding.value[token_ids] @ self.embedding.value.T
''', 2: '''
model = TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))
return model(token_ids).reshape(-1)
''', 3: '''
E = jnp.asarray(embedding)
ids = jnp.asarray(token_ids, jnp.int32)
x = E[ids]
g = jax.nn.softmax(x @ E.T, axis=-1) - jax.nn.one_hot(jnp.asarray(targets), E.shape[0])
g = g / len(ids)
lookup = jnp.zeros_like(E).at[ids].set(g @ E)
return jnp.stack([lookup, g.T @ x])
'''}, {"TiedEmbed.warnings": "nnx.deprecated_value", "TiedEmbed.__call__": "pass", "TiedEmbed.params": "pass",
       "tied_io_embed": "nnx.float_ids", "tied_grad_paths": "nnx.grad_set_not_add"}),
    Pitfall("02_nnx", "plain_array_and_grad_not_stacked", {0: f'''
self.embedding = {DRAW}
''', 1: '''
return self.embedding[token_ids] @ self.embedding.T
''', 3: grad_region("lookup + project")},
        {"TiedEmbed.params": "nnx.not_a_param", "TiedEmbed.__call__": "nnx.not_a_param",
         "tied_io_embed": "pass", "tied_grad_paths": "nnx.grad_not_stacked"}),
    Pitfall("02_nnx", "param_name_and_not_flattened", {0: f'''
self.table = nnx.Param({DRAW})
''', 1: '''
return self.table[...][token_ids] @ self.table[...].T
''', 2: '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))(ids)
'''}, {"TiedEmbed.params": "nnx.param_name", "TiedEmbed.__call__": "nnx.no_embedding",
       "tied_io_embed": "common.not_flattened", "tied_grad_paths": "pass"}),
    Pitfall("02_nnx", "unscaled_init", {0: '''
self.embedding = nnx.Param(jax.random.normal(rngs.params(), (vocab_size, d_model)))
'''}, {"TiedEmbed.params": "common.init_std", "tied_io_embed": "nnx.init_scale", "TiedEmbed.__call__": "pass"}),
    Pitfall("02_nnx", "fixed_seed", {2: '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(0))(ids).reshape(-1)
'''}, {"tied_io_embed": "nnx.ignores_seed", "TiedEmbed.params": "pass"}),
]

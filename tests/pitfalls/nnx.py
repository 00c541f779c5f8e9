"""Chapter 02 (Flax NNX): each pitfall the chapter teaches, as a wrong solution.

Solution regions, by the function they sit in: ``TiedEmbed.__init__``,
``TiedEmbed.__call__``, ``tied_io_embed``, ``tied_grad_paths``.  ``tied_grad_paths`` does not use
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


def grad_region(returned: str, loss: str = "", forward: str = "") -> str:
    """The solution's untied copy, returning ``returned``, with another ``loss`` line or
    another ``forward`` (the return line of ``TwoCopies.__call__``) where given."""
    code = TWO_COPIES + f"return {returned}\n"
    if loss:
        code = code.replace("loss = lambda m: mean_cross_entropy(m(ids), targets)", loss)
    if forward:
        code = code.replace("return self.lookup[...][ids] @ self.project[...].T", forward)
    return code


def forward(body: str) -> dict:
    """A ``TiedEmbed.__call__`` that reads the matrix once, then runs ``body``."""
    return {"TiedEmbed.__call__": "matrix = self.embedding[...]\n" + body}


PATHS = "jnp.stack([lookup, project])"
# tied_io_embed: every argument arrives as a float; the result is float32.
FLOAT_SIZES = '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(vocab_size, d_model, rngs=nnx.Rngs(int(seed)))(ids).reshape(-1)
'''
FLOAT_SEED = '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(seed))(ids).reshape(-1)
'''
FLOAT64 = '''
ids = jnp.asarray(token_ids, jnp.int32)
logits = TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))(ids)
return np.asarray(logits, np.float64).reshape(-1)
'''
# The other items of a notebook whose module is wrong in its gradient only.
FORWARD_RIGHT = {"TiedEmbed.params": "pass", "TiedEmbed.__call__": "pass", "tied_io_embed": "pass",
                 "TiedEmbed.warnings": "pass"}


PITFALLS = [
    # the logits as a list of rows: right numbers, not the one array asked (judged from the raw type)
    Pitfall("02_nnx", "logits_as_rows", {"TiedEmbed.__call__": "matrix = self.embedding[...]\n"
                                         "return [matrix[i] @ matrix.T for i in token_ids]\n"},
            {"TiedEmbed.__call__": "common.not_one_array", "TiedEmbed.gradient": "common.not_one_array",
             "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "two_params_and_grad_swapped", {"TiedEmbed.__init__": f'''
self.embedding = nnx.Param({DRAW})
self.head = nnx.Param({DRAW})
''', "TiedEmbed.__call__": '''
return self.embedding[...][token_ids] @ self.head[...].T
''', "tied_grad_paths": grad_region("jnp.stack([project, lookup])")},
        {"TiedEmbed.params": "nnx.param_count", "TiedEmbed.__call__": "nnx.forward_untied",
         "tied_io_embed": "pass", "TiedEmbed.warnings": "pass",
         "TiedEmbed.gradient": "nnx.grad_after_forward", "tied_grad_paths": "nnx.grad_swapped"}),
    Pitfall("02_nnx", "copied_param_and_grad_total", {"TiedEmbed.__init__": f'''
self.embedding = nnx.Param({DRAW})
self.head = nnx.Param(self.embedding[...].T)
''', "TiedEmbed.__call__": '''
return self.embedding[...][token_ids] @ self.head[...]
''', "tied_grad_paths": grad_region("jnp.stack([lookup + project, jnp.zeros_like(lookup)])")},
        {"TiedEmbed.params": "nnx.copied_param", "TiedEmbed.__call__": "nnx.forward_untied",
         "tied_io_embed": "pass", "TiedEmbed.gradient": "nnx.grad_after_forward", "tied_grad_paths": "nnx.grad_total"}),
    Pitfall("02_nnx", "missing_transpose_and_grad_sum", {"TiedEmbed.__call__": '''
matrix = self.embedding[...]
return matrix[token_ids] @ matrix
''', "tied_grad_paths": grad_region("jnp.stack([lookup, project])",
                    loss="loss = lambda m: mean_cross_entropy(m(ids), targets) * len(ids)")},
        {"TiedEmbed.__call__": "nnx.missing_transpose", "tied_io_embed": "pass",
         "TiedEmbed.gradient": "nnx.missing_transpose", "TiedEmbed.params": "pass",
         "TiedEmbed.warnings": "pass",  # no warning raised: the transpose is __call__'s to name
         "tied_grad_paths": "nnx.grad_sum_not_mean"}),
    # Worked out by hand: right but for .set, which keeps one of the repeated rows.
    Pitfall("02_nnx", "deprecated_value_float_ids_and_grad_set", {"TiedEmbed.__call__": '''
return self.embedding.value[token_ids] @ self.embedding.value.T
''', "tied_io_embed": '''
model = TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))
return model(token_ids).reshape(-1)
''', "tied_grad_paths": '''
E = jnp.asarray(embedding)
ids = jnp.asarray(token_ids, jnp.int32)
x = E[ids]
g = jax.nn.softmax(x @ E.T, axis=-1) - jax.nn.one_hot(jnp.asarray(targets), E.shape[0])
g = g / len(ids)
lookup = jnp.zeros_like(E).at[ids].set(g @ E)
return jnp.stack([lookup, g.T @ x])
'''}, {"TiedEmbed.warnings": "nnx.deprecated_value", "TiedEmbed.__call__": "pass", "TiedEmbed.params": "pass",
       "TiedEmbed.gradient": "pass", "tied_io_embed": "nnx.float_ids", "tied_grad_paths": "nnx.grad_set_not_add"}),
    Pitfall("02_nnx", "plain_array_and_grad_not_stacked", {"TiedEmbed.__init__": f'''
self.embedding = {DRAW}
''', "TiedEmbed.__call__": '''
return self.embedding[token_ids] @ self.embedding.T
''', "tied_grad_paths": grad_region("lookup + project")},
        # The forward pass is judged on its own (the grader writes its matrix into the
        # attribute); the gradient is where a plain array fails: nnx.grad never sees it.
        {"TiedEmbed.params": "nnx.not_a_param", "TiedEmbed.__call__": "pass",
         "TiedEmbed.gradient": "nnx.grad_not_a_param", "tied_io_embed": "pass",
         "tied_grad_paths": "nnx.grad_not_stacked"}),
    Pitfall("02_nnx", "param_name_and_not_flattened", {"TiedEmbed.__init__": f'''
self.table = nnx.Param({DRAW})
''', "TiedEmbed.__call__": '''
return self.table[...][token_ids] @ self.table[...].T
''', "tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))(ids)
'''}, {"TiedEmbed.params": "nnx.param_name", "TiedEmbed.__call__": "pass", "TiedEmbed.gradient": "pass",
       "tied_io_embed": "common.not_flattened", "tied_grad_paths": "pass"}),
    Pitfall("02_nnx", "unscaled_init", {"TiedEmbed.__init__": '''
self.embedding = nnx.Param(jax.random.normal(rngs.params(), (vocab_size, d_model)))
'''}, {"TiedEmbed.params": "common.init_std", "tied_io_embed": "pass", "TiedEmbed.__call__": "pass",
       "TiedEmbed.gradient": "pass"}),
    Pitfall("02_nnx", "fixed_seed", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
return TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(0))(ids).reshape(-1)
'''}, {"tied_io_embed": "nnx.ignores_seed", "TiedEmbed.params": "pass"}),
    # The gradient of the one matrix is the sum of both paths: a blocked path is named,
    # in the module (TiedEmbed.gradient) and in the untied copy (tied_grad_paths).
    Pitfall("02_nnx", "stop_gradient_lookup_twice", {
        **forward("return jax.lax.stop_gradient(matrix)[token_ids] @ matrix.T\n"),
        "tied_grad_paths": grad_region(PATHS, forward="return jax.lax.stop_gradient(self.lookup[...])[ids] @ self.project[...].T")},
        {**FORWARD_RIGHT, "TiedEmbed.gradient": "nnx.grad_lookup_blocked", "tied_grad_paths": "nnx.grad_lookup_zero"}),
    Pitfall("02_nnx", "stop_gradient_head_twice", {
        **forward("return matrix[token_ids] @ jax.lax.stop_gradient(matrix).T\n"),
        "tied_grad_paths": grad_region(PATHS, forward="return self.lookup[...][ids] @ jax.lax.stop_gradient(self.project[...]).T")},
        {**FORWARD_RIGHT, "TiedEmbed.gradient": "nnx.grad_head_blocked", "tied_grad_paths": "nnx.grad_head_zero"}),
    # Paired with a mistake of tied_io_embed that shows before the module is called.
    Pitfall("02_nnx", "stop_gradient_both_and_float_seed", {**forward(
        "frozen = jax.lax.stop_gradient(matrix)\nreturn frozen[token_ids] @ frozen.T\n"), "tied_io_embed": FLOAT_SEED},
        {**FORWARD_RIGHT, "TiedEmbed.gradient": "nnx.grad_blocked", "tied_io_embed": "nnx.float_seed",
         "tied_grad_paths": "pass"}),
    Pitfall("02_nnx", "numpy_round_trip_and_float64", {**forward(
        "x = jnp.asarray(np.asarray(matrix)[np.asarray(token_ids)])\nreturn x @ matrix.T\n"), "tied_io_embed": FLOAT64},
        {**FORWARD_RIGHT, "TiedEmbed.gradient": "nnx.grad_numpy", "tied_io_embed": "common.wrong_dtype"}),
    # Mistakes once called "untied": each gets its own name.
    Pitfall("02_nnx", "off_by_one_lookup", forward("return matrix[token_ids + 1] @ matrix.T\n"),
            {"TiedEmbed.params": "pass", "TiedEmbed.__call__": "nnx.wrong_rows", "tied_io_embed": "pass",
             "TiedEmbed.gradient": "nnx.grad_after_forward"}),
    Pitfall("02_nnx", "product_transposed", forward("return matrix @ matrix[token_ids].T\n"),
            {"TiedEmbed.__call__": "nnx.product_transposed", "tied_io_embed": "pass",
             "TiedEmbed.gradient": "nnx.grad_after_forward"}),
    Pitfall("02_nnx", "no_lookup_and_float_sizes", {**forward("return matrix @ matrix.T\n"), "tied_io_embed": FLOAT_SIZES},
            {"TiedEmbed.__call__": "nnx.no_lookup", "tied_io_embed": "nnx.float_sizes"}),
    Pitfall("02_nnx", "scaled_logits", forward("return matrix[token_ids] @ matrix.T / matrix.shape[1]\n"),
            {"TiedEmbed.__call__": "nnx.scaled", "tied_io_embed": "pass", "TiedEmbed.params": "pass"}),
    # nnx.Embed holds a Param that nnx.state sees: tied through attend, but not at self.embedding.
    Pitfall("02_nnx", "embed_layer", {"TiedEmbed.__init__": '''
self.embedding = nnx.Embed(vocab_size, d_model, rngs=rngs)
''', "TiedEmbed.__call__": '''
return self.embedding.attend(self.embedding(token_ids))
'''}, {"TiedEmbed.params": "nnx.param_in_submodule", "TiedEmbed.__call__": "pass", "TiedEmbed.gradient": "pass",
       "TiedEmbed.warnings": "pass", "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "variable_not_param", {"TiedEmbed.__init__": f'''
self.embedding = nnx.Variable({DRAW})
'''}, {"TiedEmbed.params": "nnx.not_a_param", "TiedEmbed.__call__": "pass",
       "TiedEmbed.gradient": "nnx.grad_not_a_param", "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "divided_by_d", {"TiedEmbed.__init__": '''
self.embedding = nnx.Param(jax.random.normal(rngs.params(), (vocab_size, d_model)) / d_model)
'''}, {"TiedEmbed.params": "common.init_std", "tied_io_embed": "pass", "TiedEmbed.__call__": "pass"}),
    # The tuple jax.grad gives for two argnums holds the right paths, but one stacked
    # array is asked: judged from the raw type, not from what np.asarray makes of it.
    Pitfall("02_nnx", "grad_paths_tuple", {"tied_grad_paths": '''
ids, matrix = jnp.asarray(token_ids, jnp.int32), jnp.asarray(embedding)
loss = lambda lookup, project: mean_cross_entropy(lookup[ids] @ project.T, targets)
return jax.grad(loss, argnums=(0, 1))(matrix, matrix)
'''}, {"tied_grad_paths": "nnx.grad_not_stacked", "TiedEmbed.gradient": "pass", "tied_io_embed": "pass"}),
    # The matrix drawn (D, V) and read transposed: the logits are right, the parameter is not.
    Pitfall("02_nnx", "matrix_stored_transposed", {"TiedEmbed.__init__": '''
draw = jax.random.normal(rngs.params(), (d_model, vocab_size))
self.embedding = nnx.Param(draw / jnp.sqrt(d_model))
''', "TiedEmbed.__call__": '''
matrix = self.embedding[...].T
return matrix[token_ids] @ matrix.T
'''}, {"TiedEmbed.params": "common.wrong_param_shape"}),
    # tied_io_embed runs with the book's TiedEmbed: a class that ignores its key, or draws
    # another shape, is held to the seed's draw by TiedEmbed.params (two seeds, two matrices).
    Pitfall("02_nnx", "init_fixed_key", {"TiedEmbed.__init__": '''
draw = jax.random.normal(jax.random.key(0), (vocab_size, d_model))
self.embedding = nnx.Param(draw / jnp.sqrt(d_model))
'''}, {"TiedEmbed.params": "nnx.init_fixed_key", "TiedEmbed.__call__": "pass", "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "init_transposed_draw", {"TiedEmbed.__init__": '''
draw = jax.random.normal(rngs.params(), (d_model, vocab_size)).T
self.embedding = nnx.Param(draw / jnp.sqrt(d_model))
'''}, {"TiedEmbed.params": "nnx.init_transposed_draw", "TiedEmbed.__call__": "pass", "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "init_two_draws", {"TiedEmbed.__init__": '''
rngs.params()
self.embedding = nnx.Param(jax.random.normal(rngs.params(), (vocab_size, d_model)) / jnp.sqrt(d_model))
'''}, {"TiedEmbed.params": "nnx.init_other_draw", "TiedEmbed.__call__": "pass", "tied_io_embed": "pass"}),
    Pitfall("02_nnx", "logits_one_column_short", {"TiedEmbed.__call__": '''
matrix = self.embedding[...]
return (matrix[token_ids] @ matrix.T)[:, 1:]
'''}, {"TiedEmbed.__call__": "common.wrong_shape"}),
    # No parameter at all: the matrix is drawn again at every call.
    Pitfall("02_nnx", "no_matrix_kept", {"TiedEmbed.__init__": '''
self.shape = (vocab_size, d_model)
''', "TiedEmbed.__call__": '''
matrix = jax.random.normal(jax.random.key(0), self.shape) / jnp.sqrt(self.shape[1])
return matrix[token_ids] @ matrix.T
'''}, {"TiedEmbed.params": "nnx.no_param", "TiedEmbed.__call__": "nnx.no_matrix"}),
    # The matrix stored under another name, read as self.embedding: every item that calls it names that.
    Pitfall("02_nnx", "matrix_stored_as_weight", {"TiedEmbed.__init__": '''
draw = jax.random.normal(rngs.params(), (vocab_size, d_model))
self.weight = nnx.Param(draw / jnp.sqrt(d_model))
'''}, {"TiedEmbed.params": "nnx.param_name", "TiedEmbed.__call__": "nnx.no_embedding",
        "tied_io_embed": "pass"}),
    # Another deprecated way to read the array than .value: named with its own warning.
    Pitfall("02_nnx", "raw_value", {"TiedEmbed.__call__": '''
matrix = self.embedding.raw_value
return matrix[token_ids] @ matrix.T
'''}, {"TiedEmbed.__call__": "pass", "TiedEmbed.warnings": "nnx.deprecated_api"}),
    # tied_io_embed drawing the table itself, undivided by sqrt(D): the logits are D times too large.
    Pitfall("02_nnx", "embed_own_draw", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
table = jax.random.normal(nnx.Rngs(int(seed)).params(), (int(vocab_size), int(d_model)))
return (table[ids] @ table.T).reshape(-1)
'''}, {"tied_io_embed": "nnx.init_scale", "TiedEmbed.__call__": "pass"}),
    # tied_io_embed scoring with a head of its own: a token's logit with itself turns negative.
    Pitfall("02_nnx", "embed_own_head", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
table = TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed))).embedding[...]
return (table[ids] @ (-jnp.abs(table) * table).T).reshape(-1)
'''}, {"tied_io_embed": "common.untied", "TiedEmbed.__call__": "pass"}),
    # One array is asked: the flattened logits in a list fail from the raw type.
    Pitfall("02_nnx", "logits_in_a_list", {"tied_io_embed": '''
ids = jnp.asarray(token_ids, jnp.int32)
return [TiedEmbed(int(vocab_size), int(d_model), rngs=nnx.Rngs(int(seed)))(ids).reshape(-1)]
'''}, {"tied_io_embed": "common.not_one_array", "TiedEmbed.__call__": "pass"}),
]

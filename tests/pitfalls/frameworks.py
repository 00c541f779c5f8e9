"""Chapter 07 (one matrix, three frameworks): each pitfall the chapter teaches, as a wrong solution.

Solution regions, by the function they sit in: ``linen_to_torch``, ``torch_to_nnx``.
The two converters are independent, so each notebook carries one mistake in each.
"""
from . import Pitfall

CH = "07_three_frameworks"

# linen_to_torch: the solution's steps, to be combined with one wrong step.
READ = '''params = variables["params"]
embedding = np.asarray(params["embed"]["embedding"], np.float32)
kernel, bias = np.asarray(params["mixer"]["kernel"]), np.asarray(params["mixer"]["bias"])
model = TorchTiedLM(*embedding.shape)
'''
COPY_EMBED = "    model.embed.weight.copy_(torch.tensor(embedding))\n"
COPY_MIXER = ("    model.mixer.weight.copy_(torch.tensor(kernel.T))\n"
              "    model.mixer.bias.copy_(torch.tensor(bias))\n")
NO_GRAD = "with torch.no_grad():\n"
RIGHT_TORCH = READ + NO_GRAD + COPY_EMBED + COPY_MIXER


def state_dict_load(embedding_key="embed.weight", extra="", **kwargs):
    """linen_to_torch through load_state_dict, with the keys and arguments given."""
    args = "".join(f", {k}={v}" for k, v in kwargs.items())
    return READ + f'''E = torch.tensor(embedding)
model.load_state_dict({{"{embedding_key}": E, "mixer.weight": torch.tensor(kernel.T),
                       "mixer.bias": torch.tensor(bias){extra}}}{args})
return model
'''


# torch_to_nnx: the solution's steps, with the dictionary of values as a parameter.
def nnx_fill(embedding='array("embed.weight")', kernel='array("mixer.weight").T', nest="embedding", tail=""):
    return f'''def array(name):
    return jnp.asarray(state_dict[name].detach().cpu().numpy(), jnp.float32)

values = {{"embed": {{"{nest}": {embedding}}},
          "mixer": {{"kernel": {kernel}, "bias": array("mixer.bias")}}}}
graphdef, state = nnx.split(nnx.eval_shape(lambda: NNXTiedLM(*values["embed"]["{nest}"].shape, rngs=nnx.Rngs(0))))
nnx.replace_by_pure_dict(state, values)
model = nnx.merge(graphdef, state)
{tail}return model
'''


# A torch model of the student's own, equal to TorchTiedLM but not of that class.
OWN_TORCH_CLASS = '''class Converted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        V, d = embedding.shape
        self.embed = torch.nn.Embedding(V, d)
        self.mixer = torch.nn.Linear(d, d)
        self.lm_head = torch.nn.Linear(d, V, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        x = self.embed(ids)
        return self.lm_head(x + torch.tanh(self.mixer(x)))

'''

TORCH_ITEMS = ("linen_to_torch.tied", "linen_to_torch")
NNX_ITEMS = ("torch_to_nnx.params", "torch_to_nnx")

PITFALLS = [
    Pitfall(CH, "kernel_not_transposed", {
        "linen_to_torch": READ + NO_GRAD + COPY_EMBED + COPY_MIXER.replace("kernel.T", "kernel") + "return model",
        "torch_to_nnx": nnx_fill(kernel='array("mixer.weight")'),
    }, {"linen_to_torch.tied": "pass", "linen_to_torch": "frameworks.kernel_not_transposed",
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.kernel_not_transposed"}),
    Pitfall(CH, "clone_and_head_param", {
        "linen_to_torch": RIGHT_TORCH + "model.lm_head.weight = torch.nn.Parameter(model.embed.weight.detach().clone())\nreturn model",
        "torch_to_nnx": nnx_fill(tail='model.lm_head = nnx.Param(jnp.array(values["embed"]["embedding"]))  # "the head, too"\n'),
    }, {"linen_to_torch.tied": "frameworks.torch_copy", "linen_to_torch": "pass",
        "torch_to_nnx.params": "frameworks.nnx_extra_param", "torch_to_nnx": "pass"}),
    Pitfall(CH, "assign_and_alias_key", {
        "linen_to_torch": state_dict_load(extra=', "lm_head.weight": E', assign=True),
        "torch_to_nnx": nnx_fill(embedding='array("lm_head.weight")'),
    }, {"linen_to_torch.tied": "frameworks.torch_alias", "linen_to_torch": "pass",
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.alias_key"}),
    Pitfall(CH, "replaced_parameter_and_tolist", {
        "linen_to_torch": READ + "model.embed.weight = torch.nn.Parameter(torch.tensor(embedding))\n"
           + NO_GRAD + COPY_MIXER + "return model",
        "torch_to_nnx": nnx_fill().replace("jnp.asarray(state_dict[name].detach().cpu().numpy(), jnp.float32)",
                              "np.array(state_dict[name].tolist())"),
    }, {"linen_to_torch.tied": "frameworks.torch_head_stale", "linen_to_torch": "pass",
        "torch_to_nnx.params": "frameworks.float64", "torch_to_nnx": "pass"}),
    Pitfall(CH, "double_and_key_name", {
        "linen_to_torch": RIGHT_TORCH.replace("TorchTiedLM(*embedding.shape)", "TorchTiedLM(*embedding.shape).double()")
           + "return model",
        "torch_to_nnx": nnx_fill(nest="weight"),
    }, {"linen_to_torch.tied": "frameworks.tied_float64", "linen_to_torch": "pass",
        **dict.fromkeys(NNX_ITEMS, "frameworks.nnx_key_name")}),
    Pitfall(CH, "mixed_float64", {
        "linen_to_torch": READ + "model.embed.weight = torch.nn.Parameter(torch.tensor(embedding, dtype=torch.float64))\n"
           "model.lm_head.weight = model.embed.weight\n" + NO_GRAD + COPY_MIXER + "return model",
    }, {"linen_to_torch.tied": "frameworks.tied_float64", "linen_to_torch": "pass", **dict.fromkeys(NNX_ITEMS, "pass")}),
    Pitfall(CH, "transposed_embedding_and_unfilled", {
        "linen_to_torch": READ + NO_GRAD + COPY_EMBED.replace("embedding)", "embedding.T)") + COPY_MIXER + "return model",
        "torch_to_nnx": nnx_fill().replace("nnx.replace_by_pure_dict(state, values)",
                              'nnx.replace_by_pure_dict(state, {"embed": values["embed"]})'),
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.shape_mismatch"),
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.nnx_unfilled_params"}),
    Pitfall(CH, "key_name_and_transposed_embedding", {
        "linen_to_torch": RIGHT_TORCH.replace('variables["params"]', 'variables') + "return model",
        "torch_to_nnx": nnx_fill(embedding='array("embed.weight").T').replace('["embed"]["embedding"].shape', '["embed"]["embedding"].T.shape'),
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.key_name"),
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.embedding_transposed"}),
    Pitfall(CH, "state_dict_names_and_returns_values", {
        "linen_to_torch": state_dict_load(embedding_key="embedding.weight"),
        "torch_to_nnx": nnx_fill().replace("model = nnx.merge(graphdef, state)\nreturn model", "return values"),
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.state_dict_keys"),
        **dict.fromkeys(NNX_ITEMS, "frameworks.not_nnx_module")}),
    Pitfall(CH, "strict_false_and_own_class", {
        "linen_to_torch": state_dict_load(embedding_key="embedding.weight", strict=False),
        "torch_to_nnx": '''class Converted(nnx.Module):
    def __init__(self, sd):
        self.embedding = nnx.Param(jnp.asarray(sd["embed.weight"].numpy()))
        self.kernel = nnx.Param(jnp.asarray(sd["mixer.weight"].numpy()).T)
        self.bias = nnx.Param(jnp.asarray(sd["mixer.bias"].numpy()))

    def __call__(self, ids):
        E = self.embedding[...]
        x = E[ids]
        return (x + jnp.tanh(x @ self.kernel[...] + self.bias[...])) @ E.T

return Converted(state_dict)
''',
    }, {"linen_to_torch.tied": "pass", "linen_to_torch": "frameworks.not_loaded",  # one mistake, charged once
        "torch_to_nnx.params": "frameworks.wrong_class", "torch_to_nnx": "pass"}),
    Pitfall(CH, "returns_state_dict_and_state_snapshot", {
        "linen_to_torch": RIGHT_TORCH + "return model.state_dict()",
        "torch_to_nnx": nnx_fill().replace(
            "graphdef, state = nnx.split(nnx.eval_shape(lambda: NNXTiedLM(",
            "model = NNXTiedLM(").replace(
            ", rngs=nnx.Rngs(0))))\nnnx.replace_by_pure_dict(state, values)\nmodel = nnx.merge(graphdef, state)",
            ", rngs=nnx.Rngs(0))\nnnx.replace_by_pure_dict(nnx.state(model), values)  # fills a snapshot"),
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.not_torch_module"),
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.not_loaded"}),
    # Each mistake costs the points of the one promise it breaks (issue 14).
    Pitfall(CH, "mixer_not_loaded_and_float64_embedding", {
        "linen_to_torch": READ + NO_GRAD + COPY_EMBED + "return model",
        "torch_to_nnx": nnx_fill(tail="model.embed.embedding = nnx.Param(np.asarray(model.embed.embedding[...], np.float64))\n"),
    }, {"linen_to_torch.tied": "pass", "linen_to_torch": "frameworks.not_loaded",
        "torch_to_nnx.params": "frameworks.float64", "torch_to_nnx": "pass"}),
    Pitfall(CH, "own_torch_class_and_kernel_in_place", {
        "linen_to_torch": READ + OWN_TORCH_CLASS + "model = Converted()\n" + NO_GRAD + COPY_EMBED + COPY_MIXER + "return model",
        "torch_to_nnx": nnx_fill(tail="model.mixer.kernel[...] = model.mixer.kernel[...].T\n"),
    }, {"linen_to_torch.tied": "frameworks.wrong_class", "linen_to_torch": "pass",
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.kernel_not_transposed"}),
    Pitfall(CH, "extra_registered_tensor_and_bias_not_loaded", {
        "linen_to_torch": RIGHT_TORCH + "model.register_buffer('scale', torch.ones(1))\nreturn model",
        "torch_to_nnx": nnx_fill().replace('"bias": array("mixer.bias")', '"bias": jnp.zeros_like(array("mixer.bias"))'),
    }, {"linen_to_torch.tied": "frameworks.torch_keys", "linen_to_torch": "pass",
        "torch_to_nnx.params": "pass", "torch_to_nnx": "frameworks.not_loaded"}),
    # The tie kept by name but not in the gradient: a frozen torch embedding; an NNX
    # subclass whose head projects with a stopped copy of the matrix.
    Pitfall(CH, "frozen_embedding_and_stopped_head", {
        "linen_to_torch": RIGHT_TORCH + "model.embed.weight.requires_grad_(False)\nreturn model",
        "torch_to_nnx": nnx_fill().replace("NNXTiedLM(", "StoppedHead(").replace("def array", '''class StoppedHead(NNXTiedLM):
    def __call__(self, token_ids):
        x = self.embed(token_ids)
        return (x + jnp.tanh(self.mixer(x))) @ jax.lax.stop_gradient(self.embed.embedding[...]).T

def array''', 1),
    }, {"linen_to_torch.tied": "frameworks.tie_no_gradient", "linen_to_torch": "pass",
        "torch_to_nnx.params": "frameworks.tie_projection_missing", "torch_to_nnx": "pass"}),
    Pitfall(CH, "detached_head_subclass_and_stopped_lookup", {
        "linen_to_torch": READ.replace("model = TorchTiedLM", '''class DetachedHead(TorchTiedLM):
    def forward(self, ids):
        x = self.embed(ids)
        return (x + torch.tanh(self.mixer(x))) @ self.embed.weight.detach().T

model = DetachedHead''') + NO_GRAD + COPY_EMBED + COPY_MIXER + "return model",
        "torch_to_nnx": nnx_fill().replace("NNXTiedLM(", "StoppedLookup(").replace("def array", '''class StoppedLookup(NNXTiedLM):
    def __call__(self, token_ids):
        x = jax.lax.stop_gradient(self.embed(token_ids))
        return self.embed.attend(x + jnp.tanh(self.mixer(x)))

def array''', 1),
    }, {"linen_to_torch.tied": "frameworks.tie_projection_missing", "linen_to_torch": "pass",
        "torch_to_nnx.params": "frameworks.tie_lookup_missing", "torch_to_nnx": "pass"}),
    # The worked example's sizes written in: right on the worked example, a size mismatch on
    # every other shape, named as the sizes, not as a layout; through load_state_dict too.
    Pitfall(CH, "sizes_hard_coded", {
        "linen_to_torch": RIGHT_TORCH.replace("TorchTiedLM(*embedding.shape)", "TorchTiedLM(6, 4)") + "return model",
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.sizes_hard_coded"), **dict.fromkeys(NNX_ITEMS, "pass")}),
    Pitfall(CH, "sizes_hard_coded_state_dict", {
        "linen_to_torch": state_dict_load(extra=', "lm_head.weight": E').replace("TorchTiedLM(*embedding.shape)", "TorchTiedLM(6, 4)"),
    }, {**dict.fromkeys(TORCH_ITEMS, "frameworks.sizes_hard_coded"), **dict.fromkeys(NNX_ITEMS, "pass")}),
    # bfloat16 is named as the dtype it is on every item it reaches, never as float64 or
    # as values that do not match (the values it holds are the checkpoint's, rounded).
    Pitfall(CH, "bfloat16_models", {
        "linen_to_torch": RIGHT_TORCH.replace("TorchTiedLM(*embedding.shape)", "TorchTiedLM(*embedding.shape).bfloat16()")
        + "return model",
        "torch_to_nnx": nnx_fill(tail="model.embed.embedding = nnx.Param(model.embed.embedding[...].astype(jnp.bfloat16))\n"),
    }, {"linen_to_torch.tied": "common.wrong_dtype", "linen_to_torch": "pass",
        "torch_to_nnx.params": "common.wrong_dtype", "torch_to_nnx": "common.wrong_dtype"}),
    # torch_to_nnx alone wrong, linen_to_torch right: an attribute that replaces a submodule,
    # a matrix one row short, and a look at a model whose mixer was never filled.
    Pitfall(CH, "embed_replaced_by_param", {
        "torch_to_nnx": nnx_fill(tail='model.embed = nnx.Param(values["embed"]["embedding"])\n'),
    }, {**dict.fromkeys(TORCH_ITEMS, "pass"), "torch_to_nnx.params": "frameworks.nnx_paths"}),
    Pitfall(CH, "last_row_dropped", {"torch_to_nnx": nnx_fill(embedding='array("embed.weight")[:-1]')},
            {"torch_to_nnx.params": "pass", "torch_to_nnx": "common.wrong_param_shape"}),
    Pitfall(CH, "unfilled_model_called", {
        "torch_to_nnx": nnx_fill(tail="model(jnp.array([0]))  # a look at it\n").replace(
            "nnx.replace_by_pure_dict(state, values)", 'nnx.replace_by_pure_dict(state, {"embed": values["embed"]})'),
    }, dict.fromkeys(NNX_ITEMS, "frameworks.nnx_unfilled")),
    # The same logits, with the projection's path of the gradient turned around.
    Pitfall(CH, "projection_path_negated", {
        "linen_to_torch": READ.replace("model = TorchTiedLM", '''class Negated(TorchTiedLM):
    def forward(self, ids):
        x = self.embed(ids)
        return (x + torch.tanh(self.mixer(x))) @ (2 * self.embed.weight.detach() - self.embed.weight).T

model = Negated''') + NO_GRAD + COPY_EMBED + COPY_MIXER + "return model",
        "torch_to_nnx": nnx_fill().replace("NNXTiedLM(", "Negated(").replace("def array", '''class Negated(NNXTiedLM):
    def __call__(self, token_ids):
        x = self.embed(token_ids)
        E = self.embed.embedding[...]
        return (x + jnp.tanh(self.mixer(x))) @ (2 * jax.lax.stop_gradient(E) - E).T

def array''', 1),
    }, {"linen_to_torch.tied": "frameworks.tie_gradient_wrong", "linen_to_torch": "pass",
        "torch_to_nnx.params": "frameworks.tie_gradient_wrong", "torch_to_nnx": "pass"}),
]

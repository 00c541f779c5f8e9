"""Chapter 03 (PyTorch): each pitfall the chapter teaches, as a wrong solution.

Solution regions, by the function they sit in: ``tie_weights``, ``TinyLM.__init__``,
``TinyLM.forward``, ``tied_logits``.
"""
from . import Pitfall

CH = "03_pytorch"
CHECK = '''if lm_head.weight.shape != embedding.weight.shape:
    raise ValueError(f"cannot tie {tuple(lm_head.weight.shape)} with {tuple(embedding.weight.shape)}")
'''
MODULES = '''self.embed = nn.Embedding(vocab_size, d_model)
self.pos = nn.Embedding(MAX_LEN, d_model)
self.blocks = nn.ModuleList(Block(d_model) for _ in range(n_layers))
self.ln_f = nn.LayerNorm(d_model)
'''
HEAD = "self.lm_head = nn.Linear(d_model, vocab_size, bias=False)\n"
TINY = ("TinyLM.tied", "TinyLM.forward", "TinyLM.grad")


def tiny_forward(first_line="x = self.embed(input_ids)", last_line="return self.lm_head(self.ln_f(x))"):
    return f"{first_line}\nfor block in self.blocks:\n    x = block(x)\n{last_line}"


# The three exercises are independent, so one wrong notebook can carry one mistake in
# each of them (``tie_weights``, ``TinyLM`` and ``tied_logits``): fewer notebooks to grade, every key still checked.
# A broken tie in TinyLM costs TinyLM.tied only: forward and the gradient are judged with
# the head re-tied (one mistake, its own points once).
PITFALLS = [
    # Frozen parameters: the grader's backward pass would raise "element 0 of tensors does not
    # require grad", which read as the student's own RuntimeError; the cause is named instead.
    Pitfall(CH, "frozen_params", {
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = self.embed.weight\n"
                           "for p in self.parameters():\n    p.requires_grad_(False)",
    }, {"TinyLM.grad": "pytorch.frozen_params", "TinyLM.tied": "pass", "TinyLM.forward": "pass"}),
    # The tie made in forward: untied when built. Named as that, not as "write the line you have".
    Pitfall(CH, "tie_in_forward", {
        "TinyLM.__init__": MODULES + HEAD,
        "TinyLM.forward": "self.lm_head.weight = self.embed.weight\n" + tiny_forward(),
    }, {"TinyLM.tied": "pytorch.tie_in_forward", "TinyLM.forward": "pass", "TinyLM.grad": "pass"}),
    Pitfall(CH, "clone", {
        "tie_weights": CHECK + "lm_head.weight = nn.Parameter(embedding.weight.detach().clone())",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = nn.Parameter(self.embed.weight.clone())",
        "tied_logits": "return h @ E.T + b",
    }, {"tie_weights": "pytorch.copied", "tie_weights.ValueError": "pass", "TinyLM.tied": "pytorch.copied",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass", "tied_logits": "pytorch.none_bias"}),
    Pitfall(CH, "deepcopy", {
        "tie_weights": CHECK + "lm_head.weight = copy.deepcopy(embedding.weight)",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = copy.deepcopy(self.embed.weight)",
        "tied_logits": "return h @ E.T",
    }, {"tie_weights": "pytorch.copied", "TinyLM.tied": "pytorch.copied", "TinyLM.grad": "pass",
        "tied_logits": "pytorch.bias_ignored"}),
    Pitfall(CH, "transposed", {
        "tie_weights": "lm_head.weight = nn.Parameter(embedding.weight.T)",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = nn.Parameter(self.embed.weight.T)",
        "tied_logits": "logits = h @ E\nreturn logits if b is None else logits + b",
    }, {"tie_weights": "pytorch.transposed", "tie_weights.ValueError": "pytorch.no_shape_check",
        "TinyLM.tied": "pytorch.transposed", "TinyLM.forward": "pass", "TinyLM.grad": "pass",
        "tied_logits": "pytorch.missing_transpose"}),
    Pitfall(CH, "data_alias", {
        "tie_weights": CHECK + "lm_head.weight.data = embedding.weight.data",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight.data = self.embed.weight.data",
        "tied_logits": "logits = torch.mm(h, E.T)\nreturn logits if b is None else logits + b",
    }, {"tie_weights": "pytorch.data_alias", "tie_weights.ValueError": "pass", "TinyLM.tied": "pytorch.data_alias",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass", "tied_logits": "pytorch.mm_2d"}),
    Pitfall(CH, "untied", {
        "tie_weights": "pass",
        "TinyLM.__init__": MODULES + HEAD,
        "tied_logits": "logits = h.reshape(-1, E.shape[1]) @ E.T\nreturn logits if b is None else logits + b",
    }, {"tie_weights": "pytorch.not_tied", "tie_weights.ValueError": "pytorch.no_shape_check",
        "TinyLM.tied": "pytorch.not_tied", "TinyLM.forward": "pass", "TinyLM.grad": "pass",
        "tied_logits": "pytorch.leading_shape"}),
    Pitfall(CH, "copied_values", {
        "tie_weights": CHECK + "with torch.no_grad():\n    lm_head.weight.copy_(embedding.weight)",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = self.embed.weight\n" + HEAD,  # tied, then replaced
    }, {"tie_weights": "pytorch.copied", "TinyLM.tied": "pytorch.not_tied", "TinyLM.grad": "pass",
        "tied_logits": "pass"}),
    Pitfall(CH, "wrong_direction", {
        "tie_weights": CHECK + "embedding.weight = lm_head.weight",
        "TinyLM.__init__": MODULES + "self.lm_head = nn.Linear(d_model, vocab_size)\nself.lm_head.weight = self.embed.weight",
    }, {"tie_weights": "pytorch.wrong_direction", "TinyLM.tied": "pytorch.head_bias",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass"}),
    Pitfall(CH, "dropped_bias", {
        "tie_weights": CHECK + "lm_head.weight = embedding.weight\nlm_head.bias = None",
        "TinyLM.__init__": MODULES.replace("self.embed", "self.wte") + HEAD + "self.lm_head.weight = self.wte.weight",
        "TinyLM.forward": tiny_forward("x = self.wte(input_ids)"),
    }, {"tie_weights": "pytorch.bias_dropped", **dict.fromkeys(TINY, "pytorch.module_names")}),
    Pitfall(CH, "unchecked", {
        "tie_weights": "lm_head.weight = embedding.weight",
        "TinyLM.forward": tiny_forward(last_line="return self.lm_head(x)"),
    }, {"tie_weights": "pass", "tie_weights.ValueError": "pytorch.no_shape_check", "TinyLM.tied": "pass",
        "TinyLM.forward": "pytorch.ln_f_unused", "TinyLM.grad": "pass"}),
    Pitfall(CH, "assert_shape", {
        "tie_weights": "assert lm_head.weight.shape == embedding.weight.shape\nlm_head.weight = embedding.weight",
        "TinyLM.forward": tiny_forward(last_line="return self.lm_head(self.ln_f(x)) / 2"),
    }, {"tie_weights": "pass", "tie_weights.ValueError": "pytorch.wrong_exception",
        "TinyLM.forward": "pytorch.logits_not_tied"}),
    Pitfall(CH, "tied_before_check", {
        "tie_weights": "lm_head.weight = embedding.weight\n" + CHECK.replace("lm_head.weight.shape", "(lm_head.out_features, lm_head.in_features)"),
        "TinyLM.__init__": MODULES + "self.tok = nn.Embedding(vocab_size, d_model)\n" + HEAD + "self.lm_head.weight = self.embed.weight",
        "TinyLM.forward": tiny_forward("x = self.tok(input_ids)"),
    }, {"tie_weights": "pass", "tie_weights.ValueError": "pytorch.tied_before_check",
        "TinyLM.tied": "pass", "TinyLM.forward": "pass", "TinyLM.grad": "pytorch.lookup_not_embed"}),
    Pitfall(CH, "empty_message", {
        "tie_weights": CHECK.replace('f"cannot tie {tuple(lm_head.weight.shape)} with {tuple(embedding.weight.shape)}"', "")
           + "lm_head.weight = embedding.weight",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = self.embed.weight\nself.W = self.embed.weight  # a third name",
    }, {"tie_weights": "pass", "tie_weights.ValueError": "pytorch.empty_message", "TinyLM.tied": "pytorch.param_count",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass"}),
    Pitfall(CH, "check_against_transpose", {
        "tie_weights": CHECK.replace("embedding.weight.shape:", "embedding.weight.T.shape:") + "lm_head.weight = embedding.weight",
        # "keeps the head in sync" by giving it a fresh copy at every call: tied only until the first forward
        "TinyLM.forward": tiny_forward(last_line="logits = self.lm_head(self.ln_f(x))\n"
                                  "self.lm_head.weight = nn.Parameter(self.embed.weight.detach().clone())\nreturn logits"),
    }, {"tie_weights": "pytorch.refused_matching", "tie_weights.ValueError": "pytorch.no_shape_check",
        "TinyLM.tied": "pytorch.untied_by_step", "TinyLM.forward": "pass", "TinyLM.grad": "pass"}),
    # Issue 14: promises of the text that no check enforced, and a mistake that was misnamed.
    Pitfall(CH, "new_parameter_and_detached", {
        "tie_weights": CHECK + "lm_head.weight = nn.Parameter(embedding.weight)",
        "TinyLM.__init__": MODULES + HEAD + "self.lm_head.weight = nn.Parameter(self.embed.weight)",
        "tied_logits": "logits = h @ E.T\nreturn (logits if b is None else logits + b).detach()",
    }, {"tie_weights": "pytorch.new_parameter", "tie_weights.ValueError": "pass",
        "TinyLM.tied": "pytorch.new_parameter", "TinyLM.forward": "pass", "TinyLM.grad": "pass",
        "tied_logits": "pytorch.logits_detached"}),
    Pitfall(CH, "message_without_shapes_and_plain_list", {
        "tie_weights": CHECK.replace('f"cannot tie {tuple(lm_head.weight.shape)} with {tuple(embedding.weight.shape)}"',
                         '"the shapes do not match"') + "lm_head.weight = embedding.weight",
        "TinyLM.__init__": MODULES.replace("nn.ModuleList(Block(d_model) for _ in range(n_layers))",
                           "[Block(d_model) for _ in range(n_layers)]") + HEAD + "self.lm_head.weight = self.embed.weight",
        "tied_logits": "logits = h.double() @ E.double().T\nreturn logits if b is None else logits + b",
    }, {"tie_weights": "pass", "tie_weights.ValueError": "pytorch.message_without_shapes",
        "TinyLM.tied": "pytorch.blocks_not_registered", "TinyLM.forward": "pass", "TinyLM.grad": "pass",
        "tied_logits": "common.wrong_dtype"}),
    Pitfall(CH, "one_shape_named_and_layers_ignored", {
        "tie_weights": CHECK.replace('f"cannot tie {tuple(lm_head.weight.shape)} with {tuple(embedding.weight.shape)}"',
                         'f"lm_head.weight has shape {tuple(lm_head.weight.shape)}"') + "lm_head.weight = embedding.weight",
        "TinyLM.__init__": MODULES.replace("range(n_layers)", "range(2)") + HEAD + "self.lm_head.weight = self.embed.weight",
        "tied_logits": "logits = torch.from_numpy(h.detach().numpy() @ E.detach().numpy().T)\n"
           "return logits if b is None else logits + b",
    }, {"tie_weights.ValueError": "pytorch.message_without_shapes", "TinyLM.tied": "pytorch.block_count",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass", "tied_logits": "pytorch.logits_detached"}),
    Pitfall(CH, "bias_replaced_and_first_block_only", {
        "tie_weights": CHECK + "lm_head.weight = embedding.weight\n"
                   "lm_head.bias = nn.Parameter(torch.zeros(lm_head.out_features))",
        "TinyLM.forward": tiny_forward().replace("for block in self.blocks:\n    x = block(x)", "x = self.blocks[0](x)"),
        "tied_logits": "return torch.from_numpy(h.numpy() @ E.numpy().T + (0 if b is None else b.numpy()))",
    }, {"tie_weights": "pytorch.bias_changed", "tie_weights.ValueError": "pass", "TinyLM.tied": "pass",
        "TinyLM.forward": "pytorch.blocks_unused", "TinyLM.grad": "pass", "tied_logits": "pytorch.numpy_round_trip"}),
    Pitfall(CH, "embedding_reinitialised_and_short_positions", {
        "tie_weights": CHECK + "nn.init.normal_(embedding.weight)\nlm_head.weight = embedding.weight",
        "TinyLM.__init__": MODULES.replace("nn.Embedding(MAX_LEN, d_model)", "nn.Embedding(16, d_model)") + HEAD
           + "self.lm_head.weight = self.embed.weight",
        "tied_logits": "logits = h @ E.T\nreturn (logits if b is None else logits + b).detach().numpy()",
    }, {"tie_weights": "pytorch.embedding_changed", "TinyLM.tied": "pass",
        "TinyLM.forward": "pytorch.index_out_of_range", "TinyLM.grad": "pass", "tied_logits": "pytorch.not_a_tensor"}),
    Pitfall(CH, "identity_ln_f_and_bias_added_to_biasless_head", {
        "tie_weights": CHECK + "lm_head.weight = embedding.weight\n"
                   "if lm_head.bias is None:\n    lm_head.bias = nn.Parameter(torch.zeros(lm_head.out_features))",
        "TinyLM.__init__": MODULES.replace("nn.LayerNorm(d_model)", "nn.Identity()") + HEAD + "self.lm_head.weight = self.embed.weight",
    }, {"tie_weights": "pytorch.bias_changed", "TinyLM.tied": "pytorch.module_kind",
        "TinyLM.forward": "pass", "TinyLM.grad": "pass", "tied_logits": "pass"}),
    Pitfall(CH, "projection_detached", {
        "TinyLM.forward": tiny_forward(last_line="return self.ln_f(x) @ self.embed.weight.detach().T"),
    }, {"tie_weights": "pass", "TinyLM.tied": "pass", "TinyLM.forward": "pass",
        "TinyLM.grad": "pytorch.projection_detached"}),
    Pitfall(CH, "float64_logits_and_E_detached", {
        "TinyLM.forward": tiny_forward(last_line="return self.lm_head(self.ln_f(x)).double()"),
        "tied_logits": "logits = h @ E.detach().T\nreturn logits if b is None else logits + b",
    }, {"TinyLM.tied": "pass", "TinyLM.forward": "common.wrong_dtype", "TinyLM.grad": "pass",
        "tied_logits": "pytorch.logits_detached"}),
    # A bias added as a column fails to broadcast: named as such, not as a missing transpose.
    Pitfall(CH, "bias_as_a_column", {"tied_logits": "out = h @ E.T\nreturn out if b is None else out + b.view(-1, 1)"},
            {"tied_logits": "pytorch.broadcast", "TinyLM.grad": "pass"}),
    # A dtype slip is a dtype finding on every item it reaches, pointed at the line that
    # made the tensor (not at the given Block's line where two dtypes meet).
    Pitfall(CH, "float64_position_table_and_bfloat16_logits", {
        "TinyLM.__init__": MODULES.replace("nn.Embedding(MAX_LEN, d_model)", "nn.Embedding(MAX_LEN, d_model, dtype=torch.float64)")
        + HEAD + "self.lm_head.weight = self.embed.weight",
        "tied_logits": "logits = h.bfloat16() @ E.bfloat16().T\nreturn logits if b is None else logits + b",
    }, {**dict.fromkeys(TINY, "common.dtype_slip"), "tied_logits": "common.wrong_dtype", "tie_weights": "pass"}),
    # Values right and E still on the graph, but the product's gradient never reaches it.
    Pitfall("03_pytorch", "matrix_detached_kept_on_graph", {"tied_logits": '''
logits = h @ E.detach().T + 0 * E.sum()
return logits if b is None else logits + b
'''}, {"tied_logits": "pytorch.logits_grad"}),
]

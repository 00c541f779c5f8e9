"""Chapter 05 (masked LM in PyTorch): each pitfall the chapter teaches, as a wrong solution.

Solution regions, by the function they sit in: ``layer_norm``, ``gelu_tanh``,
``multi_head_attention``, ``mlm_forward_tied``.
``mlm_forward_tied`` is judged on its own (with the reference helpers), so a wrong helper
costs only its own item: the forward passes in those pitfalls.
"""
from . import Pitfall

CH = "05_mlm"

# multi_head_attention with one line changed; {split}, {scores}, {softmax}, {merge} vary.
MHA = '''
n, t, d = x.shape
d_head = d // num_heads
q, k, v = x @ w_q, x @ w_k, x @ w_v
{split}
scores = q @ k.transpose(-2, -1){scale}
{mask}weights = torch.softmax(scores, dim={axis})
out = weights @ v
{merge}
return out @ w_o
'''
SPLIT = "q, k, v = (h.reshape(n, t, num_heads, d_head).transpose(1, 2) for h in (q, k, v))"
MERGE = "out = out.transpose(1, 2).reshape(n, t, d)"


def mha(split=SPLIT, scale=" / math.sqrt(d_head)", mask="", axis=-1, merge=MERGE):
    return MHA.format(split=split, scale=scale, mask=mask, axis=axis, merge=merge)


FORWARD = '''
x = w_emb[input_ids] + pos_embed
for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
{blocks}
logits_all = {head}
return {out}
'''
PRE_LN = '''    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_mlp1) @ w_mlp2'''


EXACT_GELU = "return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))\n"
LOOP_OVER_HEADS = '''
n, t, d = x.shape
d_head = d // num_heads
q, k, v = x @ w_q, x @ w_k, x @ w_v
outs = []
for h in range(num_heads):
    cols = slice(h * d_head, (h + 1) * d_head)
    scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_head)
    outs.append(torch.softmax(scores, dim=-1) @ v[..., cols])
return torch.cat(outs, dim=-1) @ w_o
'''

# layer_norm whose default eps is {default} and which adds {eps}.
LN_WITH_EPS = """
def ln(x, eps={default}):
    mean = x.mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim=-1, keepdim=True) + {eps})
return ln(x) if eps == 1e-5 else ln(x, eps)
"""


def forward(blocks=PRE_LN, head="x @ w_emb.T", out="logits_all[mask_indicator > 0.5]", before=""):
    return before + FORWARD.format(blocks=blocks, head=head, out=out)


def attention(key):
    return {"multi_head_attention": key, "mlm_forward_tied": "pass"}

PITFALLS = [
    Pitfall(CH, "unbiased_variance", {"layer_norm": '''
mean = x.mean(dim=-1, keepdim=True)
return (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps)
'''}, {"layer_norm": "mlm.unbiased_variance", "mlm_forward_tied": "pass", "gelu_tanh": "pass"}),
    Pitfall(CH, "eps_outside_sqrt", {"layer_norm": '''
mean = x.mean(dim=-1, keepdim=True)
return (x - mean) / (x.std(dim=-1, unbiased=False, keepdim=True) + eps)
'''}, {"layer_norm": "mlm.eps_outside", "mlm_forward_tied": "pass"}),
    Pitfall(CH, "forbidden_layer_norm", {"layer_norm": '''
return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps)
'''}, {"layer_norm": "mlm.forbidden_layer_norm", "mlm_forward_tied": "pass", "multi_head_attention": "pass"}),
    Pitfall(CH, "exact_gelu", {"gelu_tanh": EXACT_GELU},
            {"gelu_tanh": "mlm.exact_gelu", "mlm_forward_tied": "pass", "layer_norm": "pass"}),
    Pitfall(CH, "forbidden_gelu", {"gelu_tanh": '''
return torch.nn.functional.gelu(x, approximate="tanh")
'''}, {"gelu_tanh": "mlm.forbidden_gelu", "mlm_forward_tied": "pass"}),
    Pitfall(CH, "forbidden_gelu_bound_name", {"gelu_tanh": '''
globals().setdefault("fast_gelu", torch.nn.functional.gelu)  # bound once, in the notebook
return fast_gelu(x, approximate="tanh")
'''}, {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "causal_mask", {"multi_head_attention": mha(mask="scores = scores.masked_fill(torch.ones(t, t).triu(1).bool(), float('-inf'))\n")},
            attention("mlm.causal_mask")),
    Pitfall(CH, "missing_scale", {"multi_head_attention": mha(scale="")}, attention("mlm.missing_scale")),
    Pitfall(CH, "softmax_over_queries", {"multi_head_attention": mha(axis=-2)}, attention("mlm.softmax_axis")),
    Pitfall(CH, "heads_without_transpose", {"multi_head_attention": mha(
        split="q, k, v = (h.reshape(n, num_heads, t, d_head) for h in (q, k, v))",
        merge="out = out.reshape(n, t, d)")}, attention("mlm.head_split")),
    Pitfall(CH, "heads_strided", {"multi_head_attention": mha(
        split="q, k, v = (h.reshape(n, t, d_head, num_heads).permute(0, 3, 1, 2) for h in (q, k, v))")},
            attention("mlm.head_split")),
    Pitfall(CH, "forbidden_sdpa", {"multi_head_attention": '''
n, t, d = x.shape
split = lambda h: h.reshape(n, t, num_heads, d // num_heads).transpose(1, 2)
out = torch.nn.functional.scaled_dot_product_attention(split(x @ w_q), split(x @ w_k), split(x @ w_v))
return out.transpose(1, 2).reshape(n, t, d) @ w_o
'''}, attention("mlm.forbidden_attention")),
    Pitfall(CH, "forbidden_multihead_module", {"multi_head_attention": '''
d = x.shape[-1]
attn = torch.nn.MultiheadAttention(d, num_heads, bias=False, batch_first=True)
with torch.no_grad():
    attn.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))
    attn.out_proj.weight.copy_(w_o.T)
return attn(x, x, x, need_weights=False)[0]
'''}, attention("mlm.forbidden_attention")),
    Pitfall(CH, "post_ln", {"mlm_forward_tied": forward(blocks='''    x = layer_norm(x + multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads))
    x = layer_norm(x + gelu_tanh(x @ w_mlp1) @ w_mlp2)''')},
            {"mlm_forward_tied": "mlm.post_ln", "multi_head_attention": "pass"}),
    Pitfall(CH, "separate_head", {"mlm_forward_tied": forward(
        before="head = torch.nn.Linear(w_emb.shape[1], w_emb.shape[0], bias=False)\n",
        head="head(x)")}, {"mlm_forward_tied": "mlm.separate_head"}),
    Pitfall(CH, "not_gathered", {"mlm_forward_tied": forward(out="logits_all")}, {"mlm_forward_tied": "mlm.not_gathered"}),
    # ---- the tie's gradient: right logits, one path of w_emb's gradient cut
    Pitfall(CH, "head_detached", {"mlm_forward_tied": forward(head="x @ w_emb.detach().T")},
            {"mlm_forward_tied": "mlm.tie_head_detached"}),
    Pitfall(CH, "lookup_by_data", {"mlm_forward_tied": forward(before="table = w_emb.data\n").replace(
        "w_emb[input_ids]", "table[input_ids]")}, {"mlm_forward_tied": "mlm.tie_lookup_detached"}),
    Pitfall(CH, "tie_through_numpy", {"mlm_forward_tied": forward(head="x @ torch.from_numpy(w_emb.numpy()).T")},
            {"mlm_forward_tied": "mlm.tie_no_gradient"}),

    # ---- the attention's gradient: right output, the scores' path to x, w_q, w_k cut
    Pitfall(CH, "attention_softmax_in_numpy", {"multi_head_attention": mha().replace(
        "weights = torch.softmax(scores, dim=-1)",
        "import numpy as np\ns = scores.detach().numpy()\ne = np.exp(s - s.max(-1, keepdims=True))\n"
        "weights = torch.from_numpy(e / e.sum(-1, keepdims=True))")},
            attention("mlm.attention_gradient_cut")),
    Pitfall(CH, "attention_scipy_softmax", {"multi_head_attention": mha().replace(
        "weights = torch.softmax(scores, dim=-1)",
        "from scipy.special import softmax\nweights = torch.from_numpy(softmax(scores.numpy(), axis=-1))")},
            attention("mlm.attention_numpy")),

    # ---- a dtype slip: float64 or bfloat16 where every input is float32, before the values
    Pitfall(CH, "attention_in_float64", {"multi_head_attention": "x, w_q, w_k, w_v, w_o = (t.double() for t in "
                                         "(x, w_q, w_k, w_v, w_o))\n" + mha()},
            {"multi_head_attention": "common.wrong_dtype", "mlm_forward_tied": "pass"}),
    Pitfall(CH, "logits_in_bfloat16", {"mlm_forward_tied": forward(head="x.bfloat16() @ w_emb.bfloat16().T")},
            {"mlm_forward_tied": "common.wrong_dtype"}),

    # ---- eps: name the eps used, not "eps added to the standard deviation"
    Pitfall(CH, "bert_eps_default", {"layer_norm": LN_WITH_EPS.format(default="1e-12", eps="eps")},
            {"layer_norm": "mlm.eps_value", "mlm_forward_tied": "pass"}),
    Pitfall(CH, "eps_argument_ignored", {"layer_norm": LN_WITH_EPS.format(default="1e-5", eps="1e-5")},
            {"layer_norm": "mlm.eps_value"}),
    Pitfall(CH, "no_eps", {"layer_norm": LN_WITH_EPS.format(default="1e-5", eps="0.0")}, {"layer_norm": "mlm.eps_value"}),
    Pitfall(CH, "forward_with_bert_eps",
            {"mlm_forward_tied": forward(blocks=PRE_LN.replace("layer_norm(x)", "layer_norm(x, eps=1e-12)"))},
            {"mlm_forward_tied": "mlm.forward_eps", "layer_norm": "pass"}),
    # ---- forbidden built-ins under other names: found in the source, with the line
    Pitfall(CH, "aten_layer_norm", {"layer_norm": "return torch.ops.aten.layer_norm(x, [x.shape[-1]], None, None, eps)\n"},
            {"layer_norm": "mlm.forbidden_layer_norm"}),
    Pitfall(CH, "aten_gelu", {"gelu_tanh": 'return torch.ops.aten.gelu(x, approximate="tanh")\n'},
            {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "getattr_gelu", {"gelu_tanh": 'return getattr(torch.ops.aten, "gelu")(x, approximate="tanh")\n'},
            {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "imported_gelu_alias",
            {"gelu_tanh": 'from torch.nn.functional import gelu as g\nreturn g(x, approximate="tanh")\n'},
            {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "gelu_private_name", {"gelu_tanh": 'return torch._C._nn.gelu(x, approximate="tanh")\n'},
            {"gelu_tanh": "mlm.forbidden_gelu"}),
    # No source shows these: the operations the call dispatched do.
    Pitfall(CH, "gelu_by_built_string", {"gelu_tanh": 'return getattr(torch.ops.aten, "ge" + "lu")(x, approximate="tanh")\n'},
            {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "layer_norm_by_built_string", {"layer_norm": '''
op = getattr(torch.ops.aten, "native_" + "layer_norm")
return op(x, [x.shape[-1]], None, None, eps)[0]
'''}, {"layer_norm": "mlm.forbidden_layer_norm"}),
    # ---- loops over heads or positions
    Pitfall(CH, "heads_in_a_comprehension", {"multi_head_attention": mha(
        split="q, k, v = (torch.stack([h[..., i * d_head:(i + 1) * d_head] for i in range(num_heads)], 1) "
              "for h in (q, k, v))")}, {"multi_head_attention": "mlm.python_loop"}),
    Pitfall(CH, "loop_over_positions_in_layer_norm", {"layer_norm": '''
rows = [(r - r.mean()) / torch.sqrt(((r - r.mean()) ** 2).mean() + eps) for r in x.reshape(-1, x.shape[-1])]
return torch.stack(rows).reshape(x.shape)
'''}, {"layer_norm": "mlm.python_loop"}),
    Pitfall(CH, "gather_loop_over_positions", {"mlm_forward_tied": forward(
        out="torch.stack([logits_all[i, j] for i in range(input_ids.shape[0]) "
            "for j in range(input_ids.shape[1]) if mask_indicator[i, j] > 0.5])")},
            {"mlm_forward_tied": "mlm.python_loop_forward"}),
    # map and filter are loops too: the masked rows one by one (issue 27)
    Pitfall(CH, "gather_by_map_and_filter", {"mlm_forward_tied": forward(head='''x @ w_emb.T
flat, keep = logits_all.reshape(-1, logits_all.shape[-1]), (mask_indicator > 0.5).flatten()''',
        out="torch.stack(list(map(flat.__getitem__, list(filter(keep.__getitem__, "
                                 "range(len(keep)))))))")},
            {"mlm_forward_tied": "mlm.python_loop_forward"}),
    # The loop over the blocks is the forward pass's one loop: by index, or in a nested helper
    # (each next to a mistake elsewhere, so that the notebook is still a wrong one).
    Pitfall(CH, "blocks_by_index+loop_over_heads", {"multi_head_attention": LOOP_OVER_HEADS, "mlm_forward_tied": '''
x = w_emb[input_ids] + pos_embed
num_blocks = blocks_weights.shape[0]
for i in range(num_blocks):
    w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = blocks_weights[i]
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_mlp1) @ w_mlp2
return (x @ w_emb.T)[mask_indicator > 0.5]
'''}, {"mlm_forward_tied": "pass", "multi_head_attention": "mlm.python_loop"}),
    Pitfall(CH, "blocks_in_a_nested_helper+exact_gelu", {"gelu_tanh": EXACT_GELU, "mlm_forward_tied": '''
def encoder(h, layers):
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in layers:
        h = h + multi_head_attention(layer_norm(h), w_q, w_k, w_v, w_o, num_heads)
        h = h + gelu_tanh(layer_norm(h) @ w_mlp1) @ w_mlp2
    return h
x = encoder(w_emb[input_ids] + pos_embed, blocks_weights)
return (x @ w_emb.T)[mask_indicator > 0.5]
'''}, {"mlm_forward_tied": "pass", "gelu_tanh": "mlm.exact_gelu"}),
    # ---- one tensor, as the text says
    Pitfall(CH, "forward_returns_a_tuple", {"mlm_forward_tied": forward(out="logits_all[mask_indicator > 0.5], logits_all")},
            {"mlm_forward_tied": "mlm.not_a_tensor"}),
    Pitfall(CH, "gelu_returns_numpy", {"gelu_tanh": '''
import numpy as np
u = x.numpy()
return 0.5 * u * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))
'''}, {"gelu_tanh": "mlm.not_a_tensor"}),
    # The masked rows gathered by a loop no source scan reads (it runs in exec): its cost
    # grows with the masked positions, and that alone names it.
    Pitfall(CH, "masked_rows_gathered_by_exec", {"mlm_forward_tied": '''
x = w_emb[input_ids] + pos_embed
for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + gelu_tanh(layer_norm(x) @ w_1) @ w_2
flat, keep, rows = (x @ w_emb.T).flatten(0, 1), (mask_indicator > 0.5).flatten(), []
exec("for i in range(len(keep)):\\n    if keep[i]:\\n        rows.append(flat[i])", {"flat": flat, "keep": keep, "rows": rows})
return torch.stack(rows) if rows else flat[:0]
'''}, {"mlm_forward_tied": "mlm.cost_grows"}),
    # The same logits, with the head's path of the gradient turned around.
    Pitfall(CH, "head_path_negated", {"mlm_forward_tied": forward(head="x @ (2 * w_emb.detach() - w_emb).T")},
            {"mlm_forward_tied": "mlm.tie_gradient_wrong"}),
]

"""Chapter 05 (masked LM in PyTorch): each pitfall the chapter teaches, as a wrong solution.

Regions of the solution: 0 layer_norm, 1 gelu_tanh, 2 multi_head_attention, 3 mlm_forward_tied.
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


def forward(blocks=PRE_LN, head="x @ w_emb.T", out="logits_all[mask_indicator > 0.5]", before=""):
    return before + FORWARD.format(blocks=blocks, head=head, out=out)


BOTH = ("multi_head_attention", "mlm_forward_tied")

PITFALLS = [
    Pitfall(CH, "unbiased_variance", {0: '''
mean = x.mean(dim=-1, keepdim=True)
return (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps)
'''}, {"layer_norm": "mlm.unbiased_variance", "mlm_forward_tied": "mlm.unbiased_variance", "gelu_tanh": "pass"}),
    Pitfall(CH, "eps_outside_sqrt", {0: '''
mean = x.mean(dim=-1, keepdim=True)
return (x - mean) / (x.std(dim=-1, unbiased=False, keepdim=True) + eps)
'''}, {"layer_norm": "mlm.eps_outside", "mlm_forward_tied": {"mlm.eps_outside", "pass"}}),
    Pitfall(CH, "forbidden_layer_norm", {0: '''
return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps)
'''}, {"layer_norm": "mlm.forbidden_layer_norm", "mlm_forward_tied": "mlm.forbidden_layer_norm",
       "multi_head_attention": "pass"}),
    Pitfall(CH, "exact_gelu", {1: '''
return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
'''}, {"gelu_tanh": "mlm.exact_gelu", "mlm_forward_tied": "mlm.exact_gelu", "layer_norm": "pass"}),
    Pitfall(CH, "forbidden_gelu", {1: '''
return torch.nn.functional.gelu(x, approximate="tanh")
'''}, {"gelu_tanh": "mlm.forbidden_gelu", "mlm_forward_tied": "mlm.forbidden_gelu"}),
    Pitfall(CH, "forbidden_gelu_bound_name", {1: '''
globals().setdefault("fast_gelu", torch.nn.functional.gelu)  # bound once, in the notebook
return fast_gelu(x, approximate="tanh")
'''}, {"gelu_tanh": "mlm.forbidden_gelu"}),
    Pitfall(CH, "causal_mask", {2: mha(mask="scores = scores.masked_fill(torch.ones(t, t).triu(1).bool(), float('-inf'))\n")},
            dict.fromkeys(BOTH, "mlm.causal_mask")),
    Pitfall(CH, "missing_scale", {2: mha(scale="")}, dict.fromkeys(BOTH, "mlm.missing_scale")),
    Pitfall(CH, "softmax_over_queries", {2: mha(axis=-2)}, dict.fromkeys(BOTH, "mlm.softmax_axis")),
    Pitfall(CH, "heads_without_transpose", {2: mha(
        split="q, k, v = (h.reshape(n, num_heads, t, d_head) for h in (q, k, v))",
        merge="out = out.reshape(n, t, d)")}, dict.fromkeys(BOTH, "mlm.head_split")),
    Pitfall(CH, "heads_strided", {2: mha(
        split="q, k, v = (h.reshape(n, t, d_head, num_heads).permute(0, 3, 1, 2) for h in (q, k, v))")},
            dict.fromkeys(BOTH, "mlm.head_split")),
    Pitfall(CH, "forbidden_sdpa", {2: '''
n, t, d = x.shape
split = lambda h: h.reshape(n, t, num_heads, d // num_heads).transpose(1, 2)
out = torch.nn.functional.scaled_dot_product_attention(split(x @ w_q), split(x @ w_k), split(x @ w_v))
return out.transpose(1, 2).reshape(n, t, d) @ w_o
'''}, dict.fromkeys(BOTH, "mlm.forbidden_attention")),
    Pitfall(CH, "forbidden_multihead_module", {2: '''
d = x.shape[-1]
attn = torch.nn.MultiheadAttention(d, num_heads, bias=False, batch_first=True)
with torch.no_grad():
    attn.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))
    attn.out_proj.weight.copy_(w_o.T)
return attn(x, x, x, need_weights=False)[0]
'''}, dict.fromkeys(BOTH, "mlm.forbidden_attention")),
    Pitfall(CH, "post_ln", {3: forward(blocks='''    x = layer_norm(x + multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads))
    x = layer_norm(x + gelu_tanh(x @ w_mlp1) @ w_mlp2)''')},
            {"mlm_forward_tied": "mlm.post_ln", "multi_head_attention": "pass"}),
    Pitfall(CH, "separate_head", {3: forward(
        before="head = torch.nn.Linear(w_emb.shape[1], w_emb.shape[0], bias=False)\n",
        head="head(x)")}, {"mlm_forward_tied": "mlm.separate_head"}),
    Pitfall(CH, "not_gathered", {3: forward(out="logits_all")}, {"mlm_forward_tied": "mlm.not_gathered"}),
]

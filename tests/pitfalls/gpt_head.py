"""Chapter 04 (the LM head in NumPy): each pitfall the chapter teaches, as a wrong solution.

The exercises are independent functions, so one notebook carries one mistake in each of
several of them (the loss, the forward, the gradients, the sampler...); every item names its own mistake.
"""
from . import Pitfall

CH = "04_gpt_head"

# ---- cross_entropy_from_logits
CE_UNSHIFTED = '''
z = np.asarray(logits, dtype=np.float64)
p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
return float(-np.mean(np.log(p[np.arange(len(targets)), targets])))
'''
CE_LOG_OF_SOFTMAX = '''
z = np.asarray(logits, dtype=np.float64)
z = z - z.max(axis=-1, keepdims=True)
p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
return float(-np.mean(np.log(p[np.arange(len(targets)), targets])))
'''
CE_SUMMED = '''
z = np.asarray(logits, dtype=np.float64)
m = z.max(axis=-1, keepdims=True)
lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1))
return float(np.sum(lse - z[np.arange(len(targets)), targets]))
'''
CE_PER_TOKEN = '''
z = np.asarray(logits, dtype=np.float64)
m = z.max(axis=-1, keepdims=True)
lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1))
return lse - z[np.arange(len(targets)), targets]
'''

# ---- tied_head_forward
LN = "x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)"
FWD_SOFTMAX = f'''
x = E[tokens]
{LN}
z = x @ E.T
z = z - z.max(axis=-1, keepdims=True)
return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
'''
FWD_NO_LN = '''
return E[tokens] @ E.T
'''
FWD_EPS_OUTSIDE = '''
x = E[tokens]
x = (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-5)
return x @ E.T
'''
FWD_NO_TRANSPOSE = f'''
x = E[tokens]
{LN}
return x @ E
'''

# ---- tied_embedding_grad
GRAD_G = '''
tokens = np.asarray(tokens)
X = E[tokens]
logits = X @ E.T
z = np.exp(logits - logits.max(axis=-1, keepdims=True))
G = z / z.sum(axis=-1, keepdims=True)
G[np.arange(len(tokens)), targets] -= 1.0
G /= len(tokens)
'''
SCATTER = "grad_lookup = np.zeros_like(E)\nnp.add.at(grad_lookup, tokens, G @ E)\n"


def grad(lookup: str = SCATTER, head: str = "grad_head = G.T @ X\n", ret: str = "return grad_lookup, grad_head",
         g: str = GRAD_G) -> str:
    return g + lookup + head + ret


GRAD_NO_LOOKUP = grad(lookup="grad_lookup = np.zeros_like(E)\n")
GRAD_OVERWRITTEN = grad(lookup="grad_lookup = np.zeros_like(E)\ngrad_lookup[tokens] += G @ E\n")
GRAD_NOT_SCATTERED = grad(lookup="grad_lookup = G @ E\n")
GRAD_SWAPPED = grad(ret="return grad_head, grad_lookup")
GRAD_TOTAL = grad(ret="return grad_lookup + grad_head")
GRAD_SUMMED = grad(g=GRAD_G.replace("G /= len(tokens)\n", ""))
GRAD_HEAD_T = grad(head="grad_head = X.T @ G\n")
GRAD_SIGN = grad(g=GRAD_G.replace("G /= len(tokens)\n", "G = -G / len(tokens)\n"))
GRAD_MIXED = grad(ret="return grad_lookup + grad_head, np.zeros_like(E)")
GRAD_NO_HEAD = grad(head="grad_head = np.zeros_like(E)\n")

# ---- sample_next
SAMPLE_NO_ZERO = '''
z = np.asarray(logits, dtype=np.float64)
z = (z - z.max()) / temperature
p = np.exp(z)
return int(rng.choice(len(p), p=p / p.sum()))
'''
ZERO = "if temperature == 0:\n    return int(np.argmax(logits))\n"
SAMPLE_UNSHIFTED = ZERO + '''
p = np.exp(np.asarray(logits) / temperature)
return int(rng.choice(len(p), p=p / p.sum()))
'''


def sampler(scaled: str, draw: str = "return int(rng.choice(len(p), p=p / p.sum()))", zero: str = ZERO) -> str:
    return zero + f"z = np.asarray(logits, dtype=np.float64)\nz = {scaled}\np = np.exp(z - z.max())\n{draw}\n"


SAMPLE_NO_TAU = sampler("z")
SAMPLE_TIMES_TAU = sampler("z * temperature")
SAMPLE_ARGMAX = "return int(np.argmax(logits))\n"
SAMPLE_GLOBAL_RNG = sampler("z / temperature", "return int(np.random.choice(len(p), p=p / p.sum()))")
SAMPLE_PROBS = sampler("z / temperature", "return p / p.sum()")
SAMPLE_UNNORMALISED = sampler("z / temperature", "return int(rng.choice(len(p), p=p))")
SAMPLE_ZERO_AS_ONE = sampler("z / temperature", zero="if temperature == 0:\n    temperature = 1.0\n")

PITFALLS = [
    Pitfall(CH, "unshifted_ce+softmax_in_forward+no_lookup+zero_division",
            {"cross_entropy_from_logits": CE_UNSHIFTED, "tied_head_forward": FWD_SOFTMAX, "tied_embedding_grad": GRAD_NO_LOOKUP, "sample_next": SAMPLE_NO_ZERO},
            {"cross_entropy_from_logits": "gpt_head.unshifted_softmax",
             "tied_head_forward": "gpt_head.softmax_in_forward",
             "tied_embedding_grad": "gpt_head.missing_lookup",
             "sample_next": "pass", "sample_next.greedy": "gpt_head.zero_temperature"}),
    Pitfall(CH, "log_of_softmax+no_layernorm+overwritten_rows+unshifted_sampler",
            {"cross_entropy_from_logits": CE_LOG_OF_SOFTMAX, "tied_head_forward": FWD_NO_LN, "tied_embedding_grad": GRAD_OVERWRITTEN, "sample_next": SAMPLE_UNSHIFTED},
            {"cross_entropy_from_logits": "gpt_head.log_of_softmax",
             "tied_head_forward": "gpt_head.missing_layernorm",
             "tied_embedding_grad": "gpt_head.overwritten_rows",
             "sample_next": "gpt_head.sample_overflow", "sample_next.greedy": "pass"}),
    Pitfall(CH, "summed_loss+eps_outside_root+not_scattered+no_temperature",
            {"cross_entropy_from_logits": CE_SUMMED, "tied_head_forward": FWD_EPS_OUTSIDE, "tied_embedding_grad": GRAD_NOT_SCATTERED, "sample_next": SAMPLE_NO_TAU},
            {"cross_entropy_from_logits": "gpt_head.loss_summed",
             "tied_head_forward": "gpt_head.layernorm_variant",
             "tied_embedding_grad": "gpt_head.lookup_not_scattered",
             "sample_next": "gpt_head.temperature_ignored"}),
    # x @ E with V != d raises: the message gives the shapes and x @ E.T, whichever operand is wrong.
    Pitfall(CH, "per_token_loss+no_transpose+swapped+times_temperature",
            {"cross_entropy_from_logits": CE_PER_TOKEN, "tied_head_forward": FWD_NO_TRANSPOSE, "tied_embedding_grad": GRAD_SWAPPED, "sample_next": SAMPLE_TIMES_TAU},
            {"cross_entropy_from_logits": "gpt_head.loss_not_averaged",
             "tied_head_forward": "gpt_head.projection_shapes",
             "tied_embedding_grad": "gpt_head.grads_swapped",
             "sample_next": "gpt_head.temperature_inverted"}),
    Pitfall(CH, "total_grad+always_argmax", {"tied_embedding_grad": GRAD_TOTAL, "sample_next": SAMPLE_ARGMAX},
            {"tied_embedding_grad": "gpt_head.grad_total", "sample_next": "gpt_head.sample_greedy",
             "sample_next.greedy": "pass", "cross_entropy_from_logits": "pass"}),
    Pitfall(CH, "summed_grads+global_rng", {"tied_embedding_grad": GRAD_SUMMED, "sample_next": SAMPLE_GLOBAL_RNG},
            {"tied_embedding_grad": "gpt_head.grad_summed", "sample_next": "gpt_head.rng_ignored"}),
    Pitfall(CH, "transposed_head+returns_probs", {"tied_embedding_grad": GRAD_HEAD_T, "sample_next": SAMPLE_PROBS},
            {"tied_embedding_grad": "gpt_head.head_transposed", "sample_next": "gpt_head.sample_returns_probs"}),
    Pitfall(CH, "sign+unnormalised", {"tied_embedding_grad": GRAD_SIGN, "sample_next": SAMPLE_UNNORMALISED},
            {"tied_embedding_grad": "gpt_head.grad_sign", "sample_next": "gpt_head.sample_not_normalised"}),
    Pitfall(CH, "mixed_split+zero_as_one", {"tied_embedding_grad": GRAD_MIXED, "sample_next": SAMPLE_ZERO_AS_ONE},
            {"tied_embedding_grad": "gpt_head.grads_mixed", "sample_next": "pass",
             "sample_next.greedy": "gpt_head.zero_temperature_not_argmax"}),
    Pitfall(CH, "no_head", {"tied_embedding_grad": GRAD_NO_HEAD},
            {"tied_embedding_grad": "gpt_head.missing_head", "tied_head_forward": "pass"}),
]

# ---- what the text promises beyond the values
# np.argmax and np.searchsorted give NumPy integers, which the worked example prints as np.int64(0).
SAMPLE_NUMPY_INT = sampler("z / temperature",
                           "return np.minimum(np.searchsorted(np.cumsum(p / p.sum()), rng.random()), len(p) - 1)",
                           zero="if temperature == 0:\n    return np.argmax(logits)\n")
SAMPLE_FLOAT = sampler("z / temperature", "return float(rng.choice(len(p), p=p / p.sum()))")
SAMPLE_OFF_BY_ONE = sampler("z / temperature", "return int(rng.choice(len(p), p=p / p.sum())) + 1")
GRAD_HEAD_NOT_TRANSPOSED = grad(head="grad_head = G @ X\n")
FWD_OPERANDS_SWAPPED = f'''
x = E[tokens]
{LN}
return (E.T @ x.T).T if E.shape[0] == E.shape[1] else E.T @ x
'''
CE_SCIPY = '''
from scipy.special import logsumexp
z = np.asarray(logits, dtype=np.float64)
return float(np.mean(logsumexp(z, axis=-1) - z[np.arange(len(targets)), targets]))
'''
GRAD_AUTOGRAD = '''
import torch
e = torch.tensor(E, dtype=torch.float64, requires_grad=True)
a = e.detach().clone().requires_grad_(True)
loss = torch.nn.functional.cross_entropy(a[torch.as_tensor(tokens)] @ e.T, torch.as_tensor(targets))
loss.backward()
return a.grad.numpy(), e.grad.numpy()
'''

PITFALLS += [
    Pitfall(CH, "numpy_int_draws+scipy_loss", {"cross_entropy_from_logits": CE_SCIPY, "sample_next": SAMPLE_NUMPY_INT},
            {"cross_entropy_from_logits": "gpt_head.framework_used", "sample_next": "gpt_head.sample_not_int",
             "sample_next.greedy": "gpt_head.sample_not_int"}),
    Pitfall(CH, "float_draws+autograd", {"tied_embedding_grad": GRAD_AUTOGRAD, "sample_next": SAMPLE_FLOAT},
            {"tied_embedding_grad": "gpt_head.framework_used", "sample_next": "gpt_head.sample_not_int"}),
    # The first draws are in range; the message must quote one that is not.
    Pitfall(CH, "off_by_one_draws", {"sample_next": SAMPLE_OFF_BY_ONE}, {"sample_next": "gpt_head.sample_not_id"}),
    # A shape error in the gradients is not the forward's missing transpose.
    Pitfall(CH, "grad_head_shapes+projection_operands_swapped", {"tied_head_forward": FWD_OPERANDS_SWAPPED, "tied_embedding_grad": GRAD_HEAD_NOT_TRANSPOSED},
            {"tied_embedding_grad": "gpt_head.grad_shapes", "tied_head_forward": "gpt_head.projection_shapes"}),
    # One array (or number) is asked: a container fails from its raw type, even holding
    # the right values (a list of the rows stacks to the right (T, V) array).
    Pitfall(CH, "loss_in_a_tuple+logits_as_a_list_of_rows", {
        "cross_entropy_from_logits": CE_PER_TOKEN.replace("return lse - z[np.arange(len(targets)), targets]",
                                                          "return (float(np.mean(lse - z[np.arange(len(targets)), targets])),)"),
        "tied_head_forward": f"""
x = E[tokens]
{LN}
return [row @ E.T for row in x]
"""}, {"cross_entropy_from_logits": "common.not_one_array", "tied_head_forward": "common.not_one_array"}),
    Pitfall(CH, "logits_one_column_short", {"tied_head_forward": '''
E = np.asarray(E, dtype=np.float64)
x = E[np.asarray(tokens, dtype=int)]
x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
return (x @ E.T)[:, 1:]
'''}, {"tied_head_forward": "common.wrong_shape"}),
    # Three arrays stacked where a pair is asked: the pair is named, not the values.
    Pitfall(CH, "grads_stacked", {"tied_embedding_grad": '''
E = np.asarray(E, dtype=np.float64)
tokens = np.asarray(tokens, dtype=int)
X = E[tokens]
logits = X @ E.T
z = logits - logits.max(axis=-1, keepdims=True)
G = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
G[np.arange(len(tokens)), np.asarray(targets, dtype=int)] -= 1.0
G /= len(tokens)
grad_lookup = np.zeros_like(E)
np.add.at(grad_lookup, tokens, G @ E)
return np.stack([grad_lookup, G.T @ X, G.T @ X])
'''}, {"tied_embedding_grad": "gpt_head.grad_pair"}),
    # Every id equally likely: no symptom fits, the distribution itself is named.
    Pitfall(CH, "uniform_draw", {"sample_next": '''
z = np.asarray(logits, dtype=np.float64)
if temperature == 0:
    return int(np.argmax(z))
return int(rng.integers(len(z)))
'''}, {"sample_next": "gpt_head.wrong_distribution"}),
]

"""The NumPy Mini-GPT of chapter 04, shared by the chapter's two pages (04 shows
the code with ``literalinclude``: written once, run as shown).

Every function takes ``xp``, the array module: ``np`` runs it in NumPy, ``jnp``
under JAX, which is how 04b differentiates it without writing it twice."""
import numpy as np

# V != d on purpose: the head's (T, d) -> (T, V) shows in every shape
V, D, N_LAYER, N_HEAD = 96, 64, 2, 4


def init_params(seed, vocab=V, d=D, n_layer=N_LAYER, std=0.02):
    """Every weight matrix from N(0, std²), biases 0, LayerNorm gains 1. No
    head."""
    rng = np.random.default_rng(seed)
    normal = lambda *shape: rng.normal(0.0, std, shape)
    norm = lambda: {"g": np.ones(d), "b": np.zeros(d)}
    blocks = [
        {"ln1": norm(), "qkv": normal(d, 3 * d), "qkv_b": np.zeros(3 * d),
         "proj": normal(d, d), "proj_b": np.zeros(d),
         "ln2": norm(), "fc": normal(d, 4 * d), "fc_b": np.zeros(4 * d),
         "out": normal(4 * d, d), "out_b": np.zeros(d)}
        for _ in range(n_layer)
    ]
    return {"E": normal(vocab, d), "blocks": blocks, "ln_f": norm()}


def layer_norm(x, g=None, b=None, xp=np, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / xp.sqrt(var + eps)
    return y if g is None else y * g + b


def softmax(z, xp=np):
    # why the shift matters: next section
    z = z - z.max(axis=-1, keepdims=True)
    e = xp.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def gelu(x, xp=np):
    return 0.5 * x * (1 + xp.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def attention(x, p, xp=np, n_head=N_HEAD):
    T, d = x.shape
    # (T, d) -> (heads, T, d/heads)
    split = lambda a: a.reshape(T, n_head, d // n_head).transpose(1, 0, 2)
    q, k, v = (
        split(a) for a in xp.split(x @ p["qkv"] + p["qkv_b"], 3, axis=-1)
    )
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d // n_head)
    # position t sees 0..t
    causal = np.tril(np.ones((T, T), dtype=bool))
    weights = softmax(xp.where(causal, scores, -1e30), xp)
    return (weights @ v).transpose(1, 0, 2).reshape(T, d) @ p["proj"] + p[
        "proj_b"
    ]


def block(h, p, xp=np):
    h = h + attention(layer_norm(h, **p["ln1"], xp=xp), p, xp)
    mlp = gelu(layer_norm(h, **p["ln2"], xp=xp) @ p["fc"] + p["fc_b"], xp)
    return h + mlp @ p["out"] + p["out_b"]


def run_blocks(params, h, xp=np, stream=None):
    """From the looked-up rows to the final LayerNorm; ``stream`` keeps each
    stage."""
    for p in params["blocks"]:
        if stream is not None:
            stream.append(h)
        h = block(h, p, xp)
    if stream is not None:
        stream.append(h)
    return layer_norm(h, **params["ln_f"], xp=xp)


def forward(params, tokens, xp=np, head=None, stream=None):
    E = params["E"]
    # lookup: row i of E is token i; h is (T, d)
    h = run_blocks(params, E[tokens], xp, stream)
    # tied head: the same E, transposed, (T, d) -> (T, V); head= only
    # lets 04b pass the matrix a second time, to separate the two paths
    return h @ (E if head is None else head).T


def logsumexp(z):
    m = z.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[..., 0]

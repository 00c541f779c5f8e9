"""The toy batch and encoder of chapter 05, shared by the chapter's two pages
(05 shows the code with ``literalinclude``: written once, run as shown)."""
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

# batch, length, vocabulary, d_model, heads, blocks
N, T, V, D, HEADS, BLOCKS = 2, 6, 40, 16, 4, 2
MASK = V - 1  # the id of [MASK], no ordinary token's

tanh_gelu = partial(F.gelu, approximate="tanh")


def toy_batch(seed=0):
    """The tied matrix, the position vectors, a corrupted batch of ids and which
    positions are hidden."""
    torch.manual_seed(seed)
    # the one (V, d_model) matrix, used twice; N(0, 1): nothing is trained here
    w_emb = torch.randn(V, D)
    pos_embed = 0.5 * torch.randn(T, D)       # one learned vector per position
    tokens = torch.randint(0, MASK, (N, T))   # the sentences: ids 0 .. V - 2
    mask_indicator = torch.zeros(N, T)
    # 3 hidden
    mask_indicator[0, 1] = mask_indicator[0, 4] = mask_indicator[1, 2] = 1.0
    # what the model reads: [MASK] at the hidden positions
    input_ids = torch.where(mask_indicator > 0.5, MASK, tokens)
    return w_emb, pos_embed, input_ids, mask_indicator


def toy_encoder(norm_first=True):
    """BLOCKS encoder blocks, pre-LN by default, d_ff = d_model, no biases, no
    dropout."""
    layer = nn.TransformerEncoderLayer(
        D, HEADS, dim_feedforward=D, dropout=0.0, activation=tanh_gelu,
        batch_first=True, norm_first=norm_first, bias=False,
    )
    return nn.TransformerEncoder(
        layer, BLOCKS, enable_nested_tensor=False
    ).eval()


# The check of chapter 05 (not shown on the page: it is the exercise's answer).
def reference_logits(input_ids, mask_indicator, w_emb, pos_embed, blocks_weights,
                     heads=HEADS):
    """The exercise's forward pass, computed by the grader's float64 reference from
    packed (num_blocks, 6, d, d) weights: the (M, V) logits at the masked positions."""
    from grader.chapters.mlm.reference import forward_ref

    args = (input_ids, mask_indicator, w_emb, pos_embed, blocks_weights)
    return torch.as_tensor(forward_ref(*(a.numpy() for a in args), heads))

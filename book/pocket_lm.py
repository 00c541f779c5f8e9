"""The small tied language model of chapter 03, shared by its two pages.

Its source is shown on the pages with ``literalinclude``, so the reader sees the
code that runs, written once."""
import torch
import torch.nn as nn


class PocketLM(nn.Module):
    def __init__(self, vocab_size, d_model, n_layers=2, n_heads=2, max_len=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model,
                n_heads,
                dim_feedforward=4 * d_model,
                dropout=0.0,
                batch_first=True,
                norm_first=True,
            )
            for _ in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        # the tie, once, in __init__
        self.lm_head.weight = self.embed.weight
        # GPT-2's scale, not N(0, 1), for both tables: see below
        nn.init.normal_(self.embed.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, input_ids):  # (B, T) -> (B, T, V)
        T = input_ids.shape[1]
        x = self.embed(input_ids) + self.pos(
            torch.arange(T, device=input_ids.device)
        )
        causal = nn.Transformer.generate_square_subsequent_mask(
            T, device=input_ids.device
        )
        for block in self.blocks:
            x = block(x, src_mask=causal, is_causal=True)
        return self.lm_head(self.ln_f(x))

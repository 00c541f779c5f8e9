"""The tied Linen module of chapter 01, shared by the chapter's two pages (01
shows the class with ``literalinclude``: written once, run as shown)."""
import flax.linen as nn


class TiedLogits(nn.Module):
    vocab_size: int  # V
    d_model: int     # D

    @nn.compact
    def __call__(self, token_ids):
        embedding = self.param(
            "embedding",
            nn.initializers.normal(stddev=0.02),
            (self.vocab_size, self.d_model),
        )
        # lookup: (T,) -> (T, D), row i is token i's vector
        x = embedding[token_ids]
        # ... a real model runs its transformer blocks on x here ...
        # output projection: (T, D) @ (D, V) -> (T, V)
        return x @ embedding.T

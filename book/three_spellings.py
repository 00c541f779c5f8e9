"""Chapter 07's tied model, spelt once in each framework: Flax Linen, Flax NNX,
PyTorch.

Look the ids up in the (V, d) embedding, mix with one square dense layer and a
residual connection, and project back with the same matrix. The page shows each
class in a tab (``literalinclude``) and imports them from here, so the code
shown is the code run; the exercise notebook defines the same three classes."""
from __future__ import annotations

import flax.linen as linen
import jax.numpy as jnp
import torch
from flax import nnx


class LinenTiedLM(linen.Module):
    vocab_size: int
    d_model: int

    def setup(self):
        self.embed = linen.Embed(self.vocab_size, self.d_model)
        self.mixer = linen.Dense(self.d_model)

    def __call__(self, token_ids):
        x = self.embed(token_ids)
        return self.embed.attend(x + jnp.tanh(self.mixer(x)))


class NNXTiedLM(nnx.Module):
    def __init__(self, vocab_size, d_model, rngs):
        self.embed = nnx.Embed(vocab_size, d_model, rngs=rngs)
        self.mixer = nnx.Linear(d_model, d_model, rngs=rngs)

    def __call__(self, token_ids):
        x = self.embed(token_ids)
        return self.embed.attend(x + jnp.tanh(self.mixer(x)))


class TorchTiedLM(torch.nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, d_model)
        self.mixer = torch.nn.Linear(d_model, d_model)
        self.lm_head = torch.nn.Linear(d_model, vocab_size, bias=False)
        # the tie: one Parameter, two modules
        self.lm_head.weight = self.embed.weight

    def forward(self, token_ids):
        x = self.embed(token_ids)
        return self.lm_head(x + torch.tanh(self.mixer(x)))

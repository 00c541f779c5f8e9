"""What weight tying saves: parameter counts of published models, from their configurations.

Pure arithmetic, with no framework and no widgets, so that any page can import it quickly.
Each ``*_params`` function counts a whole model from the numbers of its configuration
(vocabulary, width, layers, heads, feed-forward width, norms, biases); ``PRESETS`` holds
those numbers for five published models. ``tests/test_savings.py`` checks every count
against the same model built by ``transformers`` on PyTorch's ``meta`` device.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

BYTES_PER_PARAM = {"fp32": 4, "bf16": 2}


def gpt2_params(V: int, D: int, n_ctx: int, n_layer: int, tied: bool = True) -> int:
    """GPT-2: token and position embeddings, pre-LN blocks with biases, a final LayerNorm."""
    block = (
        2 * D                      # LayerNorm before attention (scale, bias)
        + D * 3 * D + 3 * D        # attention: q, k, v projection
        + D * D + D                # attention: output projection
        + 2 * D                    # LayerNorm before the MLP
        + D * 4 * D + 4 * D        # MLP up
        + 4 * D * D + D            # MLP down
    )
    head = 0 if tied else V * D    # untied: a second (V, D) matrix, no bias
    return V * D + n_ctx * D + n_layer * block + 2 * D + head


def bert_mlm_params(V: int, D: int, n_layer: int, ffn: int, n_pos: int, n_types: int,
                    tied: bool = True) -> int:
    """BERT with its masked-LM head (no pooler). Besides the (V, D) decoder matrix, the head
    has a D x D transform with its bias and a LayerNorm, and an output bias of V numbers,
    none of which is tied."""
    embeddings = V * D + n_pos * D + n_types * D + 2 * D   # token, position, segment, LayerNorm
    block = (
        4 * (D * D + D)            # attention: q, k, v, output projection, all with bias
        + 2 * D                    # LayerNorm after attention
        + D * ffn + ffn            # feed-forward up
        + ffn * D + D              # feed-forward down
        + 2 * D                    # LayerNorm after the feed-forward
    )
    head = D * D + D + 2 * D + V + (0 if tied else V * D)
    return embeddings + n_layer * block + head


def t5_params(V: int, D: int, n_layer: int, n_head: int, d_kv: int, ffn: int, n_buckets: int,
              tied: bool = True) -> int:
    """T5 (v1.0): one embedding shared by encoder and decoder, no biases, layer norms with a
    scale only, relative position biases in the first block of each stack."""
    attention = 4 * D * n_head * d_kv + D       # q, k, v, o, and the norm before them
    feed_forward = 2 * D * ffn + D              # up, down, and the norm before them
    encoder = n_layer * (attention + feed_forward) + n_buckets * n_head + D
    decoder = n_layer * (2 * attention + feed_forward) + n_buckets * n_head + D   # self and cross
    head = 0 if tied else V * D
    return V * D + encoder + decoder + head


def llama_params(V: int, D: int, n_layer: int, ffn: int, n_head: int, n_kv_head: int,
                 head_dim: int, tied: bool = False) -> int:
    """Llama and Gemma: RMSNorm (a scale only), grouped-query attention, a gated MLP (gate,
    up, down), no biases anywhere."""
    block = (
        2 * D * n_head * head_dim        # attention: q in, o out
        + 2 * D * n_kv_head * head_dim   # attention: k and v, shared by groups of heads
        + 3 * D * ffn                    # MLP: gate, up, down
        + 2 * D                          # RMSNorm before attention and before the MLP
    )
    head = 0 if tied else V * D
    return V * D + n_layer * block + D + head


@dataclass(frozen=True)
class Saving:
    """A model split into its (V, d) matrix and the rest of its parameters."""

    vocab: int   # V
    d_model: int  # d
    rest: int    # every parameter except the (V, d) embedding and output matrices

    @property
    def matrix(self) -> int:
        """Parameters of one (V, d) matrix: exactly what tying saves."""
        return self.vocab * self.d_model

    @property
    def tied_total(self) -> int:
        return self.rest + self.matrix

    @property
    def untied_total(self) -> int:
        return self.rest + 2 * self.matrix

    def saved_bytes(self, dtype: str) -> int:
        return self.matrix * BYTES_PER_PARAM[dtype]

    @property
    def share_of_untied(self) -> float:
        """The fraction of the untied model that tying removes."""
        return self.matrix / self.untied_total

    @property
    def share_of_tied(self) -> float:
        """The fraction of the tied model held by its one shared matrix."""
        return self.matrix / self.tied_total


@dataclass(frozen=True, kw_only=True)
class Preset(Saving):
    """A published model: the numbers of its configuration, and whether it ties."""

    name: str
    checkpoint: str       # the Hugging Face checkpoint whose configuration the numbers are
    tied: bool            # as published
    note: str
    counter: Callable[..., int] = field(repr=False)
    config: dict = field(repr=False)

    def count(self, tied: bool) -> int:
        """The whole model counted from its configuration, tied or not."""
        return self.counter(**self.config, tied=tied)

    @property
    def total(self) -> int:
        """The model's size as published."""
        return self.tied_total if self.tied else self.untied_total


def preset(name: str, checkpoint: str, counter: Callable[..., int], tied: bool, note: str,
           **config) -> Preset:
    """A ``Preset`` whose sizes come from ``counter(**config)``, never from a typed total."""
    matrix = config["V"] * config["D"]
    rest = counter(**config, tied=True) - matrix
    return Preset(config["V"], config["D"], rest, name=name, checkpoint=checkpoint, tied=tied,
                  note=note, counter=counter, config=config)


GPT2_SMALL = dict(V=50257, D=768, n_ctx=1024, n_layer=12)
BERT_BASE = dict(V=30522, D=768, n_layer=12, ffn=3072, n_pos=512, n_types=2)
T5_SMALL = dict(V=32128, D=512, n_layer=6, n_head=8, d_kv=64, ffn=2048, n_buckets=32)
LLAMA2_7B = dict(V=32000, D=4096, n_layer=32, ffn=11008, n_head=32, n_kv_head=32, head_dim=128)
GEMMA_2B = dict(V=256000, D=2048, n_layer=18, ffn=16384, n_head=8, n_kv_head=1, head_dim=256)

PRESETS = {p.name: p for p in (
    preset("GPT-2 small", "openai-community/gpt2", gpt2_params, True,
           "The output projection is the token embedding; the position embeddings are not "
           "part of the tie.", **GPT2_SMALL),
    preset("BERT-base", "google-bert/bert-base-uncased", bert_mlm_params, True,
           "Counted with its masked-LM head and no pooler. The decoder's matrix is tied; the "
           "transform before it and its output bias of V numbers are not.", **BERT_BASE),
    preset("T5-small", "google-t5/t5-small", t5_params, True,
           "One matrix serves the encoder's input, the decoder's input and the output; tied, "
           "T5 scales the decoder's output by 1/√d before the projection.", **T5_SMALL),
    preset("LLaMA-2-7B", "meta-llama/Llama-2-7b-hf", llama_params, False,
           "Not tied: the LM head is a second (V, d) matrix. The figures say what tying it "
           "would save.", **LLAMA2_7B),
    preset("Gemma 2B", "google/gemma-2b", llama_params, True,
           "Tied, with a very large vocabulary; the lookup is multiplied "
           "by √d on the way in.", **GEMMA_2B),
)}


def human(n: float, unit: str = "") -> str:
    """Three significant digits with a decimal prefix: ``38.6 M``, ``6.74 B``; ``unit="B"``
    for bytes gives ``154 MB``, ``1.05 GB``."""
    prefixes = ["", "k", "M", "G" if unit else "B", "T"]
    i = 0
    while i < len(prefixes) - 1 and abs(n) >= 999.5 * 1000 ** i:
        i += 1
    return f"{n / 1000 ** i:.3g} {prefixes[i]}{unit}".rstrip()

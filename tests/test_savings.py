"""tied_book/savings.py counts what ``transformers`` builds, and the intro's explorer shows its
figures. The models are built on PyTorch's meta device: shapes, no memory, no download.
(The explorer's script, in a browser, is tested in test_browser.py.)"""
import json
import re
from html import escape

import pytest
import torch
import transformers

from tied_book.explorer import CUSTOM, SavingsExplorer, figures, presets_html
from tied_book.savings import BYTES_PER_PARAM, PRESETS, Saving, human

transformers.logging.set_verbosity_error()

LLAMA_NAMES = {"V": "vocab_size", "D": "hidden_size", "n_layer": "num_hidden_layers",
               "ffn": "intermediate_size", "n_head": "num_attention_heads",
               "n_kv_head": "num_key_value_heads", "head_dim": "head_dim"}

# preset -> (model class, config class, the config's name for each of our numbers)
MODELS = {
    "GPT-2 small": ("GPT2LMHeadModel", "GPT2Config",
                    {"V": "vocab_size", "D": "n_embd", "n_ctx": "n_positions",
                     "n_layer": "n_layer"}),
    "BERT-base": ("BertForMaskedLM", "BertConfig",
                  {"V": "vocab_size", "D": "hidden_size", "n_layer": "num_hidden_layers",
                   "ffn": "intermediate_size", "n_pos": "max_position_embeddings",
                   "n_types": "type_vocab_size"}),
    "T5-small": ("T5ForConditionalGeneration", "T5Config",
                 {"V": "vocab_size", "D": "d_model", "n_layer": "num_layers", "n_head": "num_heads",
                  "d_kv": "d_kv", "ffn": "d_ff", "n_buckets": "relative_attention_num_buckets"}),
    "LLaMA-2-7B": ("LlamaForCausalLM", "LlamaConfig", LLAMA_NAMES),
    "Gemma 2B": ("GemmaForCausalLM", "GemmaConfig", LLAMA_NAMES),
}
# The defaults of these config classes are the published checkpoints (see their docstrings).
# GemmaConfig()'s are Gemma 7B's, so Gemma 2B's numbers are checked against its report below.
DEFAULT_IS_PUBLISHED = ["GPT-2 small", "BERT-base", "T5-small", "LLaMA-2-7B"]


def build(name: str, tied: bool):
    """The preset's model from ``transformers``, on the meta device, tied or not."""
    model_cls, config_cls, names = MODELS[name]
    p = PRESETS[name]
    config = getattr(transformers, config_cls)(tie_word_embeddings=tied,
                                               **{names[k]: v for k, v in p.config.items()})
    with torch.device("meta"):
        return getattr(transformers, model_cls)(config)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())   # a shared tensor is listed once


def is_tied(model) -> bool:
    return model.get_output_embeddings().weight is model.get_input_embeddings().weight


def test_every_preset_is_checked():
    assert set(MODELS) == set(PRESETS)


@pytest.mark.parametrize("name", DEFAULT_IS_PUBLISHED)
def test_preset_numbers_are_the_published_configuration(name):
    _, config_cls, names = MODELS[name]
    default = getattr(transformers, config_cls)()
    p = PRESETS[name]
    assert {k: getattr(default, names[k]) for k in p.config} == p.config
    assert default.tie_word_embeddings == p.tied


def test_gemma_2b_numbers_match_its_report():
    # Table 2 of the Gemma report (arXiv:2403.08295): 1,981,884,416 non-embedding parameters
    # for 2B. (Its embedding count is for 256,128 rows; the released checkpoint has 256,000.)
    assert PRESETS["Gemma 2B"].rest == 1_981_884_416


@pytest.mark.parametrize("name", list(PRESETS))
def test_count_agrees_with_transformers(name):
    p = PRESETS[name]
    model = build(name, p.tied)
    assert is_tied(model) == p.tied
    assert n_params(model) == p.total == p.count(p.tied)


# transformers 5 always ties T5's output matrix (its tie_word_embeddings=False only turns off
# the scaling of the decoder's output), so T5 has no untied twin to count.
@pytest.mark.parametrize("name", [n for n in PRESETS if n != "T5-small"])
def test_the_other_choice_agrees_with_transformers(name):
    p = PRESETS[name]
    model = build(name, not p.tied)
    assert is_tied(model) == (not p.tied)
    # Untied, transformers' BERT decoder gets a bias of its own beside `predictions.bias`, which
    # then goes unused: V numbers that are no part of the tie.
    extra = p.vocab if name == "BERT-base" else 0
    assert n_params(model) == p.count(not p.tied) + extra


@pytest.mark.parametrize("name", list(PRESETS))
def test_tying_saves_exactly_one_matrix(name):
    p = PRESETS[name]
    assert p.count(False) - p.count(True) == p.untied_total - p.tied_total == p.vocab * p.d_model
    if p.tied:
        assert p.untied_total - p.total == p.vocab * p.d_model
    assert p.saved_bytes("fp32") == 4 * p.vocab * p.d_model
    assert p.saved_bytes("bf16") == 2 * p.vocab * p.d_model
    assert set(BYTES_PER_PARAM) == {"fp32", "bf16"}


def test_the_explorer_shows_each_presets_own_figures():
    shown = {name: figures(p) for name, p in PRESETS.items()}
    for name, p in PRESETS.items():
        assert shown[name]["matrix"].replace("\u00a0", " ") == f"{p.matrix:,} ({human(p.matrix)})"
        assert shown[name]["total"].replace("\u00a0", " ") == f"{p.total:,} ({human(p.total)})"
        assert shown[name]["tie"] == ("tied" if p.tied else "untied")
    assert len({json.dumps(s) for s in shown.values()}) == len(PRESETS)
    # Typed numbers are no preset: no checkpoint, no note.
    assert set(figures(Saving(1000, 768, 0))) < set(shown["GPT-2 small"])
    assert figures(Saving(1000, 768, 0))["share_of_untied"] == "50.0%"   # two equal matrices


def test_the_explorer_page_holds_every_preset_and_the_first_ones_figures():
    """The HTML holds the presets' numbers for its script and the start's figures without it
    (tests/test_browser.py runs the script)."""
    html = SavingsExplorer("LLaMA-2-7B")._repr_html_()
    data = json.loads(re.search(r"<script type='application/json'>(.*?)</script>", html).group(1))
    assert data["custom"] == CUSTOM and data["bytes"] == BYTES_PER_PARAM
    assert data["presets"] == {name: {"vocab": p.vocab, "d_model": p.d_model, "rest": p.rest,
                                      "tied": p.tied, "checkpoint": p.checkpoint, "note": p.note}
                               for name, p in PRESETS.items()}
    for key, text in figures(PRESETS["LLaMA-2-7B"]).items():
        assert f"data-figure='{key}'>{escape(text)}<" in html, key
    assert "<option selected>LLaMA-2-7B</option>" in html
    # Two explorers on one page drive their own figures.
    assert SavingsExplorer()._repr_html_() != SavingsExplorer()._repr_html_()


def test_an_unknown_preset_is_named():
    with pytest.raises(ValueError, match="unknown preset 'GPT-5'"):
        SavingsExplorer("GPT-5")


def test_presets_table_lists_every_preset():
    table = presets_html()
    for p in PRESETS.values():
        assert p.name in table and f"{p.vocab:,}" in table

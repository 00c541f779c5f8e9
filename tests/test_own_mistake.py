"""Each item is judged on its own mistake (issue 25): where an exercise's code calls
another exercise's (``tied_io_embed`` builds ``TiedIO`` or ``TiedEmbed``, a ``TinyLM``
may tie with ``tie_weights``, ``mlm_forward_tied`` calls the three helpers), its probe
puts the reference version of that other exercise in place while it runs, so that a
mistake there is reported by that exercise's items only, and this item's own mistake
still shows.  In this process (``check()``); ``test_selfcheck`` holds ``grader check``
to the same verdicts."""
from __future__ import annotations

import pytest

from grader.kernel.runtime import standing_in
from inprocess import check_in_process
from notebooks import replace_regions

INIT = "nn.initializers.normal(stddev=0.02), (self.vocab_size, self.d_model)"
SECOND_PARAM = f'''embedding = self.param("embedding", {INIT})
head = self.param("head", {INIT})
return embedding[token_ids] @ head.T'''
NOTE = ("pass", "common.passes_with_reference")  # passing with the book's version of a failing other
UNFLATTENED = '''ids = jnp.asarray(token_ids, jnp.int32)
module = TiedIO(vocab_size=int(vocab_size), d_model=int(d_model))
return module.apply(module.init(jax.random.PRNGKey(int(seed)), ids), ids)'''


def verdicts(chapter_id: str, regions: dict) -> dict[str, tuple[str, str]]:
    entry = check_in_process(replace_regions(chapter_id, regions), chapter_id)["en"]
    return {i["item"]: (i["verdict"], i["key"]) for i in entry["items"]}


def test_an_unchanged_tied_io_embed_is_not_blamed_for_a_second_parameter_in_tiedio():
    found = verdicts("01_linen", {"TiedIO.__call__": SECOND_PARAM})
    # it passes, and its line says it ran with the book's TiedIO, the notebook's failing above
    assert found["TiedIO.__call__"][0] == "fail" and found["tied_io_embed"] == NOTE


def test_tied_io_embed_still_shows_its_own_mistake_beside_tiedios():
    found = verdicts("01_linen", {"TiedIO.__call__": SECOND_PARAM, "tied_io_embed": UNFLATTENED})
    assert found["TiedIO.__call__"][0] == "fail" and found["tied_io_embed"] == ("fail", "common.not_flattened")


def test_in_nnx_tied_io_embed_is_not_blamed_for_tiedembed():
    untransposed = "matrix = self.embedding[...]\nreturn matrix[token_ids] @ matrix"
    found = verdicts("02_nnx", {"TiedEmbed.__call__": untransposed})
    assert found["TiedEmbed.__call__"][0] == "fail" and found["tied_io_embed"] == NOTE


def test_a_tinylm_that_ties_with_a_wrong_tie_weights_is_judged_on_its_own():
    init = '''self.embed = nn.Embedding(vocab_size, d_model)
self.pos = nn.Embedding(MAX_LEN, d_model)
self.blocks = nn.ModuleList(Block(d_model) for _ in range(n_layers))
self.ln_f = nn.LayerNorm(d_model)
self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
tie_weights(self.embed, self.lm_head)
nn.init.normal_(self.embed.weight, std=0.02)'''
    copy = "lm_head.weight = nn.Parameter(embedding.weight.detach().clone())"
    found = verdicts("03_pytorch", {"TinyLM.__init__": init, "tie_weights": copy})
    assert found["tie_weights"][0] == "fail"
    assert {name: v for name, v in found.items() if name.startswith("TinyLM")} == {
        "TinyLM.tied": NOTE, "TinyLM.forward": NOTE, "TinyLM.grad": NOTE}


def test_mlm_forward_tied_is_not_blamed_for_a_helper():
    found = verdicts("05_mlm", {"layer_norm": "return x"})
    assert found["layer_norm"][0] == "fail" and found["mlm_forward_tied"] == ("pass", "")


@pytest.mark.parametrize("raises", [False, True])
def test_the_notebooks_names_are_put_back_whatever_happens(raises):
    namespace = {"TiedIO": "the student's"}
    with pytest.raises(ZeroDivisionError) if raises else standing_in({}, {}):
        with standing_in(namespace, {"TiedIO": "the grader's", "tie_weights": "the grader's"}):
            assert namespace == {"TiedIO": "the grader's", "tie_weights": "the grader's"}
            if raises:
                raise ZeroDivisionError
    assert namespace == {"TiedIO": "the student's"}

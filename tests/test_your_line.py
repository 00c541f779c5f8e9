""""Your line" is the innermost line of the student's code on the way to the error
(issue 25): neither the graded function's call of its helper (the outer frame) nor the
library's line that raised, and the same in ``grader check`` and in ``check()``."""
from __future__ import annotations

import nbformat

from grader.outputs.report import as_dict
from grader.pipeline.runner import grade
from grader.pipeline.supervise.supervisor import Limits
from inprocess import check_in_process
from notebooks import replace_regions, write
from pitfalls import mlm

CHAPTER = "04_gpt_head"  # plain NumPy: its kernel starts in a second or two
HELPER = ("def _scatter(G, tokens, E):\n"
          "    grad = np.zeros_like(E)\n"
          "    np.add.at(grad, np.asarray(tokens) + len(E), G)  # one past the table: NumPy raises\n"
          "    return grad")
INNERMOST = "your line: np.add.at(grad, np.asarray(tokens) + len(E), G) # one past the table: NumPy raises"


def with_helper():
    nb = replace_regions(CHAPTER, {"tied_embedding_grad": "return _scatter(np.ones((len(tokens), E.shape[1])), "
                                                          "tokens, E)"})
    first = next(n for n, cell in enumerate(nb.cells) if cell.cell_type == "code")
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(HELPER))
    return nb


def messages(entry: dict) -> dict[str, str]:
    return {i["item"]: " ".join(i["message"].split()) for i in entry["items"]}


def test_the_line_is_the_helpers_in_the_terminal_and_in_check(tmp_path):
    nb = with_helper()
    in_terminal = messages(as_dict(grade(write(nb, tmp_path / f"{CHAPTER}.ipynb"), Limits(timeout=90)), "en"))
    in_kernel = messages(check_in_process(nb, CHAPTER)["en"])
    assert INNERMOST in in_terminal["tied_embedding_grad"], in_terminal["tied_embedding_grad"]
    assert in_terminal["tied_embedding_grad"] == in_kernel["tied_embedding_grad"]
    # the worked example that calls it: the notebook item quotes the same line
    assert INNERMOST in in_terminal["notebook"] and in_terminal["notebook"] == in_kernel["notebook"]


# A pitfall: chapter 03's TinyLM.forward sends float64 into the blocks; the notebook's
# given Block raises.  The line is the student's call, the given line only its context.
GIVEN_CHAPTER = "03_pytorch"
DOUBLE_FORWARD = ("T = input_ids.shape[1]\n"
                  "x = (self.embed(input_ids) + self.pos(torch.arange(T))).double()\n"
                  "for block in self.blocks:\n"
                  "    x = block(x)\n"
                  "return self.lm_head(self.ln_f(x))")
IN_GIVEN = "your line: x = block(x) (it failed inside the code the notebook gives you: a = self.ln_1(x))"


def test_a_failure_in_the_given_code_names_the_students_call(tmp_path):
    nb = replace_regions(GIVEN_CHAPTER, {"TinyLM.forward": DOUBLE_FORWARD})
    in_terminal = messages(as_dict(grade(write(nb, tmp_path / f"{GIVEN_CHAPTER}.ipynb"), Limits(timeout=120)), "en"))
    in_kernel = messages(check_in_process(nb, GIVEN_CHAPTER)["en"])
    for item in ("TinyLM.forward", "notebook"):
        assert IN_GIVEN in in_terminal[item], in_terminal[item]
        assert in_terminal[item] == in_kernel[item]


# Chapter 05's pitfall: multi_head_attention returns float64, and the worked example fails
# later, in mlm_forward_tied, where float64 meets float32: that line is where they met,
# not the mistake, and the item that returned the wrong dtype is named.
MLM = "05_mlm"
MET = ("where the two dtypes met: x = x + gelu_tanh(layer_norm(x) @ w_mlp1) @ w_mlp2 "
       "(the other dtype comes from multi_head_attention: see that item)")


def test_a_dtype_slip_is_traced_to_the_item_that_made_it_not_to_the_line_where_it_surfaced(tmp_path):
    pitfall = next(p for p in mlm.PITFALLS if p.name == "attention_in_float64")
    nb = replace_regions(MLM, pitfall.regions)
    in_terminal = messages(as_dict(grade(write(nb, tmp_path / f"{MLM}.ipynb"), Limits(timeout=120)), "en"))
    in_kernel = messages(check_in_process(nb, MLM)["en"])
    assert MET in in_terminal["notebook"] and "your line" not in in_terminal["notebook"], in_terminal["notebook"]
    assert in_terminal["notebook"] == in_kernel["notebook"]

"""Self-forgery by casual patching in the notebook earns nothing it would not earn honestly.

The kernel sends raw values and the grader computes the statistics (a patched
``numpy.std`` cannot pass a wrong initialisation); the functions the checks write their
facts with are kept before the student's first cell (a patched ``json.dumps`` cannot
rewrite them); and the checks' own cell skips the notebook's input transformers (one
cannot rewrite the checks).  Each forgery below earned a point before these changes:
an empty list of warnings passes ``TiedEmbed.warnings``, which the untouched stub fails.
"""
import json

import nbformat

from conftest import grader
from notebooks import ROOT, with_cells, write

FORGE_JSON = '''
import json
_real_dumps = json.dumps
def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("item") == "TiedEmbed.warnings":
        obj = {"item": obj["item"], "facts": [{"value": []} for _ in obj["facts"]]}
    return _real_dumps(obj, *args, **kwargs)
json.dumps = _forged
'''

FORGE_TRANSFORMER = '''
import re
def _forge(lines):
    found = re.search(r"'(/[^']*spec[.]json)'", "".join(lines))
    if not found:
        return lines
    return [
        "import json\\n",
        f"spec = json.load(open({found.group(1)!r}))\\n",
        "with open(spec['out'], 'a') as out:\\n",
        "    for item in spec['items']:\\n",
        "        out.write(json.dumps({'item': item['name'], 'facts': [{'value': []} for _ in item['cases']]}) + '\\\\n')\\n",
    ]
get_ipython().input_transformers_post.append(_forge)
'''


def exercise_with(chapter: str, cell: str) -> nbformat.NotebookNode:
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(cell))
    return nb


def items_of(path) -> dict:
    done = grader("check", str(path), "--json", "--lang", "en")
    return {i["item"]: i for i in json.loads(done.stdout)["items"]}


def test_a_patched_numpy_std_does_not_pass_a_wrong_initialisation(tmp_path):
    wrong_init = {"TiedIO.__call__": 'embedding = self.param("embedding", nn.initializers.normal(stddev=1.0), '
                     '(self.vocab_size, self.d_model))\nreturn embedding[token_ids] @ embedding.T'}
    nb = with_cells("01_linen", ["import numpy\nnumpy.std = lambda *a, **k: 0.02"], regions=wrong_init)
    items = items_of(write(nb, tmp_path / "01_linen.ipynb"))
    assert items["TiedIO.params"]["key"] == "common.init_std"


def test_a_patched_json_dumps_forges_no_record(tmp_path):
    items = items_of(write(exercise_with("02_nnx", FORGE_JSON), tmp_path / "02_nnx.ipynb"))
    assert items["TiedEmbed.warnings"]["verdict"] != "pass"
    assert sum(i["points"] for i in items.values()) == 0


def test_an_input_transformer_cannot_rewrite_the_checks(tmp_path):
    items = items_of(write(exercise_with("02_nnx", FORGE_TRANSFORMER), tmp_path / "02_nnx.ipynb"))
    assert items["TiedEmbed.warnings"]["key"] == "common.not_implemented"
    assert sum(i["points"] for i in items.values()) == 0


def test_patched_builtins_do_not_tie_a_copy(tmp_path):
    """The kernel sends identities as numbers and the grader compares them; the probes run
    with the built-ins the prelude copied, so a patched ``id`` (every object the same
    number) changes nothing they send: a copied head stays a copy."""
    from pitfalls import PITFALLS

    (clone,) = [p for p in PITFALLS if p.id == "03_pytorch-clone"]
    patch = "import builtins\nbuiltins.id = lambda obj: 0"
    items = items_of(write(with_cells("03_pytorch", [patch], regions=clone.regions), tmp_path / "03_pytorch.ipynb"))
    assert items["tie_weights"]["key"] == "pytorch.copied"
    # It can break its own run (copy.deepcopy keys its memo by id), never pass more.
    assert {name for name, item in items.items() if item["verdict"] == "pass"} <= \
        {"notebook", *(name for name, expected in clone.expect.items() if expected == "pass")}

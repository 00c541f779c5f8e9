"""grader/chapters/source_checks.py: loops and forbidden built-ins found in a student's source,
each with its line; and the chapter-05 judge that combines them with the raw facts."""
import textwrap

import pytest

import grader.chapters.source_checks as source_checks
from grader.chapters.mlm.cases import forward_cost
from grader.chapters.mlm.code_rules import FORBIDDEN_NAMES, code_finding, cost_finding
from grader.chapters.plain_numpy import framework_finding


def src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


MHA_LOOP = src("""
    def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads):
        q, k, v = (x @ w for w in (w_q, w_k, w_v))
        outs = []
        for h in range(num_heads):
            outs.append(q)
        return torch.cat(outs, -1)
""")


def test_a_loop_over_heads_is_named_with_its_line():
    found = source_checks.loops(MHA_LOOP, "multi_head_attention")
    assert [(c.what, c.line, c.text) for c in found] == [("for", 4, "for h in range(num_heads):")]
    assert found[0].where == "multi_head_attention:4: for h in range(num_heads):"


@pytest.mark.parametrize("body, kind", [
    ("return torch.stack([r / r.sum() for r in x])", "comprehension"),
    ("return {i: x[i] for i in range(len(x))}", "comprehension"),
    ("return torch.cat(list(x[:, t] for t in range(x.shape[1])))", "comprehension"),
    ("i = 0\nwhile i < x.shape[1]:\n    i += 1\nreturn x", "while"),
    ("for row in x.unbind(0):\n    pass\nreturn x", "for"),
    ("return torch.stack(list(map(torch.sum, x)))", "map"),
    ("return list(filter(None, x.unbind(0)))", "filter"),
    ("return functools.reduce(torch.add, x.unbind(0))", "reduce"),
    ("return list(itertools.starmap(torch.add, zip(x, x)))", "starmap"),
    ("return x if len(x) == 0 else f(x[1:])", "recursion"),
])
def test_every_kind_of_loop_is_found(body, kind):
    source = "def f(x):\n" + textwrap.indent(body, "    ") + "\n"
    assert [c.what for c in source_checks.loops(source, "f")] == [kind]


def test_a_loop_over_a_literal_handful_is_allowed():
    source = src("""
        def f(x, w_q, w_k, w_v):
            q, k, v = (x @ w for w in (w_q, w_k, w_v))
            for name, w in zip(("q", "k"), [w_q, w_k]):
                pass
            return q
    """)
    assert source_checks.loops(source, "f") == []


def test_loops_over_the_blocks_are_allowed_however_they_are_reached():
    source = src("""
        def forward(ids, mask, emb, pos, blocks_weights, heads):
            count = blocks_weights.shape[0]
            for i in range(count):
                pass
            for w in blocks_weights:
                pass
            for t in range(ids.shape[1]):
                pass
    """)
    found = source_checks.loops(source, "forward", {"blocks_weights"})
    assert [c.text for c in found] == ["for t in range(ids.shape[1]):"]


@pytest.mark.parametrize("line, spelling", [
    ("return F.gelu(x)", "F.gelu"),
    ("return torch.ops.aten.gelu.default(x)", "torch.ops.aten.gelu"),
    ("return torch._C._nn.gelu(x)", "torch._C._nn.gelu"),
    ('return getattr(torch.ops.aten, "gelu")(x)', "getattr(…, 'gelu')"),
    ("from torch.nn.functional import gelu as g\n    return g(x)", "torch.nn.functional.gelu"),
    ("return torch.nn.GELU(approximate='tanh')(x)", "torch.nn.GELU"),
])
def test_forbidden_gelu_under_any_spelling(line, spelling):
    source = f"def gelu_tanh(x):\n    {line}\n"
    found = source_checks.forbidden_uses(source, "gelu_tanh", FORBIDDEN_NAMES)
    assert [c.what for c in found] == [f"mlm.forbidden_gelu|{spelling}"]
    assert found[0].line == 2


def test_a_global_bound_to_a_forbidden_name_is_found_where_used():
    source = "def gelu_tanh(x):\n    y = x * 2\n    return g(y)\n"
    found = source_checks.forbidden_uses(source, "gelu_tanh", FORBIDDEN_NAMES, {"g": "gelu"})
    assert [(c.what, c.line) for c in found] == [("mlm.forbidden_gelu|g = gelu", 3)]


def test_the_students_own_function_names_are_not_forbidden():
    source = "def forward(x):\n    return gelu_tanh(layer_norm(x))\n"
    assert source_checks.forbidden_uses(source, "forward", FORBIDDEN_NAMES) == []


@pytest.mark.parametrize("source", [None, "", "def f(:\n", 42])
def test_no_source_or_bad_source_finds_nothing(source):
    assert source_checks.loops(source, "f") == []
    assert source_checks.forbidden_uses(source, "f", FORBIDDEN_NAMES) == []
    assert source_checks.parameters(source) == []


def test_source_too_deep_to_parse_finds_nothing():
    source = "def f(x):\n    return " + "(" * 5000 + "x" + ")" * 5000 + "\n"
    assert source_checks.loops(source, "f") == []


def test_a_long_line_is_quoted_short():
    source = "def f(x):\n    return [x for x in x] + " + " + ".join(["x"] * 200) + "\n"
    (found,) = source_checks.loops(source, "f")
    assert len(found.text) == source_checks.MAX_LINE and found.text.endswith("…")


def test_indented_source_is_parsed():
    source = "    def f(x):\n        for i in x:\n            pass\n"
    assert [c.line for c in source_checks.loops(source, "f")] == [2]


def test_calls_with_follows_the_blocks_into_a_helper():
    source = src("""
        def forward(ids, mask, emb, pos, blocks_weights, heads):
            layers = blocks_weights
            return run(emb[ids], layers, heads=heads)
    """)
    found = source_checks.calls_with(source, {"run": ["x", "blocks", "heads"]}, {"blocks_weights"})
    assert found == {"run": {"blocks"}}


# ---- the chapter-05 judge: the code facts as the probe sends them

FORWARD = src("""
    def mlm_forward_tied(input_ids, mask_indicator, w_emb, pos_embed, blocks_weights, num_heads):
        x = run_blocks(w_emb[input_ids] + pos_embed, blocks_weights, num_heads)
        return (x @ w_emb.T)[mask_indicator > 0.5]
""")


def facts(helper: str, counts: list[int], globals_=None) -> dict:
    return {"out": None, "type": "cost", "ops": [], "counts": counts, "code": {
        "mlm_forward_tied": {"source": FORWARD, "globals": globals_ or {}},
        "run_blocks": {"source": src(helper), "globals": {}}}}


def test_a_count_that_does_not_grow_passes_whatever_the_loops():
    helper = """
        def run_blocks(x, layers, heads):
            return torch.stack([x[:, t] for t in range(x.shape[1])], 1)
    """
    assert cost_finding("mlm_forward_tied", forward_cost(), facts(helper, [40] * 5), True) is None


def test_a_notebook_helper_may_loop_over_the_blocks_it_is_given():
    helper = """
        def run_blocks(x, layers, heads):
            for w in layers:
                x = x + w[0].sum()
            return x
    """
    finding = cost_finding("mlm_forward_tied", forward_cost(), facts(helper, [40, 40, 60, 40, 40]), True)
    assert finding.key == "mlm.cost_grows" and finding.params["dimension_key"] == "mlm.dimension_positions"


def test_a_notebook_helper_that_loops_over_positions_is_named():
    helper = """
        def run_blocks(x, layers, heads):
            return torch.stack([x[:, t] for t in range(x.shape[1])], 1)
    """
    finding = cost_finding("mlm_forward_tied", forward_cost(), facts(helper, [40, 40, 48, 40, 40]), True)
    assert finding.key == "mlm.python_loop_forward"
    assert finding.params["line"].startswith("run_blocks:2: ")


@pytest.mark.parametrize("counts", [[40, 40], [40, 40, 40, "48", 40], [40, 40, 40, True, 40], None])
def test_counts_that_are_not_one_int_per_size_are_a_malformed_record(counts):
    value = facts("def run_blocks(x, layers, heads):\n    return x\n", counts)
    assert cost_finding("mlm_forward_tied", forward_cost(), value, True).key == "common.malformed_record"


def test_a_framework_bound_in_the_notebook_is_named_by_its_public_module():
    bound = {"softmax": {"type": "function", "module": "scipy.special._logsumexp", "name": "softmax"}}
    code = {"cross_entropy_from_logits": {"source": "def cross_entropy_from_logits(z, t):\n    return softmax(z)\n",
                                          "globals": bound}}
    assert framework_finding(code, "gpt_head.framework_used").params["module"] == "scipy.special"


def test_a_forbidden_name_bound_in_the_notebook_is_named():
    bound = {"g": {"type": "builtin_function_or_method", "module": "torch._C._nn", "name": "gelu"}}
    value = {"out": None, "type": "Tensor", "ops": [],
             "code": {"gelu_tanh": {"source": "def gelu_tanh(x):\n    return g(x)\n", "globals": bound}}}
    finding = code_finding(value)
    assert finding.key == "mlm.forbidden_gelu" and finding.params["line"] == "gelu_tanh:2: return g(x)"


def test_a_dispatched_forbidden_operation_is_named_when_no_source_shows_it():
    value = {"out": None, "type": "Tensor", "ops": ["aten.mul", "aten.native_layer_norm"], "code": {}}
    assert code_finding(value).key == "mlm.forbidden_layer_norm"

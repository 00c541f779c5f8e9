"""Pitfalls name the solution region they replace by the function it sits in."""
import pytest

import notebooks
from notebooks import REGION, check_region_names, owner, region_names, replace_regions

SOURCE = '''class TiedIO(nn.Module):
    def setup(self):
        pass

    @nn.compact
    def __call__(self, ids):
        ### BEGIN SOLUTION: hint
        return ids
        ### END SOLUTION


def helper():
    return 1


def tied_io_embed(seed):
    ### BEGIN SOLUTION: hint
    return seed
    ### END SOLUTION
'''


def owners(source):
    return [owner(source, m.start(), m.group(1)) for m in REGION.finditer(source)]


def test_a_region_is_named_by_the_functions_around_it():
    assert owners(SOURCE) == ["TiedIO.__call__", "tied_io_embed"]


def test_a_function_inserted_before_a_region_moves_no_name():
    inserted = SOURCE.replace("def helper", "def new_exercise(x):\n    ### BEGIN SOLUTION: h\n    return x\n"
                                            "    ### END SOLUTION\n\n\ndef helper")
    assert owners(inserted) == ["TiedIO.__call__", "new_exercise", "tied_io_embed"]


def test_replace_regions_swaps_the_named_region_only():
    nb = replace_regions("04_gpt_head", {"sample_next": "return 0\n"})
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "return 0" in code and code.count("### BEGIN SOLUTION") == len(region_names("04_gpt_head")) - 1


def test_an_unknown_or_ambiguous_name_is_an_error(monkeypatch):
    with pytest.raises(ValueError, match="no solution region"):
        replace_regions("04_gpt_head", {"sample": "return 0\n"})
    monkeypatch.setattr(notebooks, "region_names", lambda chapter: ("f", "f", "g"))
    with pytest.raises(ValueError, match="several solution regions"):
        check_region_names("any", {"f": ""})

"""Spanish and Korean messages read as a native speaker writes: numbers in the language's
own form (Babel), and in Korean the particle after a value that the value's sound asks for."""
import re

import pytest

from grader.i18n import PARTICLES, catalog, number, particle, percent, text

HANGUL = "\uac00-\ud7a3"
# A particle that has two forms, written in one of them right after a placeholder
# ("{type}를"): it is right for half the values only.  A following syllable makes it a
# longer word that does not alternate (the copula 이어야, 입니다; 인, 개, 번째).
FIXED_PARTICLE = re.compile(rf"\{{(\w+)\}}(이|가|은|는|을|를|과|와|으로|로|이나|나)(?![{HANGUL}(])")


@pytest.mark.parametrize("value, pair, expected", [
    ("TorchTiedLM", "이(가)", "이"),      # ...엠: an acronym's last letter
    ("ValueError", "이(가)", "가"),       # ...에러
    ("tuple", "을(를)", "을"),            # 튜플
    ("kernel", "(으)로", "로"),           # 커널: ㄹ takes 로
    ("None", "은(는)", "은"),             # 논
    ("int", "을(를)", "를"),              # 인트
    ("float32", "이(가)", "가"),          # ...삼십이
    ("bfloat16", "이(가)", "이"),         # ...십육
    ("100", "이(가)", "이"),              # 백
    ("(3, 4)", "과(와)", "와"),           # 사
    ("1,000", "(으)로", "으로"),          # 천
    ("실수", "을(를)", "를"),
    ("?", "이(가)", "이(가)"),            # nothing to go by: both forms stay
])
def test_the_particle_follows_the_last_sound(value, pair, expected):
    assert particle(value, pair) == expected


def test_a_message_chooses_its_particles():
    message = text("frameworks.wrong_class", "ko", function="linen_to_torch",
                   expected="TorchTiedLM", type="dict")
    assert "TorchTiedLM이 아닌 dict를 반환" in message and "TorchTiedLM을 만들고" in message


def test_no_placeholder_is_followed_by_a_fixed_particle():
    """Every Korean message writes a particle after a placeholder in both forms, 이(가),
    so that the formatter chooses it; a single form is right for half the values."""
    found = [f"{key}: {{{m.group(1)}}}{m.group(2)}"
             for key, template in catalog("ko").items() for m in FIXED_PARTICLE.finditer(template)]
    assert not found, "\n".join(found)
    assert all(pair in "".join(catalog("ko").values()) for pair in ("이(가)", "을(를)", "은(는)"))
    assert set(PARTICLES) >= {"이(가)", "을(를)", "은(는)", "과(와)", "(으)로"}


@pytest.mark.parametrize("value, lang, expected", [
    (23440896, "es", "23\u00a0440\u00a0896"), (23440896, "ko", "23,440,896"),
    (23440896, "en", "23440896"), (2458, "es", "2458"), ("0.0213", "es", "0,0213"),
    ("3.2e-07", "es", "3,2e-07"), ("0.0213", "ko", "0.0213"), ("torch.float32", "es", "torch.float32"),
])
def test_numbers_follow_the_locale(value, lang, expected):
    assert number(value, lang) == expected


def test_percentages_follow_the_locale():
    assert percent(0.237, "es", 1) == "23,7\u00a0%"
    assert percent(0.237, "ko", 1) == "23.7%"
    assert percent(0.237, "es") == "24\u00a0%"


def test_messages_format_their_numbers_but_not_code():
    """A count in prose takes the locale's form; a value the student types as code
    (``rtol={rtol}``, ``eps = {got}``) stays as Python writes it."""
    es = text("pytorch.param_count", "es", unique=23440896, listed=24440896, matrix=1000000)
    assert "23\u00a0440\u00a0896" in es and "1\u00a0000\u00a0000" in es
    assert "23,440,896" in text("pytorch.param_count", "ko", unique=23440896, listed=1, matrix=1)
    values = text("common.wrong_values", "es", max_err="0.00123", rtol=0.0001, atol="1e-05")
    assert "0,00123" in values and "rtol=0.0001" in values and "atol=1e-05" in values
    assert "eps = 1e-05" in text("mlm.forward_eps", "es", got="1e-05")

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx.selection._text import STOP_WORDS, tokenize


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("get_income_statements", ["incom", "statement", "get_income_statements"]),
        ("getIncomeStatements", ["incom", "statement", "getincomestatements"]),
        ("HTTPServer", ["http", "server", "httpserver"]),
        ("src/app/main.py", ["src", "app", "main", "py", "src/app/main.py"]),
        ("BRK.B 10-K 2024", ["brk", "brk.b", "10", "10-k", "2024"]),
        ("What was the revenue of Apple?", ["revenu", "appl"]),
        ("Zürich café Straße", ["zurich", "cafe", "strass"]),
        ("ＡＡＰＬ", ["aapl"]),
        ("東京の天気", ["東", "京", "の", "天", "気"]),
        ("🚀🚀 launch", ["launch"]),
        ("the of and to", []),
        ("", []),
        ("x" * 41, []),
        ("boxes classes queries discounted rounding", ["box", "class", "queri", "discount", "round"]),
        ("AAPL x86_64 v2.3.1", ["aapl", "x86", "64", "x86_64", "v2", "3", "1", "v2.3.1"]),
    ],
)
def test_tokenize(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_inflections_match() -> None:
    assert tokenize("rounded discounted queries") == tokenize("round discount query")


def test_repeats_are_kept_for_term_frequency() -> None:
    assert tokenize("error error warning") == ["error", "error", "warn"]


@given(st.text())
def test_any_text_tokenizes_to_clean_terms(text: str) -> None:
    for term in tokenize(text):
        assert term
        assert term not in STOP_WORDS
        assert term == term.casefold()
        assert len(term) <= 40


@pytest.mark.parametrize("word", ["oN", "vS", "tHe", "iT"])
def test_a_mixed_case_stop_word_is_still_a_stop_word(word: str) -> None:
    assert tokenize(word) == []

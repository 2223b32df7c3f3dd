from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx.selection.text import STOP_WORDS, tokenize


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("get_income_statements", ["income", "statement", "get_income_statements"]),
        ("getIncomeStatements", ["income", "statement", "getincomestatements"]),
        ("HTTPServer", ["http", "server", "httpserver"]),
        ("src/app/main.py", ["src", "app", "main", "py", "src/app/main.py"]),
        ("BRK.B 10-K 2024", ["brk", "brk.b", "10", "10-k", "2024"]),
        ("What was the revenue of Apple?", ["revenue", "apple"]),
        ("Zürich café Straße", ["zurich", "cafe", "strasse"]),
        ("ＡＡＰＬ", ["aapl"]),
        ("東京の天気", ["東", "京", "の", "天", "気"]),
        ("🚀🚀 launch", ["launch"]),
        ("the of and to", []),
        ("", []),
        ("x" * 41, []),
        ("boxes classes queries files status analysis", ["box", "class", "query", "file", "status", "analysis"]),
    ],
)
def test_tokenize(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_repeats_are_kept_for_term_frequency() -> None:
    assert tokenize("error error warning") == ["error", "error", "warning"]


@given(st.text())
def test_any_text_tokenizes_to_clean_terms(text: str) -> None:
    for term in tokenize(text):
        assert term
        assert term not in STOP_WORDS
        assert term == term.casefold()
        assert len(term) <= 40

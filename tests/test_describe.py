from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx._describe import default_description, humanize_tool_name, make_describer
from toolctx.errors import ConfigError


def test_humanize() -> None:
    assert humanize_tool_name("get_income_statements") == "income statements"
    assert humanize_tool_name("searchCode") == "search code"
    assert humanize_tool_name("get") == "get"
    assert humanize_tool_name("read_file") == "read file"


def test_identifier_leads_like_a_person_would_write_it() -> None:
    text = default_description("get_income_statements", {"ticker": "AAPL", "period": "annual", "limit": 4})
    assert text == "AAPL income statements (period=annual, limit=4)"


def test_other_leading_strings_follow_the_tool_name() -> None:
    assert default_description("search_code", {"query": "revenue growth", "limit": 10}) == (
        'search code "revenue growth" (limit=10)'
    )
    assert default_description("read_file", {"path": "src/app.py"}) == "read file src/app.py"


def test_values_are_summarised_and_none_is_left_out() -> None:
    text = default_description(
        "fetch", {"ids": [1, 2, 3, 4], "opts": {"a": 1}, "flag": True, "missing": None, "pair": ["x", "y"]}
    )
    assert text == "fetch (ids=[4 items], opts={1 keys}, flag=True, pair=[x, y])"


def test_long_values_are_cut() -> None:
    text = default_description("search", {"query": "word " * 100})
    assert len(text) < 100
    assert text.endswith('…"')


def test_format_string_describer() -> None:
    describe = make_describer("fin", "{ticker} financials ({period})", ["ticker", "period"])
    assert describe({"ticker": "AAPL", "period": "annual"}) == "AAPL financials (annual)"


def test_format_string_with_unknown_field_is_rejected_at_decoration() -> None:
    with pytest.raises(ConfigError, match=r"\{tickr\}.*\['period', 'ticker'\]"):
        make_describer("fin", "{tickr}", ["ticker", "period"])
    with pytest.raises(ConfigError, match="refers to"):
        make_describer("fin", "{} positional", ["ticker"])
    with pytest.raises(ConfigError, match="not a valid format string"):
        make_describer("fin", "{ticker", ["ticker"])


def test_callable_and_bad_describer() -> None:
    assert make_describer("t", lambda a: f"n={a['n']}", ["n"])({"n": 2}) == "n=2"
    assert make_describer("t", None, ["n"])({"n": 2}) == "t (n=2)"
    with pytest.raises(ConfigError, match="format string or a callable"):
        make_describer("t", 42, ["n"])  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(value=st.lists(st.sampled_from(["a", "bc", " ", "\n", "\t", "é", "   "]), max_size=1500).map("".join))
def test_a_long_value_reads_as_the_whole_value_collapsed_and_cut(value: str) -> None:
    """Only the start of a long argument is looked at, and the description is what the whole would give."""
    collapsed = " ".join(value.split())
    expected = collapsed if len(collapsed) <= 60 else collapsed[:59] + "…"
    shown = default_description("write_file", {"path": "a.py", "content": value})
    quoted = f'"{expected}"' if " " in expected or not expected else expected
    assert shown == f"write file a.py (content={quoted})"

"""select_relevant_contexts: default BM25, k, token budget, cut, fallbacks and bad input."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from toolctx import ConfigError, ContextSession, session
from toolctx.redaction import REDACTED
from toolctx.selection import MIN_SCORE_RATIO
from toolctx.tokens import estimate_tokens


def fill(s: ContextSession) -> dict[str, Any]:
    return {
        "income": s.save_context("get_income_statements", {"ticker": "AAPL"}, {"revenue": 391035, "rows": "x" * 4000}),
        "price": s.save_context("get_stock_price", {"ticker": "AAPL"}, {"price": 227.5}),
        "code": s.save_context("search_code", {"query": "revenue"}, ["src/finance/revenue.py:12 def revenue()"]),
        "weather": s.save_context("get_weather", {"city": "Paris"}, "Sunny in Paris, 21 °C"),
        "tests": s.save_context("run_tests", {"path": "tests/"}, {"failed": ["test_revenue_rounding"]}),
    }


def names(pointers: list[Any]) -> list[str]:
    return [p.tool_name for p in pointers]


def test_bm25_is_the_default(context_dir: Path) -> None:
    with session(context_dir) as s:
        fill(s)
        assert names(s.select_relevant_contexts("What is the weather in Paris?")) == ["get_weather"]
        assert names(s.select_relevant_contexts("AAPL stock price", k=1)) == ["get_stock_price"]
        assert s.select_relevant_contexts("kubernetes cluster health") == []


def test_k_and_the_minimum_score_cut(context_dir: Path) -> None:
    with session(context_dir) as s:
        fill(s)
        everything = s.select_relevant_contexts("revenue", min_score_ratio=0)
        assert set(names(everything)) == {"get_income_statements", "search_code", "run_tests"}
        cut = s.select_relevant_contexts("revenue code", min_score_ratio=0.99)
        assert names(cut) == ["search_code"]
        assert len(s.select_relevant_contexts("revenue", k=2)) == 2
        with pytest.raises(ConfigError, match="min_score_ratio"):
            s.select_relevant_contexts("revenue", min_score_ratio=1.5)
    assert 0 < MIN_SCORE_RATIO < 1


def test_token_budget(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointers = fill(s)
        income_tokens = pointers["income"].tokens
        assert income_tokens > 100  # rows of repeated figures, estimated at save time
        assert income_tokens == estimate_tokens(orjson.dumps(s.load_contexts([pointers["income"]])[0].result))
        assert pointers["price"].tokens == estimate_tokens('{"price":227.5}')
        all_revenue = s.select_relevant_contexts("revenue", min_score_ratio=0)
        small = s.select_relevant_contexts("revenue", budget_tokens=100, min_score_ratio=0)
        assert "get_income_statements" not in names(small)  # too big for the budget: skipped
        assert names(small) == [p.tool_name for p in all_revenue if p.tool_name != "get_income_statements"]
        assert s.select_relevant_contexts("revenue", budget_tokens=0) == []
        assert (
            sum(p.tokens for p in s.select_relevant_contexts("revenue", budget_tokens=income_tokens)) <= income_tokens
        )


def test_a_query_without_search_terms_falls_back_to_the_newest(context_dir: Path) -> None:
    with session(context_dir) as s:
        fill(s)
        for query in ["the of and", "🚀🚀🚀", "?!"]:
            with capture_logs() as logs:
                picked = s.select_relevant_contexts(query, k=2)
            assert names(picked) == ["run_tests", "get_weather"]
            assert any(e["event"] == "selection_fallback" for e in logs)


def test_mixed_scripts_and_accents(context_dir: Path) -> None:
    with session(context_dir) as s:
        s.save_context("get_weather", {"city": "Zürich"}, "Sonnig in Zürich")
        s.save_context("web_search", {"query": "東京の天気"}, "東京は晴れ")
        s.save_context("web_search", {"query": "Москва погода"}, "Москва: снег")
        assert names(s.select_relevant_contexts("zurich weather", k=1)) == ["get_weather"]
        assert s.select_relevant_contexts("東京", k=1)[0].args == {"query": "東京の天気"}
        assert s.select_relevant_contexts("погода Москва 🌨", k=1)[0].args == {"query": "Москва погода"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "   "}, "query is empty"),
        ({"query": None}, "query must be a str"),
        ({"query": "q", "k": 0}, "k must be"),
        ({"query": "q", "k": -3}, "k must be"),
        ({"query": "q", "budget_tokens": -1}, "budget_tokens"),
        ({"query": "q", "budget_tokens": 1.5}, "budget_tokens"),
        ({"query": "q", "strategy": "bm42"}, "unknown selection strategy"),
    ],
)
def test_bad_input_gets_a_clear_error(context_dir: Path, options: dict[str, Any], message: str) -> None:
    with session(context_dir) as s:
        fill(s)
        with pytest.raises(ConfigError, match=message):
            s.select_relevant_contexts(**options)


def test_pointers_of_another_session_are_skipped(context_dir: Path, tmp_path: Path) -> None:
    with session(context_dir) as s, session(tmp_path / "other") as other:
        mine = fill(s)
        theirs = other.save_context("get_weather", {"city": "Paris"}, "Sunny in Paris")
        with capture_logs() as logs:
            picked = s.select_relevant_contexts("weather Paris", pointers=[theirs, mine["weather"], mine["price"]])
        assert [p.id for p in picked] == [mine["weather"].id]
        assert any(e["event"] == "skipped" for e in logs)
        with pytest.raises(ConfigError, match="ContextPointer"):
            s.select_relevant_contexts("weather", pointers=["ctx:abc"])  # type: ignore[list-item]


def test_previews_are_captured_at_save_time_and_redacted(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:
        text = s.save_context("read_file", {"path": "a.md"}, "# Title\nBody text " * 50)
        data = s.save_context("fetch", {}, {"token": "t0ps3cret", "items": [1, 2]})
        leaked = s.save_context("echo", {}, "Authorization: Bearer abcdefghijklmnop1234")
    assert text.preview.startswith("# Title\nBody text")  # a string result previews as itself
    assert len(text.preview) == 200
    assert data.preview == f'{{"token":"{REDACTED}","items":[1,2]}}'
    assert "abcdefghijklmnop1234" not in leaked.preview


def test_the_index_follows_clears_and_resume(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        pointers = fill(s)
        s.save_context("get_weather", {"city": "Oslo"}, "x" * 40_000)  # on disk
        s.clear_context_dir()  # drops the disk one from the index too
        assert names(s.select_relevant_contexts("Oslo weather")) == ["get_weather"]
        assert s.select_relevant_contexts("Oslo weather")[0].id == pointers["weather"].id
        s.clear_pointers()
        assert s.select_relevant_contexts("weather") == []
        fill(s)
    with ContextSession.resume(s.session_id, context_dir, keep=False) as resumed:
        assert names(resumed.select_relevant_contexts("AAPL stock price", k=1)) == ["get_stock_price"]


def test_strategies_are_chosen_by_name_or_object(context_dir: Path) -> None:
    from toolctx.selection import bm25, in_task, recency

    with session(context_dir) as s:
        with s.task("setup"):
            s.save_context("search_code", {"query": "revenue"}, "revenue.py")
        fill(s)
        assert names(s.select_relevant_contexts("revenue", strategy=bm25() & in_task("setup"))) == ["search_code"]
        assert names(s.select_relevant_contexts("anything", strategy="recency", k=1)) == ["run_tests"]
        assert len(s.select_relevant_contexts("zzz", strategy="keyword")) == 6  # the seed falls back to all
        mixed = s.select_relevant_contexts("revenue", strategy=bm25() * 0.8 + recency() * 0.2, k=3)
        assert len(mixed) == 3


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=12),
    budget=st.integers(min_value=0, max_value=2000),
    k=st.none() | st.integers(min_value=1, max_value=6),
    ratio=st.sampled_from([0.0, 0.25, 0.9]),
)
def test_the_budget_is_never_exceeded_and_results_are_candidates(
    sizes: list[int], budget: int, k: int | None, ratio: float
) -> None:
    with tempfile.TemporaryDirectory() as tmp, session(Path(tmp)) as s:
        for i, size in enumerate(sizes):
            s.save_context("search", {"q": f"revenue report {i % 3}"}, "revenue " * (size // 8))
        everyone = {p.id for p in s.get_all_pointers()}
        picked = s.select_relevant_contexts("revenue report", k=k, budget_tokens=budget, min_score_ratio=ratio)
        assert sum(p.tokens for p in picked) <= budget
        assert {p.id for p in picked} <= everyone
        assert len({p.id for p in picked}) == len(picked)
        if k is not None:
            assert len(picked) <= k
        again = s.select_relevant_contexts("revenue report", k=k, budget_tokens=budget, min_score_ratio=ratio)
        assert [p.id for p in again] == [p.id for p in picked]


def test_a_small_pointer_deep_in_the_ranking_still_fills_the_budget(context_dir: Path) -> None:
    with session(context_dir, threshold=1 << 30, memory_budget=1 << 30) as s:
        for i in range(100):  # each far over the budget, and ranked first (the query term twice)
            s.save_context("report", {"topic": "revenue revenue", "n": i}, "revenue " * 2000)
        small = s.save_context("note", {"n": 0}, "revenue")
        picked = s.select_relevant_contexts("revenue", budget_tokens=50, min_score_ratio=0)
        assert [p.id for p in picked] == [small.id]


def test_long_previews_are_queued_only_up_to_a_backlog(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolctx.sessions._saving._LONG_PREVIEWS", 3)
    with session(context_dir, threshold=0) as s:  # outputs on disk: their text is queued at save time
        tail = " needle"
        for i in range(5):  # the word sits past the 200 characters a pointer keeps
            s.save_context("fetch", {"n": i}, "x " * 150 + tail)
        assert s._saver.index.backlog == 5
        found = s.select_relevant_contexts("needle", min_score_ratio=0)
        assert sorted(p.args["n"] for p in found) == [0, 1, 2]  # the last two were queued with short previews
        s.save_context("fetch", {"n": 5}, "x " * 150 + tail)  # the backlog is empty again: long preview
        assert 5 in {p.args["n"] for p in s.select_relevant_contexts("needle", min_score_ratio=0)}


def test_the_index_knows_each_calls_token_estimate(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointers = fill(s)
        s.select_relevant_contexts("revenue")
        tokens = s._saver.index._tokens.tolist()
        assert tokens == [p.tokens for p in pointers.values()]


def test_in_memory_outputs_are_indexed_from_their_payload(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolctx.sessions._saving._LONG_PREVIEWS", 0)
    with session(context_dir) as s:
        for i in range(3):
            s.save_context("fetch", {"n": i}, "x " * 150 + " needle")
        pointer = s.get_all_pointers()[0]
        assert pointer.preview == ("x " * 150)[:200]
        assert len(s.select_relevant_contexts("needle", min_score_ratio=0)) == 3


def test_a_selection_racing_a_clear_ranks_the_calls_it_started_with(context_dir: Path) -> None:
    # Another thread clears the session while a strategy is walking the candidates: the selection
    # goes on with the calls that were there when it started, and raises nothing.
    from toolctx.selection import Scored, SelectionState

    with session(context_dir) as s:
        fill(s)

        def clear_then_rank(state: SelectionState) -> list[Scored]:
            s.clear_pointers()
            return [Scored(pointer, 1.0) for pointer in state.candidates]

        chosen = s.select_relevant_contexts("revenue", strategy=clear_then_rank)
        assert sorted(names(chosen)) == sorted(
            ["get_income_statements", "get_stock_price", "search_code", "get_weather", "run_tests"]
        )
        assert s.get_all_pointers() == []  # the clear itself took effect


def test_a_search_racing_a_clear_and_a_new_call_finds_the_new_call(context_dir: Path) -> None:
    # The index the search reads is the session's own: cleared, then holding a call saved after the
    # clear, which the candidates listed at the start do not have.
    from toolctx.selection import SelectionState, bm25

    with session(context_dir) as s:
        fill(s)
        search = bm25()

        def clear_save_then_search(state: SelectionState) -> list[Any]:
            s.clear_pointers()
            s.save_context("get_weather", {"city": "Oslo"}, "Snow in Oslo")
            return search(state)

        chosen = s.select_relevant_contexts("weather in Oslo", strategy=clear_save_then_search)
        assert all(p.args == {"city": "Oslo"} for p in chosen)  # what it finds is the new call, and nothing raised

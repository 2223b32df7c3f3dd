from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx import ConfigError, ContextPointer, ContextSession, session
from toolctx.selection import (
    SelectionState,
    Strategy,
    as_strategy,
    bm25,
    in_query,
    in_task,
    keyword,
    recency,
)
from toolctx.selection._base import Candidates

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def state(pointers: list[ContextPointer], query: str, **options: Any) -> SelectionState:
    return SelectionState(query=query, candidates=Candidates.of(pointers), **options)


@pytest.fixture
def catalogue(context_dir: Path) -> Any:
    with session(context_dir) as s:
        with s.task(1), s.query("AAPL financials"):
            s.save_context("get_income_statements", {"ticker": "AAPL", "period": "annual"}, {"revenue": 391035})
            s.save_context("get_stock_price", {"ticker": "AAPL"}, {"price": 227.5})
        with s.task(2):
            s.save_context("search_code", {"query": "quarterly revenue"}, ["src/finance/revenue.py:12"])
            s.save_context("read_file", {"path": "src/finance/revenue.py"}, "def quarterly_revenue(ticker): ...")
        s.save_context("get_weather", {"city": "Paris"}, {"sky": "sunny", "celsius": 21})
        yield s


def ids(scored: list[Any]) -> list[str]:
    return [s.pointer.tool_name for s in scored]


def test_bm25_uses_names_arguments_and_result_previews(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    assert ids(bm25()(state(pointers, "how sunny is it in Paris?")))[0] == "get_weather"
    assert ids(bm25()(state(pointers, "celsius")))[0] == "get_weather"  # only in the result
    assert ids(bm25()(state(pointers, "revenue.py source")))[0] == "read_file"
    assert ids(bm25()(state(pointers, "AAPL share price")))[0] == "get_stock_price"
    assert bm25()(state(pointers, "kubernetes pods")) == []


def test_bm25_with_and_without_the_session_index_agree(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    with_index = bm25()(state(pointers, "AAPL revenue", index=catalogue._saver.index))
    without = bm25()(state(pointers, "AAPL revenue"))
    assert ids(with_index) == ids(without)
    assert [s.score for s in with_index] == pytest.approx([s.score for s in without], rel=1e-5)


def test_keyword_is_the_seed_overlap(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    assert ids(keyword()(state(pointers, "AAPL income statements"))) == ["get_income_statements", "get_stock_price"]
    nothing = keyword()(state(pointers, "zzz"))
    assert [s.score for s in nothing] == [0.0] * 5


def test_recency_prefers_newer_with_the_given_clock(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    later = pointers[-1].timestamp + timedelta(hours=1)
    ranked = recency(half_life=timedelta(hours=1))(state(pointers, "anything", clock=lambda: later))
    assert ids(ranked)[0] == "get_weather"
    assert ranked[0].score == pytest.approx(0.5, rel=1e-3)
    with pytest.raises(ConfigError, match="half_life"):
        recency(half_life=timedelta(0))


def test_scopes(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    assert ids(in_task(2)(state(pointers, "x"))) == ["search_code", "read_file"]
    assert ids(in_query("AAPL financials")(state(pointers, "x"))) == ["get_income_statements", "get_stock_price"]
    assert in_query(query_id=catalogue.hash_query("AAPL financials")).query_id == catalogue.hash_query(
        "AAPL financials"
    )
    with pytest.raises(ConfigError, match="exactly one"):
        in_query()


def test_and_restricts_to_a_scope(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    assert ids((bm25() & in_task(2))(state(pointers, "revenue"))) == ["search_code", "read_file"]
    assert ids((bm25() & in_task(1))(state(pointers, "revenue"))) == ["get_income_statements"]


def test_weighted_sum_normalises_each_part(catalogue: ContextSession) -> None:
    saved = catalogue.get_all_pointers()  # an hour apart, the weather call newest
    pointers = [p.model_copy(update={"timestamp": NOW - timedelta(hours=len(saved) - i)}) for i, p in enumerate(saved)]
    s = state(pointers, "revenue", clock=lambda: NOW)
    text_only = (bm25() * 1.0 + recency() * 0.0)(s)
    assert ids(text_only) == ids(bm25()(s))
    mostly_recent = (bm25() * 0.1 + recency(half_life=timedelta(minutes=10)) * 10)(s)
    assert ids(mostly_recent)[0] == "get_weather"
    mostly_text = (bm25() * 10 + recency(half_life=timedelta(minutes=10)) * 0.1)(s)
    assert ids(mostly_text)[0] == ids(bm25()(s))[0]
    assert max(x.score for x in (0.5 * bm25() + 0.5 * bm25())(s)) == pytest.approx(1.0)
    assert "bm25" in repr(bm25() * 0.8 + recency() * 0.2)
    with pytest.raises(ConfigError, match="weight must be a finite number >= 0, got -1"):
        bm25() * -1


def test_plain_callables_are_strategies(catalogue: ContextSession) -> None:
    pointers = catalogue.get_all_pointers()
    reverse = as_strategy(lambda st: list(reversed(st.candidates)))
    assert ids(reverse(state(pointers, "q")))[0] == "get_weather"
    scored = as_strategy(lambda st: [(p, len(p.tool_name)) for p in st.candidates])
    assert ids(scored(state(pointers, "q")))[0] == "get_income_statements"
    outsider = pointers[0].model_copy(update={"id": "not-a-candidate"})
    sneaky = as_strategy(lambda st: [(outsider, 100.0), (pointers[1], 1.0)])
    assert ids(sneaky(state(pointers, "q"))) == ["get_stock_price"]  # only candidates can be chosen
    combined = bm25() + (lambda st: [(p, 1.0) for p in st.candidates if p.tool_name == "get_weather"])
    assert "get_weather" in ids(combined(state(pointers, "AAPL")))


@pytest.mark.parametrize(
    ("returns", "message"),
    [
        (lambda st: None, "returned None; return a list of pointers"),
        (lambda st: 3, "returned 3; return a list of pointers"),
        (lambda st: ["get_weather"], "returned the item 'get_weather'"),
        (lambda st: [(st.candidates[0], "high")], "score selection strategy '<lambda>' gave must be a finite"),
        (lambda st: [(st.candidates[0], float("nan"))], "must be a finite number"),
    ],
    ids=["None", "a number", "names", "a text score", "a NaN score"],
)
def test_a_callable_strategy_returning_the_wrong_thing_gets_a_clear_error(
    catalogue: ContextSession, returns: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        catalogue.select_relevant_contexts("weather", strategy=returns)


def test_a_strategy_class_returning_the_wrong_thing_gets_a_clear_error(catalogue: ContextSession) -> None:
    class Broken(Strategy):
        name = "broken"

        def rank(self, state: Any) -> Any:
            return None

    with pytest.raises(ConfigError, match=r"selection strategy broken\(\) returned None; a Strategy's rank"):
        catalogue.select_relevant_contexts("weather", strategy=Broken())


@pytest.mark.parametrize("bad", ["bm42", 42, None])
def test_unknown_strategies_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="strategy"):
        as_strategy(bad)


names = st.sampled_from(["search_code", "read_file", "get_weather", "get_price", "run_tests"])
words = st.sampled_from(["alpha", "beta", "gamma", "delta", "revenue", "paris", "error", "AAPL"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(names, words, words), min_size=1, max_size=15), st.lists(words, min_size=1, max_size=3))
def test_every_strategy_returns_candidates_only_best_first_and_deterministically(
    calls: list[tuple[str, str, str]], query_words: list[str]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, session(Path(tmp)) as s:
        for name, arg, result in calls:
            s.save_context(name, {"q": arg}, result)
        pointers = s.get_all_pointers()
        query = " ".join(query_words)
        for strategy in (bm25(), keyword(), recency(), bm25() * 0.7 + recency() * 0.3, bm25() & in_task(1)):
            first = strategy(state(pointers, query, index=s._saver.index, clock=lambda: NOW))
            again = strategy(state(pointers, query, clock=lambda: NOW))
            assert [x.pointer.id for x in first] == [x.pointer.id for x in again]
            assert {x.pointer.id for x in first} <= {p.id for p in pointers}
            scores = [x.score for x in first]
            assert scores == sorted(scores, reverse=True)

"""The BM25 index: scores, ties, candidates, removal and budgets, with numpy and in pure Python."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx import ToolctxWarning
from toolctx.selection import _index as index_module
from toolctx.selection._index import K1, B, SearchIndex
from toolctx.selection._text import tokenize


@pytest.fixture(scope="module", autouse=True, params=["numpy", "pure-python"])
def scoring(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs twice: scoring with numpy, and as an install without numpy does."""
    accelerator = pytest.importorskip("numpy") if request.param == "numpy" else False
    saved = index_module._numpy
    index_module._numpy = accelerator
    yield request.param
    index_module._numpy = saved


def reference_scores(docs: dict[str, tuple[str, str]], query: str) -> dict[str, float]:
    """Textbook BM25 with Lucene's idf and double weight for the boosted field."""
    counts = {}
    for doc_id, (boosted, text) in docs.items():
        c = Counter(tokenize(boosted))
        for term in c:
            c[term] *= 2
        c.update(tokenize(text))
        counts[doc_id] = {t: min(n, 255) for t, n in c.items()}
    lengths = {d: float(sum(Counter(tokenize(b)).values()) * 2 + len(tokenize(t))) for d, (b, t) in docs.items()}
    average = sum(lengths.values()) / len(docs)
    scores: dict[str, float] = {}
    for term, query_tf in Counter(tokenize(query)).items():
        df = sum(1 for c in counts.values() if term in c)
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for doc_id, c in counts.items():
            tf = c.get(term, 0)
            if tf:
                norm = K1 * (1 - B + B * lengths[doc_id] / average)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * query_tf * tf * (K1 + 1) / (tf + norm)
    return scores


DOCS = {
    "a": ("get_income_statements AAPL annual", "revenue 391035 net income 93736"),
    "b": ("get_stock_price AAPL", "price 227.5 currency USD"),
    "c": ("search_code revenue", "src/finance/revenue.py line 12 def quarterly_revenue"),
    "d": ("get_weather Paris", "sunny 21 degrees"),
    "e": ("read_file src/finance/revenue.py", "def quarterly_revenue(ticker): return fetch(ticker)"),
}


def build(docs: dict[str, tuple[str, str]]) -> SearchIndex:
    index = SearchIndex()
    for doc_id, (boosted, text) in docs.items():
        index.add(doc_id, boosted, text)
    return index


def test_scores_match_textbook_bm25() -> None:
    index = build(DOCS)
    for query in ["AAPL revenue", "quarterly revenue python file", "weather in Paris", "income"]:
        expected = reference_scores(DOCS, query)
        got = dict(index.search(tokenize(query)))
        assert got.keys() == expected.keys()
        for doc_id, score in expected.items():
            assert got[doc_id] == pytest.approx(score, rel=1e-5)


def test_best_first_with_ties_in_insertion_order() -> None:
    index = build({"x": ("alpha", ""), "y": ("alpha", ""), "z": ("alpha beta", "")})
    assert [d for d, _ in index.search(["alpha"])] == ["x", "y", "z"]
    assert [d for d, _ in index.search(["alpha"], k=2)] == ["x", "y"]
    assert next(d for d, _ in index.search(["beta", "alpha"])) == "z"


def test_candidates_restrict_and_k_limits() -> None:
    index = build(DOCS)
    assert [d for d, _ in index.search(tokenize("revenue"), candidates=["c", "d"])] == ["c"]
    assert len(index.search(tokenize("revenue AAPL"), k=1)) == 1
    assert index.search([]) == []
    assert index.search(["nothing-like-this"]) == []


def test_removal_keeps_scores_exact() -> None:
    index = build(DOCS)
    index.remove(["a", "b", "missing"])
    rest = {k: v for k, v in DOCS.items() if k not in {"a", "b"}}
    expected = reference_scores(rest, "revenue AAPL")
    got = dict(index.search(tokenize("revenue AAPL")))
    assert got.keys() == expected.keys()
    for doc_id, score in expected.items():
        assert got[doc_id] == pytest.approx(score, rel=1e-5)
    index.add("a", *DOCS["a"])  # an id may come back
    assert "a" in dict(index.search(tokenize("AAPL")))


def test_removing_everything_or_clearing_empties_it() -> None:
    index = build(DOCS)
    index.remove(list(DOCS))
    assert len(index) == 0
    assert index.search(["revenue"]) == []
    index = build(DOCS)
    index.clear()
    assert len(index) == 0


def test_documents_are_indexed_at_the_next_search() -> None:
    index = SearchIndex()
    for i in range(3000):
        index.add(f"d{i}", lambda i=i: f"tool{i % 7}", f"row {i}")
    assert index.backlog == 3000  # adding costs nothing on the call path
    assert len(index) == 3000
    assert len(index.search(["tool3"])) == 3000 // 7 + (1 if 3000 % 7 > 3 else 0)
    assert index.backlog == 0


def test_boosted_text_may_be_a_function_called_at_index_time() -> None:
    calls: list[int] = []
    index = SearchIndex()
    index.add("x", lambda: calls.append(1) or "lazy name", "")
    assert calls == []
    assert index.search(tokenize("lazy"))[0][0] == "x"
    assert calls == [1]


def test_concurrent_adds_and_searches() -> None:
    index = SearchIndex()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(500):
            index.add(f"{n}-{i}", f"writer{n} item", "payload text")

    def reader() -> None:
        try:
            for _ in range(200):
                index.search(["item"], k=5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)] + [threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(index.search(["item"])) == 1500


words = st.sampled_from(["revenue", "aapl", "income", "weather", "paris", "code", "file", "error", "test", "price"])
texts = st.lists(words, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), st.tuples(texts, texts), min_size=1, max_size=12), texts
)
def test_any_corpus_matches_the_reference(docs: dict[str, tuple[str, str]], query: str) -> None:
    got = dict(build(docs).search(tokenize(query)))
    expected = reference_scores(docs, query)
    assert got.keys() == {d for d, s in expected.items() if s > 0}
    for doc_id, score in got.items():
        assert score == pytest.approx(expected[doc_id], rel=1e-4)


def test_a_budgeted_search_takes_what_fits_best_first() -> None:
    index = SearchIndex()
    for doc_id, tokens in [("big", 900), ("mid", 400), ("small", 100), ("tiny", 10)]:
        index.add(doc_id, "revenue " * (tokens // 100 + 1), "", tokens)  # bigger documents rank higher here
    ranked = [d for d, _ in index.search(["revenu"])]
    assert ranked == ["big", "mid", "small", "tiny"]
    assert [d for d, _ in index.search(["revenu"], budget=500)] == ["mid", "small"]
    assert [d for d, _ in index.search(["revenu"], budget=515)] == ["mid", "small", "tiny"]
    assert [d for d, _ in index.search(["revenu"], budget=515, k=1)] == ["mid"]
    assert index.search(["revenu"], budget=5) == []


vocabulary = st.sampled_from(["revenue", "aapl", "income", "weather", "paris", "code", "error", "price", "q3", "2024"])
documents = st.lists(
    st.tuples(
        st.lists(vocabulary, max_size=6).map(" ".join),
        st.lists(vocabulary, max_size=10).map(" ".join),
        st.integers(0, 400),
    ),
    min_size=1,
    max_size=25,
)
queries = st.lists(vocabulary, min_size=1, max_size=5)


def build_sized(docs: list[tuple[str, str, int]]) -> SearchIndex:
    index = SearchIndex()
    for number, (boosted, text, tokens) in enumerate(docs):
        index.add(f"d{number}", boosted, text, tokens)
    return index


@settings(max_examples=40, deadline=None)
@given(documents, queries, st.integers(1, 30), st.floats(0.05, 1.0), st.integers(0, 1200), st.data())
def test_options_only_cut_the_full_ranking(
    docs: list[tuple[str, str, int]], query: list[str], k: int, ratio: float, budget: int, data: st.DataObject
) -> None:
    index = build_sized(docs)
    ranking = index.search(query)
    assert [s for _, s in ranking] == sorted((s for _, s in ranking), reverse=True)
    assert index.search(query, k=k) == ranking[:k]
    if ranking:
        best = ranking[0][1]
        assert index.search(query, min_ratio=ratio) == [(d, s) for d, s in ranking if s >= best * ratio]
    allowed = set(data.draw(st.lists(st.sampled_from([f"d{n}" for n in range(len(docs))]))))
    assert index.search(query, candidates=allowed) == [(d, s) for d, s in ranking if d in allowed]
    # A budget walks the ranking best first, skipping what no longer fits.
    tokens = {f"d{n}": doc[2] for n, doc in enumerate(docs)}
    expected, spent = [], 0
    for doc_id, score in ranking:
        if spent + tokens[doc_id] <= budget:
            spent += tokens[doc_id]
            expected.append((doc_id, score))
            if len(expected) == k or spent == budget:
                break
    assert index.search(query, budget=budget, k=k) == expected


@settings(max_examples=40, deadline=None)
@given(documents, queries, st.booleans(), st.data())
def test_removal_leaves_the_index_a_fresh_one_would_be(
    docs: list[tuple[str, str, int]], query: list[str], indexed: bool, data: st.DataObject
) -> None:
    index = build_sized(docs)
    if indexed:
        index.search(["warm"])  # removal then compacts the postings; otherwise it empties the queue
    gone = set(data.draw(st.lists(st.integers(0, len(docs) - 1), max_size=len(docs))))
    index.remove(f"d{n}" for n in gone)
    fresh = SearchIndex()
    for number, (boosted, text, tokens) in enumerate(docs):
        if number not in gone:
            fresh.add(f"d{number}", boosted, text, tokens)
    # Same idf, same average length, same order among ties: the very same floats.
    assert index.search(query) == fresh.search(query)
    assert index.search(query, budget=300, k=4) == fresh.search(query, budget=300, k=4)
    assert len(index) == len(docs) - len(gone)
    if gone:  # an id that comes back is the newest document
        number = min(gone)
        for target in (index, fresh):
            target.add(f"d{number}", *docs[number])
        assert index.search(query) == fresh.search(query)


def test_a_document_whose_text_fails_is_indexed_by_id_and_the_rest_of_the_batch_survives() -> None:
    class Broken:
        id = "broken"
        tokens = 1

        def search_text(self) -> str:
            raise RuntimeError("describer failed")

        def index_text(self) -> str:
            return ""

    index = SearchIndex()
    index.add("a", "alpha report", "")
    index.add_document(Broken())
    index.add("b", "beta report", "")
    with pytest.warns(ToolctxWarning, match="could not read the text of 'broken'"):
        found = index.search(["report"])
    assert sorted(i for i, _ in found) == ["a", "b"]
    assert len(index) == 3

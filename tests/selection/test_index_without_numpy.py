"""The core install has no numpy: the index scores in pure Python, with the very results numpy gives."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.selection.test_index import documents, vocabulary
from toolctx.selection import _index as index_module
from toolctx.selection._index import SearchIndex

numpy = pytest.importorskip("numpy")


@contextmanager
def scoring(accelerator: Any) -> Iterator[None]:
    """Score with numpy (the module) or in pure Python (False) inside the block."""
    saved = index_module._numpy
    index_module._numpy = accelerator
    try:
        yield
    finally:
        index_module._numpy = saved


def both_ways(index: SearchIndex, query: list[str], **options: Any) -> list[tuple[str, float]]:
    with scoring(numpy):
        accelerated = index.search(query, **options)
    with scoring(False):
        plain = index.search(query, **options)
    assert plain == accelerated  # the same ids, in the same order, with the same floats
    return plain


options = st.fixed_dictionaries(
    {},
    optional={
        "k": st.integers(1, 12),
        "min_ratio": st.sampled_from([0.0, 0.3, 0.9, 1.0]),
        "budget": st.integers(0, 900),
    },
)


@settings(max_examples=50, deadline=None)
@given(documents, st.lists(st.lists(vocabulary, min_size=1, max_size=5), min_size=1, max_size=3), options, st.data())
def test_numpy_and_pure_python_give_the_same_results(
    docs: list[tuple[str, str, int]], queries: list[list[str]], chosen: dict[str, Any], data: st.DataObject
) -> None:
    index = SearchIndex()
    for number, (boosted, text, tokens) in enumerate(docs):
        index.add(f"d{number}", boosted, text, tokens)
    ids = [f"d{n}" for n in range(len(docs))]
    for query in queries:
        both_ways(index, query, **chosen)
        candidates = data.draw(st.lists(st.sampled_from(ids), unique=True))
        both_ways(index, query, candidates=candidates, **chosen)
    index.remove(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    for query in queries:
        both_ways(index, query, **chosen)


def test_ties_keep_older_documents_first_either_way() -> None:
    index = SearchIndex()
    for number in range(40):  # four groups of identical documents, one set of scores each
        index.add(f"d{number}", f"report {'revenue ' * (number % 4)}", "quarterly", 10)
    ranked = both_ways(index, ["revenu", "report"])
    assert [d for d, _ in ranked[:10]] == [f"d{n}" for n in range(3, 40, 4)]
    assert both_ways(index, ["revenu", "report"], k=3) == ranked[:3]
    assert both_ways(index, ["revenu", "report"], budget=25) == ranked[:2]


def test_a_budget_is_filled_the_same_way_without_numpy() -> None:
    index = SearchIndex()
    for doc_id, tokens in [("big", 900), ("mid", 400), ("small", 100), ("tiny", 10)]:
        index.add(doc_id, "revenue " * (tokens // 100 + 1), "", tokens)
    with scoring(False):
        assert [d for d, _ in index.search(["revenu"], budget=500)] == ["mid", "small"]
        assert [d for d, _ in index.search(["revenu"], budget=515)] == ["mid", "small", "tiny"]
        assert [d for d, _ in index.search(["revenu"], budget=515, k=1)] == ["mid"]
        assert index.search(["revenu"], budget=5) == []


SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.modules["numpy"] = None  # as if numpy were not installed: importing it fails
    import toolctx
    from toolctx.selection import _index as index_module
    from toolctx.selection._index import SearchIndex

    index = SearchIndex()
    for number in range(60):
        index.add(f"d{number}", f"tool{number % 5} revenue", f"row {number} " + "price " * (number % 7), number * 3)
    found = {"top": index.search(["revenu", "price"], k=5), "budget": index.search(["price"], budget=100)}
    index.remove([f"d{n}" for n in range(0, 60, 2)])
    found["after_remove"] = index.search(["revenu", "price", "tool3"])

    with toolctx.session(sys.argv[1], threshold=0) as s:  # outputs on disk, so clearing them removes documents
        s.save_context("get_income_statements", {"ticker": "AAPL"}, {"revenue": 391035})
        s.save_context("get_weather", {"city": "Paris"}, "Sunny in Paris")
        found["session"] = [p.tool_name for p in s.select_relevant_contexts("AAPL revenue", k=1)]
        s.clear_context_dir()
        found["cleared"] = s.select_relevant_contexts("AAPL revenue")

    found["numpy"] = sys.modules.get("numpy") is not None or index_module._numpy is not False
    print(json.dumps(found))
    """
)


def test_the_index_works_where_numpy_cannot_be_imported(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(out.stdout)
    assert found.pop("numpy") is False
    assert found.pop("session") == ["get_income_statements"]
    assert found.pop("cleared") == []
    # The same searches here, where numpy scores them, give the same ids and floats.
    index = SearchIndex()
    for number in range(60):
        index.add(f"d{number}", f"tool{number % 5} revenue", f"row {number} " + "price " * (number % 7), number * 3)
    with scoring(numpy):
        expected = {"top": index.search(["revenu", "price"], k=5), "budget": index.search(["price"], budget=100)}
        index.remove([f"d{n}" for n in range(0, 60, 2)])
        expected["after_remove"] = index.search(["revenu", "price", "tool3"])
    assert found == json.loads(json.dumps(expected))
    assert all(found.values())  # each search found something

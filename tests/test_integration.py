"""One agent turn on a real temporary directory: save -> load -> select -> clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from toolctx import StorageKind, persist_context, session
from toolctx._naming import LOCK_NAME, MARKER_NAME


@persist_context(description="{ticker} income statements ({period})")
def income_statements(ticker: str, period: str = "annual", limit: int = 4) -> list[dict[str, Any]]:
    return [{"ticker": ticker, "year": 2024 - i, "revenue": 1000 - i, "notes": "é" * 20_000} for i in range(limit)]


@persist_context
def news(ticker: str, topic: str) -> list[str]:
    return [f"{ticker} {topic} headline {i}" for i in range(3)]


@persist_context
def weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 21.5}


def test_an_agent_turn_end_to_end(tmp_path: Path) -> None:
    context_dir = tmp_path / "agent-context"
    with session(context_dir) as s:
        with s.query("How did AAPL revenue develop?") as qid, s.task(1):
            statements = income_statements("AAPL")
            news("AAPL", "earnings")
        weather("Paris")

        pointers = s.get_all_pointers()
        assert [p.storage for p in pointers] == [StorageKind.DISK, StorageKind.MEMORY, StorageKind.MEMORY]
        big = pointers[0]
        assert big.filepath is not None
        on_disk = orjson.loads(Path(big.filepath).read_bytes())
        assert on_disk["result"] == statements
        assert on_disk["tool_description"] == "AAPL income statements (annual)"
        assert on_disk["query_id"] == qid

        assert [p.tool_name for p in s.get_pointers_for_query(qid)] == ["income_statements", "news"]
        assert [p.tool_name for p in s.get_pointers_for_task(1)] == ["income_statements", "news"]

        chosen = s.select_relevant_contexts("AAPL income statements revenue", k=2)
        assert [p.tool_name for p in chosen] == ["income_statements", "news"]
        loaded = s.load_contexts(chosen)
        assert loaded[0].result == statements
        assert loaded[1].result == ["AAPL earnings headline 0", "AAPL earnings headline 1", "AAPL earnings headline 2"]

        s.clear()
        assert len(s) == 0
        assert s.load_contexts(chosen) == []
        assert sorted(p.name for p in s.session_dir.iterdir()) == [MARKER_NAME, LOCK_NAME]
    assert list(context_dir.iterdir()) == []

"""Stores, debug events and logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.conftest import files_under
from tests.sessions.helpers import BIG, save
from toolctx import (
    ContextSession,
    StorageKind,
    ToolctxWarning,
    session,
)
from toolctx.storage import DictStore

# -- stores, events and logs -----------------------------------------------------------------


def test_a_memory_store_keeps_everything_off_disk(context_dir: Path) -> None:
    store = DictStore()
    with session(context_dir, store=store, threshold=0) as s:
        pointer = save(s, result=BIG)
        assert pointer.storage is StorageKind.DISK
        assert pointer.filepath is None
        assert pointer.filename in store.list()
        assert s.load_contexts([pointer])[0].result == BIG
    assert store.list() == []
    assert files_under(context_dir) == []


def test_on_debug_and_structlog_receive_events(context_dir: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    with capture_logs() as logs:
        with session(context_dir, on_debug=lambda e, d: events.append((e, d)), memory_budget=100) as s:
            pointer = save(s, result="y" * 80)
            save(s, result="y" * 80)
            s.load_contexts([pointer, "missing"])
        names = [e for e, _ in events]
    for expected in ("saved", "spilled", "loaded", "skipped", "cleared", "closed"):
        assert expected in names
        assert any(e["event"] == expected and e["session"] == s.session_id for e in logs)
    saved = dict(events)["saved"]
    assert saved["tool"] == "search"


def test_a_failing_on_debug_callback_is_reported_not_raised(context_dir: Path) -> None:
    def boom(event: str, data: dict[str, Any]) -> None:
        raise RuntimeError("callback bug")

    def use(s: ContextSession) -> None:
        s.save_context("t", {}, 1)
        s.close()

    s = session(context_dir, on_debug=boom)
    with pytest.warns(ToolctxWarning, match="on_debug"):
        use(s)
    assert s.closed


def test_unconfigured_structlog_goes_to_stdlib_logging(context_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="toolctx")
    with session(context_dir) as s:
        save(s)
    assert any("event='saved'" in r.getMessage() for r in caplog.records if r.name == "toolctx")

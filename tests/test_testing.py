"""toolctx.testing: what a user's own test suite uses to isolate toolctx."""

from __future__ import annotations

import contextvars
from pathlib import Path

import pytest

import toolctx.testing
from toolctx import current_session, persist_context, session


@persist_context
def fetch(n: int) -> str:
    return "x" * n


def test_session_for_test_stores_calls_and_cleans_up(tmp_path: Path) -> None:
    with toolctx.testing.session_for_test(tmp_path) as s:
        fetch(100_000)
        assert current_session() is s
        [pointer] = s.get_all_pointers()
        assert Path(pointer.filepath or "").exists()
    assert s.closed
    assert list(tmp_path.iterdir()) == []


def test_session_for_test_fails_when_the_test_leaves_a_session_open(tmp_path: Path) -> None:
    leaked = session(tmp_path / "leaked")

    def leaky_test() -> None:
        with pytest.raises(AssertionError, match="left open"), toolctx.testing.session_for_test(tmp_path / "t"):
            leaked.__enter__()
        assert toolctx.testing.open_sessions() == [leaked]
        leaked.__exit__(None, None, None)

    contextvars.copy_context().run(leaky_test)
    assert leaked.closed
    assert toolctx.testing.open_sessions() == []


def test_reset_ends_the_default_session_and_reports_open_blocks(tmp_path: Path) -> None:
    default = current_session()
    fetch(10)
    with session(tmp_path) as s:
        assert toolctx.testing.reset() == [s]
        assert default.closed
    assert toolctx.testing.reset() == []

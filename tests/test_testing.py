"""toolctx.testing: what a user's own test suite uses to isolate toolctx."""

from __future__ import annotations

import contextvars
from datetime import datetime
from pathlib import Path

import pytest

import toolctx.memory  # imported here, once: pytester's inline runs drop modules first
import toolctx.testing  # imported inside them, and numpy's extension cannot be imported twice
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


# -- the pytest plugin, run as a user's suite would run it -------------------------------------

pytest_plugins = ["pytester"]

USER_TESTS = """
import toolctx
from toolctx import persist_context


@persist_context
def search_code(query: str, limit: int = 10) -> list[str]:
    return [f"{query}-{i}" for i in range(limit)]


@persist_context
def fail(reason: str) -> None:
    raise RuntimeError(reason)


def test_captures_what_the_tools_stored(toolctx_contexts, toolctx_session, toolctx_clock):
    search_code("retry", limit=2)
    toolctx_clock.advance(seconds=5)
    try:
        fail("boom")
    except RuntimeError:
        pass
    assert toolctx.current_session() is toolctx_session
    assert toolctx_contexts.tool_names == ["search_code", "fail"]
    [call] = toolctx_contexts.of("search_code")
    assert call.args == {"query": "retry", "limit": 2}
    assert call.result == ["retry-0", "retry-1"]
    assert toolctx_contexts.last().error.message == "boom"
    assert [p.id for p in toolctx_contexts.pointers] == ["0000000", "0000001"]
    assert toolctx_session.session_id == "test-session"
    stamps = [p.timestamp.isoformat() for p in toolctx_contexts.pointers]
    assert stamps == ["2025-01-01T00:00:00+00:00", "2025-01-01T00:00:05+00:00"]


def test_each_test_starts_empty(toolctx_contexts):
    assert len(toolctx_contexts) == 0
    search_code("again", limit=1)
    assert [p.id for p in toolctx_contexts.pointers] == ["0000000"]


def test_memory_runs_on_the_same_clock(toolctx_memory, toolctx_clock):
    agent = toolctx_memory.agent("worker")
    item = agent.save("TASK", "ship it")
    assert item.created_at == toolctx_clock.now()
    toolctx_clock.advance(hours=2)
    assert agent.load()[0].last_accessed == toolctx_clock.now()
    assert toolctx_memory.dialect == "sqlite"
"""


def test_the_plugin_s_fixtures_need_no_import_and_fix_ids_and_clock(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_plugin_leaves_a_project_s_own_fixture_names_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def clock():
    return "the project's clock"

@pytest.fixture
def store():
    return "the project's store"

@pytest.fixture
def session():
    return "the project's session"
"""
    )
    pytester.makepyfile(
        test_names="""
def test_names(clock, store, session, toolctx_clock, toolctx_session):
    assert (clock, store, session) == ("the project's clock", "the project's store", "the project's session")
    assert toolctx_session.session_id == "test-session"
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_test_that_stored_nothing_fails_with_a_clear_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_nothing="""
def test_nothing(toolctx_contexts):
    toolctx_contexts.last()
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no tool stored a context in this test*"])


def test_the_plugin_is_registered_for_pytest_to_find() -> None:
    from importlib.metadata import entry_points

    [plugin] = [e for e in entry_points(group="pytest11") if e.name == "toolctx"]
    assert plugin.value == "toolctx_pytest"


def test_the_fixed_clock_only_moves_forward() -> None:
    clock = toolctx.testing.FixedClock()
    assert clock.advance(hours=1, seconds=30).isoformat() == "2025-01-01T01:00:30+00:00"
    assert clock() == clock.now().timestamp()
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(hours=-2)
    with pytest.raises(TypeError, match="timezone-aware"):
        toolctx.testing.FixedClock(datetime(2025, 1, 1))


def test_fixed_session_gives_the_system_clock_back(tmp_path: Path) -> None:
    with toolctx.testing.fixed_session(tmp_path) as s:
        fetch(10)
        [pointer] = s.get_all_pointers()
        assert pointer.timestamp.year == 2025
    with toolctx.session(tmp_path) as after:
        fetch(11)
        [pointer] = after.get_all_pointers()
        assert pointer.timestamp.year >= 2026  # stamped by the system clock again


def test_repeatable_ids_give_the_same_handles_on_every_run(tmp_path: Path) -> None:
    from toolctx.testing import repeatable_ids

    @persist_context
    def lookup(n: int) -> str:
        return f"result {n}"

    def handles(key: str, folder: str) -> list[str]:
        repeatable_ids(key)
        with session(tmp_path / folder) as s:
            for n in range(5):
                lookup(n)
            return [p.handle for p in s.get_all_pointers()]

    first = handles("run", "a")
    assert handles("run", "b") == first
    assert len(set(first)) == 5
    assert all(h.startswith("ctx:") for h in first)
    assert handles("other", "c") != first

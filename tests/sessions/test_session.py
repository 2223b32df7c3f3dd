"""The session façade: selection and cleanup."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import files_under
from tests.sessions.helpers import BIG, save
from toolctx import (
    ConfigError,
    ContextSession,
    SessionClosedError,
    StorageKind,
    session,
)
from toolctx._naming import LOCK_NAME, MANIFEST_NAME, MARKER_NAME

# -- selection -------------------------------------------------------------------------


def test_keyword_strategy_keeps_the_seed_behaviour(context_dir: Path) -> None:
    with session(context_dir) as s:
        s.save_context("get_weather", {"city": "Paris"}, 1)
        apple = s.save_context("get_income_statements", {"ticker": "AAPL", "period": "annual"}, 2)
        both = s.save_context("get_revenue", {"ticker": "AAPL", "period": "annual"}, 3)
        ranked = s.select_relevant_contexts("AAPL annual revenue", strategy="keyword")
        assert [p.id for p in ranked] == [both.id, apple.id]
        assert [p.id for p in s.select_relevant_contexts("AAPL annual revenue", k=1, strategy="keyword")] == [both.id]
        assert len(s.select_relevant_contexts("no overlap at all", strategy="keyword")) == 3
        assert s.select_relevant_contexts("AAPL", pointers=[apple], strategy="keyword") == [apple]


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_select_rejects_bad_k(context_dir: Path, k: object) -> None:
    with pytest.raises(ConfigError, match="k must be"):
        ContextSession(context_dir).select_relevant_contexts("q", k=k)  # type: ignore[arg-type]


def test_select_rejects_a_non_text_query(context_dir: Path) -> None:
    with pytest.raises(ConfigError, match="query must be a str"):
        ContextSession(context_dir).select_relevant_contexts(None)  # type: ignore[arg-type]


# -- cleanup ---------------------------------------------------------------------------


def test_clear_pointers_keeps_files(context_dir: Path) -> None:
    with session(context_dir) as s:
        big = save(s, result=BIG)
        s.clear_pointers()
        assert len(s) == 0
        assert big.filepath is not None
        assert Path(big.filepath).exists()
        assert [c.result for c in s.load_contexts([big])] == [BIG]


def test_clear_context_dir_removes_files_and_their_pointers_only(context_dir: Path) -> None:
    with session(context_dir) as s:
        small = save(s, result="small")
        big = save(s, result=BIG)
        (s.session_dir / "user-notes.txt").write_text("mine")
        s.clear_context_dir()
        assert [p.id for p in s.get_all_pointers()] == [small.id]
        assert sorted(p.name for p in s.session_dir.iterdir()) == [MARKER_NAME, LOCK_NAME, "user-notes.txt"]
        assert big.filepath is not None
        assert not Path(big.filepath).exists()
    assert sorted(p.name for p in context_dir.rglob("*")) == [s.session_id, "user-notes.txt"]


def test_clear_removes_everything_and_the_session_stays_usable(context_dir: Path) -> None:
    with session(context_dir) as s:
        save(s, result=BIG)
        save(s)
        s.clear()
        assert len(s) == 0
        assert save(s, result=BIG).storage is StorageKind.DISK
    assert files_under(context_dir) == []


def test_leaving_the_block_deletes_what_was_stored_even_on_error(context_dir: Path) -> None:
    def agent(s: ContextSession) -> None:
        save(s, result=BIG)
        raise RuntimeError("agent failed")

    s = session(context_dir)
    with pytest.raises(RuntimeError, match="agent failed"), s:
        agent(s)
    assert files_under(context_dir) == []
    assert s.closed
    with pytest.raises(SessionClosedError, match=r"toolctx\.session\(\)"):
        save(s)
    with pytest.raises(SessionClosedError), s:
        pass


def test_a_context_dir_full_of_user_files_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    (home / "docs" / "thesis.txt").write_text("years of work")
    (home / "search_0123456789abcdef_1735012345678_1_9f3a1c.json").write_text("looks like ours, is not")
    (home / MANIFEST_NAME).write_text("not ours either")
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    with session(home) as s:
        save(s, result=BIG)
        save(s, result="small")
        s.clear()
        save(s, result=BIG)
    after = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("bad", [2.5, float("nan"), b"id", ["t"], {"t": 1}, True, object()])
def test_tags_and_call_ids_of_the_wrong_type_get_a_config_error_naming_them(context_dir: Path, bad: object) -> None:
    with ContextSession(context_dir) as s:
        with pytest.raises(ConfigError, match="task_id must be an int or a str"):
            s.save_context("t", {}, 1, task_id=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="query_id must be a str or None"):
            s.save_context("t", {}, 1, query_id=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="call_id must be a str or None"):
            s.save_context("t", {}, 1, call_id=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="call_id must be a str"):
            s.find_call(bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"query\(\) takes the user's question as a str"), s.query(bad):  # type: ignore[arg-type]
            pass
        assert len(s) == 0


def test_task_ids_beyond_64_bits_are_kept_exactly(context_dir: Path) -> None:
    with ContextSession(context_dir) as s:
        s.save_context("t", {}, 1, task_id=2**70)
        assert [p.task_id for p in s.get_pointers_for_task(2**70)] == [2**70]

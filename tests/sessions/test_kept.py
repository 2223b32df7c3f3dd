"""Reading session folders on disk through the sessions face, without taking them over."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolctx import ConfigError, ContextSession, SessionNotFoundError, session
from toolctx.errors import NotFoundError
from toolctx.sessions import list_sessions, read_session_context, session_pointers


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def test_a_kept_session_is_listed_and_read_back_without_being_changed(context_dir: Path) -> None:
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        first = s.save_context("search", {"query": "retry"}, ["uploader.py"])
        s.save_context("fetch", {"url": "x"}, None, error=TimeoutError("took too long"))
        shown = [p.id for p in s.get_all_pointers()]
    before = snapshot(context_dir / "kept-1")

    [summary] = list_sessions(context_dir)
    assert (summary.session_id, summary.state, summary.contexts) == ("kept-1", "kept", 2)
    assert summary.directory == str(context_dir / "kept-1")
    assert [p.id for p in session_pointers("kept-1", context_dir)] == shown
    stored = read_session_context("kept-1", f"ctx:{first.id}", context_dir)
    assert (stored.tool_name, stored.args, stored.result) == ("search", {"query": "retry"}, ["uploader.py"])
    assert snapshot(context_dir / "kept-1") == before  # looking wrote, locked and renamed nothing

    resumed = ContextSession.resume("kept-1", context_dir)  # still resumable, nothing held
    try:
        assert [p.id for p in resumed.get_all_pointers()] == shown
    finally:
        resumed.close()


def test_a_session_in_use_is_listed_as_such_and_folders_toolctx_did_not_make_are_not(context_dir: Path) -> None:
    (context_dir / "someone-elses").mkdir(parents=True)
    (context_dir / "someone-elses" / "notes.txt").write_text("mine")
    with session(context_dir, session_id="live", threshold=0) as s:
        s.save_context("t", {"i": 1}, "x" * 100)
        assert [(x.session_id, x.state) for x in list_sessions(context_dir)] == [("live", "in use")]
    assert list_sessions(context_dir) == []  # it ended and removed its folder
    assert list_sessions(context_dir / "absent") == []


def test_unknown_or_malformed_ids_say_what_to_do(context_dir: Path) -> None:
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context("t", {"i": 1}, "x" * 100)
    with pytest.raises(SessionNotFoundError, match=r"no toolctx session 'nope'.*toolctx ls"):
        session_pointers("nope", context_dir)
    with pytest.raises(ConfigError, match="toolctx ls"):
        session_pointers("../kept-1", context_dir)
    with pytest.raises(ConfigError, match="not one toolctx gives"):
        read_session_context("kept-1", "zz", context_dir)
    with pytest.raises(NotFoundError, match="no context 'abcdef0123' in session 'kept-1'"):
        read_session_context("kept-1", "abcdef0123", context_dir)


def test_a_folder_whose_marker_names_another_session_is_not_read(context_dir: Path) -> None:
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context("t", {"i": 1}, "x" * 100)
    os.rename(context_dir / "kept-1", context_dir / "copy")
    assert list_sessions(context_dir) == []
    with pytest.raises(SessionNotFoundError):
        session_pointers("copy", context_dir)

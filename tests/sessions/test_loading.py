"""Finding stored calls by pointer, id, handle or path, and loading them, never another session's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.sessions.helpers import BIG, save
from toolctx import (
    ConfigError,
    ContextSession,
    StorageKind,
    ToolctxWarning,
    session,
)


def test_load_accepts_pointers_ids_handles_and_paths(context_dir: Path) -> None:
    with session(context_dir) as s:
        small = save(s, result="small")
        big = save(s, tool="big", result=BIG)
        assert big.filepath is not None
        refs: list[Any] = [small, big.id, f"ctx:{small.id}", big.filepath, Path(big.filepath), big.filename]
        assert [c.result for c in s.load_contexts(refs)] == ["small", BIG, "small", BIG, BIG, BIG]
        loaded = s.load_contexts([big])[0]
        assert (loaded.id, loaded.tool_name, loaded.session_id) == (big.id, "big", s.session_id)


def test_load_skips_missing_malformed_and_foreign_with_a_warning(context_dir: Path, tmp_path: Path) -> None:
    """A ref that names nothing of this session is skipped with a logged warning; a call this session stored
    whose copy cannot be read now (damaged, deleted) with a ToolctxWarning as well: never in silence."""
    with session(context_dir) as s, session(tmp_path / "other") as other:
        good = save(s, result=BIG)
        broken = save(s, tool="broken", result=BIG)
        gone = save(s, tool="gone", result=BIG)
        foreign = save(other, result="theirs")
        assert broken.filepath is not None
        assert gone.filepath is not None
        assert good.filepath is not None
        Path(broken.filepath).write_bytes(b'{"format": "toolctx/1", "id": ')
        Path(gone.filepath).unlink()
        outside = tmp_path / "x_0123456789abcdef_1735012345678_1_9f3a1c.json"
        outside.write_bytes(Path(good.filepath).read_bytes())  # a valid document, but not in this session
        with capture_logs() as logs, pytest.warns(ToolctxWarning) as warned:
            loaded = s.load_contexts([broken, good, "nope", gone, foreign, str(outside), "../../etc/passwd"])
        assert [c.id for c in loaded] == [good.id]
        skipped = [e for e in logs if e["event"] == "skipped"]
        assert len(skipped) == 4
        assert all(e["log_level"] == "warning" for e in skipped)
        assert sum("belongs to session" in e["reason"] for e in skipped) == 1
        unreadable = [str(w.message) for w in warned]
        assert len(unreadable) == 2, unreadable
        for call, error in ((broken, "JSON"), (gone, "FileNotFoundError")):
            message = next(m for m in unreadable if repr(call.id) in m)
            assert f"from {str(context_dir / s.session_id)!r}" in message, message
            assert error in message, message


def test_load_contexts_wants_a_list(context_dir: Path) -> None:
    s = ContextSession(context_dir)
    with pytest.raises(ConfigError, match="list"):
        s.load_contexts("abc")


def test_get_pointer(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = save(s)
        assert s.get_pointer(pointer.handle) == pointer
        assert s.get_pointer("missing") is None


def test_a_shared_file_replaced_by_another_sessions_document_is_not_loaded(context_dir: Path) -> None:
    with session(context_dir) as other:
        foreign = other.save_context("fetch", {"u": 1}, BIG + "other conversation")
        foreign_bytes = Path(foreign.filepath or "").read_bytes()
    with session(context_dir) as s:
        first = s.save_context("fetch", {"u": 1}, BIG)
        again = s.save_context("fetch", {"u": 1}, BIG)  # identical: shares the first file
        assert again.filename == first.filename
        Path(first.filepath or "").write_bytes(foreign_bytes)
        with capture_logs() as logs:
            assert s.load_contexts([again, first]) == []
    assert sum("belongs to session" in str(e.get("reason", "")) for e in logs) == 2


def test_load_call_finds_a_call_by_its_framework_id(context_dir: Path) -> None:
    with session(context_dir) as s:
        small = s.save_context("grep", {"q": "x"}, "found it", call_id="call-1")
        big = s.save_context("cat", {"f": "a"}, BIG, call_id="call-2")
        again = s.save_context("grep", {"q": "y"}, "second", call_id="call-1")  # the latest with that id wins
        one, two = s.load_call("call-1"), s.load_call("call-2")
        assert one is not None
        assert two is not None
        assert (one.id, one.result) == (again.id, "second")
        assert (two.id, two.result, two.args) == (big.id, BIG, {"f": "a"})
        assert one == s.load_contexts([again])[0]
        assert small.id != one.id
        assert s.load_call("call-3") is None
        with pytest.raises(ConfigError, match="call_id must be a str"):
            s.load_call(3)  # type: ignore[arg-type]


def test_load_call_is_none_for_a_call_whose_output_was_not_stored(context_dir: Path) -> None:
    (context_dir / "taken").mkdir()  # a directory toolctx did not make: nothing is written there
    with session(context_dir, session_id="taken") as s:
        with pytest.warns(ToolctxWarning, match="could not store"):
            pointer = s.save_context("cat", {}, BIG, call_id="call-1")
        assert pointer.storage is StorageKind.NONE
        assert s.find_call("call-1") is not None
        assert s.load_call("call-1") is None

"""Keeping a session and resuming it, in this process or another, after a crash."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

import orjson
import pytest
from structlog.testing import capture_logs

from tests.conftest import files_under
from tests.sessions.helpers import BIG, save
from toolctx import (
    ConfigError,
    ContextSession,
    SessionBusyError,
    SessionNotFoundError,
    StorageKind,
    ToolctxWarning,
    hash_query,
    session,
)
from toolctx._naming import LOCK_NAME, MANIFEST_NAME, MARKER_NAME

# -- keep and resume ------------------------------------------------------------------------


def test_keep_flushes_memory_and_resume_rebuilds_every_pointer(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        with s.query("q"), s.task(2):
            small = save(s, result={"a": 1})
            big = save(s, tool="big", result=BIG)
        original = s.get_all_pointers()
    assert (s.session_dir / MANIFEST_NAME).exists()
    with ContextSession.resume(s.session_id, context_dir) as resumed:
        pointers = resumed.get_all_pointers()
        assert [p.id for p in pointers] == [p.id for p in original]
        assert [p.query_id for p in pointers] == [hash_query("q")] * 2
        assert [p.task_id for p in pointers] == [2, 2]
        assert all(p.storage is StorageKind.DISK for p in pointers)
        assert [c.result for c in resumed.load_contexts([small.id, big.id])] == [{"a": 1}, BIG]
        newer = save(resumed, result=BIG)
        assert newer.id not in {p.id for p in original}
    assert resumed.session_dir.exists()  # resume keeps by default
    with ContextSession.resume(s.session_id, context_dir, keep=False) as last:
        assert len(last) == 3
    assert files_under(context_dir) == []


def test_resume_in_another_process(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        save(s, result=BIG)
        save(s, result="small")
    code = (
        "import sys, toolctx\n"
        "s = toolctx.ContextSession.resume(sys.argv[1], sys.argv[2])\n"
        "print(sorted(len(str(c.result)) for c in s.load_contexts(s.get_all_pointers())))\n"
        "s.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, s.session_id, str(context_dir)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[5, 40000]"


def test_resume_recovers_files_the_manifest_missed_and_drops_missing_ones(context_dir: Path) -> None:
    with session(context_dir, keep=True, threshold=0) as s:
        pointers = [save(s, n=i) for i in range(4)]
    manifest = s.session_dir / MANIFEST_NAME
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(lines[0] + lines[1] + lines[2][:20])  # a crash cut the manifest short
    assert pointers[0].filepath is not None
    lost = Path(pointers[0].filepath)
    document = lost.read_bytes()
    lost.unlink()
    # A crash while the file was written again left half of it under a temporary name.
    (s.session_dir / f".{lost.name}.0123abcd.tmp").write_bytes(document[: len(document) // 2])
    resumed = ContextSession.resume(s.session_id, context_dir, keep=False)
    assert sorted(p.id for p in resumed.get_all_pointers()) == sorted(p.id for p in pointers[1:])
    assert [c.args["n"] for c in resumed.load_contexts(resumed.get_all_pointers())] == [1, 2, 3]
    assert len(manifest.read_bytes().splitlines()) == 3  # rewritten whole
    resumed.close()
    assert files_under(context_dir) == []


def _kept_session(context_dir: Path, calls: int) -> ContextSession:
    with session(context_dir, keep=True, threshold=0) as s:
        for i in range(calls):
            s.save_context("grep", {"pattern": f"p{i}"}, f"match {i} " * 50)
    return s


def test_reopening_reads_only_the_manifest_and_leaves_it_as_it_was(context_dir: Path) -> None:
    s = _kept_session(context_dir, 6)
    manifest = s.session_dir / MANIFEST_NAME
    lines = manifest.read_bytes().splitlines(keepends=True)
    listed = b"".join([lines[1], lines[0], *lines[2:]])  # (two threads appended in the other order)
    manifest.write_bytes(listed)
    for pointer in s.get_all_pointers():  # outputs no reopening reads: each would be skipped as unreadable
        assert pointer.filepath is not None
        Path(pointer.filepath).write_bytes(b"not a context document")
    resumed = ContextSession.resume(s.session_id, context_dir)
    assert sorted(p.id for p in resumed.get_all_pointers()) == sorted(p.id for p in s.get_all_pointers())
    assert manifest.read_bytes() == listed  # nothing changed, nothing written
    resumed.close()


def test_a_manifest_cut_just_before_its_last_newline_is_mended_before_anything_is_appended(
    context_dir: Path,
) -> None:
    s = _kept_session(context_dir, 3)
    manifest = s.session_dir / MANIFEST_NAME
    manifest.write_bytes(manifest.read_bytes()[:-1])  # a crash took only the last line's end
    with ContextSession.resume(s.session_id, context_dir) as resumed:
        save(resumed, n=3)
    assert len([orjson.loads(line) for line in manifest.read_bytes().splitlines()]) == 4  # four whole lines
    with ContextSession.resume(s.session_id, context_dir, keep=False) as reopened:
        assert len(reopened) == 4
        assert [c.args for c in reopened.load_contexts(reopened.get_all_pointers())][-1] == {"n": 3}
    assert files_under(context_dir) == []


def test_reopening_holds_about_a_kilobyte_a_call(context_dir: Path) -> None:
    s = _kept_session(context_dir, 1000)
    gc.collect()
    tracemalloc.start()
    try:
        resumed = ContextSession.resume(s.session_id, context_dir)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(resumed) == 1000
    assert held < 2500 * 1000, f"{held / 1000:.0f} bytes a call"  # (each call's arguments once held 4 KB more)
    resumed.close()


def test_resume_errors(context_dir: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        ContextSession.resume("no-such-session", context_dir)
    with pytest.raises(ConfigError, match="session_id"):
        ContextSession.resume("../etc", context_dir)
    with session(context_dir, keep=True) as s:
        save(s, result=BIG)
        with pytest.raises(SessionBusyError):
            ContextSession.resume(s.session_id, context_dir)
    ContextSession.resume(s.session_id, context_dir, keep=False).close()


def test_a_fresh_session_never_takes_over_an_existing_directory(context_dir: Path) -> None:
    (context_dir / "taken").mkdir()
    (context_dir / "taken" / "user.txt").write_text("mine")
    with pytest.warns(ToolctxWarning, match="could not store"), session(context_dir, session_id="taken") as s:
        pointer = save(s, result=BIG)
    assert pointer.storage is StorageKind.NONE
    assert (context_dir / "taken" / "user.txt").read_text() == "mine"


def test_resume_never_adopts_a_file_of_another_session(context_dir: Path) -> None:
    with session(context_dir, keep=True) as other:
        foreign = other.save_context("secret_tool", {}, BIG)
    with session(context_dir, keep=True) as mine:
        mine.save_context("fetch", {}, BIG)
        session_id = mine.session_id
    # A file copied in from another conversation's directory is not this session's output.
    (context_dir / session_id / (foreign.filename or "")).write_bytes(Path(foreign.filepath or "").read_bytes())
    with capture_logs() as logs, session.resume(session_id, context_dir, keep=False) as again:
        tools = [p.tool_name for p in again.get_all_pointers()]
    assert tools == ["fetch"]
    assert any("belongs to session" in str(e.get("reason", "")) for e in logs)


def test_only_a_kept_session_lists_its_files_and_one_kept_late_lists_them_at_the_end(context_dir: Path) -> None:
    with session(context_dir) as s:
        s.save_context("fetch", {"n": 1}, BIG)
        assert not (s.session_dir / MANIFEST_NAME).exists()  # it deletes itself: nothing will resume it
        s.keep = True  # changed its mind
        s.save_context("fetch", {"n": 2}, "small, in memory until the end")
        session_id = s.session_id
    lines = (context_dir / session_id / MANIFEST_NAME).read_bytes().splitlines()
    assert len(lines) == 2
    with session.resume(session_id, context_dir, keep=False) as again:
        assert sorted(p.args["n"] for p in again.get_all_pointers()) == [1, 2]


def test_resume_refuses_a_folder_toolctx_did_not_create_and_changes_nothing_in_it(context_dir: Path) -> None:
    folder = context_dir / "datasets"
    folder.mkdir()
    (folder / MANIFEST_NAME).write_text('{"my": "rows"}\n')
    (folder / "session.lock").write_text("my lock")
    (folder / "x_0123456789abcdef_1735012345678_1_9f3a1c.json").write_text('{"user": 1}')
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    for keep in (True, False):
        with pytest.raises(SessionNotFoundError) as refused:
            ContextSession.resume("datasets", context_dir, keep=keep)
        assert str(folder) in str(refused.value)
        assert "will not resume, change or delete anything in it" in str(refused.value)
        assert "Pass the id of a session kept with keep=True, or another context_dir" in str(refused.value)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before


def test_a_session_kept_before_markers_existed_is_resumed_and_marked(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        save(s, result=BIG)
        save(s, result="small")
    # What toolctx wrote before: the same files, no marker, the owner and "closed" in the lock.
    (s.session_dir / MARKER_NAME).unlink()
    (s.session_dir / LOCK_NAME).write_bytes(b'{"pid":1,"host":"h","since":1.0,"closed":2.0}')
    with ContextSession.resume(s.session_id, context_dir) as resumed:
        assert sorted(len(str(c.result)) for c in resumed.load_contexts(resumed.get_all_pointers())) == [5, 40000]
        assert (s.session_dir / MARKER_NAME).is_file()
    with ContextSession.resume(s.session_id, context_dir, keep=False):
        pass
    assert files_under(context_dir) == []

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest.mock import ANY

import orjson
import pytest

from toolctx import _platform, session
from toolctx._defaults import DEFAULT_CONTEXT_DIR, resolve_context_dir
from toolctx._naming import LOCK_NAME, MANIFEST_NAME, MARKER_NAME
from toolctx.errors import SessionBusyError, SessionNotFoundError, StorageError
from toolctx.storage import LocalStore, Marker, _local, is_held, read_marker, read_owner, read_regular_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_nothing_is_created_until_the_first_write(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "ctx" / "s1")
    assert store.list() == []
    assert not (tmp_path / "ctx").exists()
    store.put("a.json", [b"1"])
    assert (tmp_path / "ctx" / "s1" / "a.json").exists()
    store.close(remove=True)


def test_permissions_are_owner_only(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    store.append("m.jsonl", b"x")
    assert mode(tmp_path / "s") == 0o700
    assert mode(tmp_path / "s" / "a.json") == 0o600
    assert mode(tmp_path / "s" / "m.jsonl") == 0o600
    store.close(remove=True)


def test_an_existing_directory_is_never_adopted(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "user.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        LocalStore(tmp_path / "s").put("a.json", [b"1"])
    assert (tmp_path / "s" / "user.txt").read_text() == "mine"


def test_close_remove_keeps_foreign_files_and_the_directory_holding_them(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    (tmp_path / "s" / "user.txt").write_text("mine")
    store.delete("a.json")
    store.close(remove=True)
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["user.txt"]


def test_close_remove_deletes_the_empty_directory_and_leftover_temp_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    (tmp_path / "s" / ".a.json.0123abcd.tmp").write_bytes(b"")  # a crash before the first byte was written
    (tmp_path / "s" / ".manifest.jsonl.0123abcd.tmp").write_bytes(b'{"op":"put","file":"x_01')  # ... or in it
    store.delete("a.json")
    store.close(remove=True)
    assert not (tmp_path / "s").exists()


def test_close_remove_keeps_a_file_named_like_a_leftover_that_toolctx_did_not_write(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    (tmp_path / "s" / ".a.json.0123abcd.tmp").write_bytes(b"the user's")
    store.delete("a.json")
    store.close(remove=True)
    assert [p.name for p in (tmp_path / "s").iterdir()] == [".a.json.0123abcd.tmp"]


def test_writes_do_not_follow_symlinks(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    store = LocalStore(tmp_path / "s")
    store.put("seed.json", [b"1"])
    os.symlink(victim, tmp_path / "s" / "a.json")
    with pytest.raises(OSError):
        store.get("a.json")
    assert "a.json" not in store.list()
    store.put("a.json", [b"replaced"])  # rename replaces the link itself, not its target
    assert victim.read_text() == "precious"
    store.close(remove=True)


def test_a_failed_write_leaves_no_partial_blob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("seed.json", [b"1"])

    def full_disk(fd: int, buffers: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "writev", full_disk)
    with pytest.raises(OSError, match="No space"):
        store.put("a.json", [b"data"])
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [MARKER_NAME, "seed.json", LOCK_NAME]
    store.close(remove=True)


def test_the_lock_records_the_owner_and_keeps_out_other_processes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    marker = (tmp_path / "s" / LOCK_NAME).read_text()
    assert f'"pid":{os.getpid()}' in marker
    code = (
        "import sys\nfrom toolctx.storage import LocalStore\nfrom toolctx.errors import SessionBusyError\n"
        "try:\n    LocalStore(sys.argv[1], existing=True)\nexcept SessionBusyError as e:\n    print('busy', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("busy")
    store.close()
    reopened = LocalStore(tmp_path / "s", existing=True)
    assert reopened.get("a.json") == b"1"
    reopened.close(remove=True)


def test_a_second_store_in_the_same_process_is_also_kept_out(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    with pytest.raises(SessionBusyError, match="another live process"):
        LocalStore(tmp_path / "s", existing=True)
    store.close(remove=True)


def test_opening_a_missing_or_linked_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        LocalStore(tmp_path / "nope", existing=True)
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(SessionNotFoundError):
        LocalStore(tmp_path / "link", existing=True)


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_writev = os.writev

    def dribble(fd: int, buffers: list[bytes]) -> int:  # at most 7 bytes per call, like a slow pipe
        first = bytes(buffers[0])[:7] if buffers else b""
        return real_writev(fd, [first])

    monkeypatch.setattr(os, "writev", dribble)
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"0123456789", b"", b"abcdefghijklmnop", b"XYZ"])
    store.append("m.jsonl", b"line one\n")
    monkeypatch.undo()
    assert store.get("a.json") == b"0123456789abcdefghijklmnopXYZ"
    assert store.get("m.jsonl") == b"line one\n"
    store.close(remove=True)


# -- without the POSIX-only calls (as on Windows) -------------------------------


def test_blobs_are_written_whole_without_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "writev")
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"0123456789", b"", b"abc"])
    store.put("many.json", [b"x"] * 2000)
    store.append("m.jsonl", b"line one\n")
    store.append("m.jsonl", b"line two\n")
    assert store.get("a.json") == b"0123456789abc"
    assert store.get("many.json") == b"x" * 2000
    assert store.get("m.jsonl") == b"line one\nline two\n"
    store.close(remove=True)


def test_short_writes_are_completed_without_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls: list[int] = []

    def dribble(fd: int, data: bytes) -> int:  # at most 7 bytes per call
        calls.append(fd)
        return real_write(fd, bytes(data)[:7])

    monkeypatch.delattr(os, "writev")
    monkeypatch.setattr(os, "write", dribble)
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"0123456789", b"", b"abcdefghijklmnop", b"XYZ"])
    store.append("m.jsonl", b"line one\n")
    monkeypatch.undo()
    assert len(calls) >= 6  # the portable path was taken, in several writes
    assert store.get("a.json") == b"0123456789abcdefghijklmnopXYZ"
    assert store.get("m.jsonl") == b"line one\n"
    store.close(remove=True)


def test_the_owner_is_rewritten_whole_without_pwrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pwrite")
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    assert read_owner(tmp_path / "s") == {"pid": os.getpid(), "host": socket.gethostname(), "since": ANY}
    store.close()
    (tmp_path / "s" / LOCK_NAME).write_text('{"pid": 1, "host": "' + "h" * 500 + '", "since": 0}')  # a longer one
    reopened = LocalStore(tmp_path / "s", existing=True)
    assert read_owner(tmp_path / "s") == {"pid": os.getpid(), "host": socket.gethostname(), "since": ANY}
    reopened.close(remove=True)


# -- where sessions go when no directory is given -------------------------------


@pytest.fixture
def no_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No TOOLCTX_CONTEXT_DIR, and a private temporary directory; returns the per-user fallback."""
    monkeypatch.delenv("TOOLCTX_CONTEXT_DIR", raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "tmp" / f"toolctx-{os.getuid()}" / "context"


def test_the_default_is_under_the_home_directory(
    no_default: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_context_dir(None) == tmp_path / "home" / ".agent" / "context"
    assert resolve_context_dir(None) == Path(DEFAULT_CONTEXT_DIR).expanduser()


def test_the_environment_and_the_argument_still_win(
    no_default: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOME")
    monkeypatch.setenv("TOOLCTX_CONTEXT_DIR", str(tmp_path / "env"))
    assert resolve_context_dir(None) == tmp_path / "env"
    assert resolve_context_dir(tmp_path / "arg") == tmp_path / "arg"


@pytest.mark.parametrize("home", ["unset", "empty", "a file", "read-only"])
def test_without_a_usable_home_sessions_go_to_a_per_user_temporary_folder(
    no_default: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    if home == "unset":
        monkeypatch.delenv("HOME")
    elif home == "empty":
        monkeypatch.setenv("HOME", "")
    elif home == "a file":
        (tmp_path / "home").write_text("not a directory")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    else:  # like the "/" a container gives a user it has no entry for (permission bits do not stop root)
        (tmp_path / "home").mkdir()
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, m, **kw: p != tmp_path / "home" and real_access(p, m, **kw))
    assert resolve_context_dir(None) == no_default


def test_a_home_that_cannot_be_found_falls_back_too(
    no_default: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert resolve_context_dir(None) == no_default


def test_a_homeless_session_stores_in_owner_only_folders(no_default: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOME")
    with session() as s:
        s.save_context("fetch", {"n": 1}, "x" * 50_000)
        assert s.session_dir.parent == no_default
        assert s.session_dir.is_dir()
        assert mode(no_default.parent) == mode(no_default) == mode(s.session_dir) == 0o700
        assert [c.result for c in s.load_contexts(s.get_all_pointers())] == ["x" * 50_000]
    assert not s.session_dir.exists()


@pytest.mark.parametrize("planted", ["someone else's symlink", "a group-writable folder", "a file"])
def test_a_planted_temporary_folder_is_never_used(
    no_default: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    monkeypatch.delenv("HOME")
    base = no_default.parent
    elsewhere = base.parent / "elsewhere"
    elsewhere.mkdir()
    if planted == "a file":
        base.write_text("x")
    elif planted == "a group-writable folder":
        base.mkdir()
        os.chmod(base, 0o770)
    else:
        os.symlink(elsewhere, base)
    chosen = resolve_context_dir(None)
    assert chosen.parent != base
    assert chosen.parent.name.startswith(base.name + "-")
    assert not chosen.parent.exists()
    assert resolve_context_dir(None) != chosen  # a fresh name each time, never the planted one


def test_on_windows_sessions_go_to_local_app_data(
    no_default: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(_platform, "WINDOWS", True)
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "AppData" / "Local"))
    assert resolve_context_dir(None) == tmp_path / "AppData" / "Local" / "toolctx" / "context"
    monkeypatch.delenv("LOCALAPPDATA")
    assert resolve_context_dir(None) == no_default


def test_an_os_failure_is_a_storage_error_naming_the_blob_and_the_directory(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"{}"])
    (tmp_path / "s" / "b.json").mkdir()  # a directory where the blob goes: writing and reading it fail
    try:
        with pytest.raises(StorageError, match=r"could not write blob 'b\.json' in '.*s'") as caught:
            store.put("b.json", [b"{}"])
        assert isinstance(caught.value, OSError)
        assert caught.value.errno is not None
        with pytest.raises(StorageError, match=r"could not read blob 'b\.json'"):
            store.get("b.json")
        with pytest.raises(FileNotFoundError):
            store.get("missing.json")
        assert store.get("a.json") == b"{}"
        assert not [p for p in (tmp_path / "s").iterdir() if p.name.endswith(".tmp")]
    finally:
        store.close()


# -- the marker: only directories toolctx created are toolctx's ------------------------------------

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def snapshot(directory: Path) -> dict[str, tuple[int, int, bytes | None]]:
    return {
        p.name: (p.lstat().st_mode, p.lstat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
        for p in directory.iterdir()
    }


def test_the_marker_is_written_first_and_says_whether_the_directory_is_kept(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s1")
    store.put("a.json", [b"1"])
    assert orjson.loads((tmp_path / "s1" / MARKER_NAME).read_bytes()) == {
        "format": "toolctx-session/1",
        "session_id": "s1",
        "kept": False,
        "notes": [],
    }
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=False, notes=frozenset())
    store.close()
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=True, notes=frozenset())
    reopened = LocalStore(tmp_path / "s1", existing=True)
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=False, notes=frozenset())  # in use again
    reopened.delete("a.json")
    reopened.close(remove=True)
    assert not (tmp_path / "s1").exists()


def test_a_note_stays_with_the_session_directory(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s1", keep=True)
    store.put("a.json", [b"1"])
    assert store.noted("offered") is False
    store.note("offered")
    store.note("offered")  # (written once)
    assert store.noted("offered") is True
    store.close()
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=True, notes=frozenset({"offered"}))
    reopened = LocalStore(tmp_path / "s1", existing=True, keep=True)
    assert (reopened.noted("offered"), reopened.noted("other")) == (True, False)
    reopened.close()
    # A marker written before notes were kept cannot tell, until something is noted
    marker = tmp_path / "s1" / MARKER_NAME
    marker.write_bytes(orjson.dumps({"format": "toolctx-session/1", "session_id": "s1", "kept": True}) + b"\n")
    older = LocalStore(tmp_path / "s1", existing=True, keep=True)
    assert older.noted("offered") is None
    older.close()
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=True)  # (closing does not claim to know)
    older = LocalStore(tmp_path / "s1", existing=True, keep=True)
    older.note("offered")
    assert (older.noted("offered"), older.noted("other")) == (True, False)
    older.close(remove=True)
    assert not any(p.name.endswith(".tmp") for p in (tmp_path / "s1").iterdir())


def test_a_note_waits_for_the_directory_and_a_forked_child_leaves_the_marker_alone(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s1", keep=True)
    store.note("offered")  # nothing stored yet: no directory is made for a note
    assert not (tmp_path / "s1").exists()
    store.put("a.json", [b"1"])
    assert read_marker(tmp_path / "s1") == Marker("s1", kept=True, notes=frozenset({"offered"}))
    if hasattr(os, "fork"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child's copy notes in memory only: the marker stays the parent's
            store.after_fork()
            store.note("in the child")
            os._exit(0 if store.noted("in the child") else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert read_marker(tmp_path / "s1") == Marker("s1", kept=True, notes=frozenset({"offered"}))
    store.close()


@pytest.mark.parametrize(
    "layout", ["empty", "user files", "marker of another session", "marker as a link", "junk marker"]
)
def test_reopening_a_directory_without_its_marker_is_refused_and_changes_nothing(tmp_path: Path, layout: str) -> None:
    folder = tmp_path / "s1"
    folder.mkdir()
    if layout == "user files":
        (folder / MANIFEST_NAME).write_text('{"my": "rows"}\n')
        (folder / LOCK_NAME).write_text('{"pid": 1}')
        (folder / "x_0123456789abcdef_1735012345678_1_9f3a1c.json").write_text("{}")
    elif layout == "marker of another session":  # a session folder copied or renamed
        (folder / MARKER_NAME).write_bytes(b'{"format":"toolctx-session/1","session_id":"s2","kept":true}\n')
    elif layout == "marker as a link":
        (tmp_path / "real-marker").write_bytes(b'{"format":"toolctx-session/1","session_id":"s1","kept":true}\n')
        os.symlink(tmp_path / "real-marker", folder / MARKER_NAME)
    elif layout == "junk marker":
        (folder / MARKER_NAME).write_bytes(b"{")
    before = snapshot(folder)
    assert read_marker(folder) is None
    with pytest.raises(SessionNotFoundError, match=r"'.*s1' is not a session directory toolctx created.*keep=True"):
        LocalStore(folder, existing=True)
    assert snapshot(folder) == before


def test_a_directory_from_before_markers_is_recognised_by_its_lock_and_gets_a_marker(tmp_path: Path) -> None:
    folder = tmp_path / "s1"
    folder.mkdir()
    (folder / LOCK_NAME).write_bytes(orjson.dumps({"pid": 1, "host": "h", "since": 1.5, "closed": 2.5}))
    (folder / "a.json").write_bytes(b"1")
    assert read_marker(folder) == Marker("s1", kept=True, legacy=True)
    store = LocalStore(folder, existing=True)
    assert read_marker(folder) == Marker("s1", kept=False)
    assert store.get("a.json") == b"1"
    store.close()
    assert read_marker(folder) == Marker("s1", kept=True)


@pytest.mark.parametrize(
    "lock",
    [
        {"pid": 1, "host": "h"},
        {"pid": 1, "host": "h", "since": 1.0, "owner": "me"},
        {"pid": True, "host": "h", "since": 1},
    ],
)
def test_a_lock_file_unlike_toolctx_s_old_ones_does_not_make_a_directory_toolctx_s(
    tmp_path: Path, lock: dict[str, object]
) -> None:
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / LOCK_NAME).write_bytes(orjson.dumps(lock))
    assert read_marker(tmp_path / "s1") is None


def test_a_closed_store_writes_nothing_more(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.put("b.json", [b"2"])
    with pytest.raises(StorageError, match="closed"):
        store.append("m.jsonl", b"x")
    never_opened = LocalStore(tmp_path / "t")
    never_opened.close()
    with pytest.raises(StorageError, match="closed"):
        never_opened.put("a.json", [b"1"])
    assert not (tmp_path / "t").exists()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [MARKER_NAME, "a.json", LOCK_NAME]


def test_removing_while_a_write_is_under_way_keeps_the_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writing, release = threading.Event(), threading.Event()
    write_all = _local.write_all

    def stalling(fd: int, chunks: Sequence[bytes]) -> None:
        if chunks == [b"late"]:
            writing.set()
            release.wait()
        write_all(fd, chunks)

    monkeypatch.setattr(_local, "write_all", stalling)
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    late = threading.Thread(target=store.put, args=("late.json", [b"late"]))
    late.start()
    writing.wait()
    store.delete("a.json")
    store.close(remove=True)
    assert read_marker(tmp_path / "s") == Marker("s", kept=False, notes=frozenset())  # an orphan gc will recognise
    release.set()
    late.join()
    assert (tmp_path / "s" / "late.json").read_bytes() == b"late"


# -- special files are never opened to read, nor waited on ---------------------------------------


def no_hang(action: Callable[[], object]) -> None:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"{action!r} hung"


@needs_fifo
def test_a_fifo_named_like_a_blob_is_refused_not_waited_on(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    os.mkfifo(tmp_path / "s" / "b.json")
    errors: list[BaseException] = []

    def read() -> None:
        for call in (lambda: store.get("b.json"), lambda: store.head("b.json", 10)):
            try:
                call()
            except StorageError as exc:
                errors.append(exc)

    no_hang(read)
    assert [e.strerror for e in errors] == [
        f"could not read blob 'b.json' in {str(tmp_path / 's')!r}: not a regular file"
    ] * 2
    assert store.list() == ["a.json"]
    store.delete("a.json")
    store.close(remove=True)
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["b.json"]


@needs_fifo
@pytest.mark.parametrize("name", [MARKER_NAME, LOCK_NAME])
def test_a_fifo_where_the_marker_or_lock_goes_is_never_opened(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "s1"
    folder.mkdir()
    if name == LOCK_NAME:
        (folder / MARKER_NAME).write_bytes(b'{"format":"toolctx-session/1","session_id":"s1","kept":false}\n')
    os.mkfifo(folder / name)
    before = snapshot(folder)
    outcome: list[object] = []

    def look() -> None:
        outcome.append(read_marker(folder))
        outcome.append(is_held(folder))
        try:
            LocalStore(folder, existing=True)
        except SessionNotFoundError as exc:
            outcome.append(str(exc))

    no_hang(look)
    if name == MARKER_NAME:
        assert outcome[0] is None
        assert "no .toolctx-session marker" in str(outcome[2])
    else:
        assert outcome[0] == Marker("s1", kept=False)
        assert outcome[1] is True  # cannot tell: left alone
        assert "session.lock that is not a regular file" in str(outcome[2])
    assert snapshot(folder) == before


@needs_fifo
def test_read_regular_file_reads_files_and_refuses_links_and_fifos(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"0123456789")
    os.symlink(tmp_path / "a.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "pipe.json")
    assert read_regular_file(tmp_path / "a.json") == b"0123456789"
    assert read_regular_file(str(tmp_path / "a.json"), 4) == b"0123"
    for refused in ("link.json", "pipe.json"):
        with pytest.raises(OSError, match="not a regular file"):
            read_regular_file(tmp_path / refused)
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "absent.json")

"""A session that ends while other threads still save waits for them, and never strands their files."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import toolctx
from toolctx import ConfigError, ContextSession, SessionClosedError, ToolctxWarning, session
from toolctx._naming import LOCK_NAME, MARKER_NAME
from toolctx.storage import _local

REPETITIONS = 50


def save_until_refused(s: ContextSession, worker: int, saved: list[str], started: threading.Barrier) -> None:
    """Save calls (on disk and in memory, by turns) until the session refuses them; note the ids it returned."""
    i = 0
    while True:
        try:
            pointer = s.save_context("work", {"worker": worker, "i": i}, "x" * (i % 2 * 40_000 + 100))
        except SessionClosedError:
            return
        saved.append(pointer.id)
        if i == 0:
            started.wait()  # the block ends only once every thread is saving
        i += 1


def run_threads_past_the_end_of(s: ContextSession, threads: int = 3) -> list[str]:
    saved: list[str] = []
    started = threading.Barrier(threads + 1)
    workers = [threading.Thread(target=save_until_refused, args=(s, w, saved, started)) for w in range(threads)]
    with s:
        for worker in workers:
            worker.start()
        started.wait()
    for worker in workers:
        worker.join()
    return saved


def test_threads_saving_when_the_block_ends_leave_no_folder_behind(context_dir: Path) -> None:
    for _ in range(REPETITIONS):
        s = session(context_dir, threshold=32 * 1024)
        saved = run_threads_past_the_end_of(s)
        assert saved
        assert not s.session_dir.exists()
    assert list(context_dir.iterdir()) == []
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == []


def test_a_kept_session_ending_while_threads_save_keeps_every_call_it_acknowledged(context_dir: Path) -> None:
    for _ in range(10):
        s = session(context_dir, keep=True, threshold=32 * 1024)
        saved = run_threads_past_the_end_of(s)
        with ContextSession.resume(s.session_id, context_dir, keep=False) as resumed:
            assert sorted(p.id for p in resumed.get_all_pointers()) == sorted(saved)
            assert len(resumed.load_contexts(saved)) == len(saved)
    assert list(context_dir.iterdir()) == []


@pytest.fixture
def stalled_write(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Writes of a tool named "slow" stall inside the store until released: (writing, release)."""
    writing, release = threading.Event(), threading.Event()
    write_all = _local.write_all

    def stalling(fd: int, chunks: Sequence[bytes]) -> None:
        if b'"tool_name":"slow"' in chunks[0]:
            writing.set()
            release.wait()
        write_all(fd, chunks)

    monkeypatch.setattr(_local, "write_all", stalling)
    yield writing, release
    release.set()


def test_ending_waits_for_a_call_being_saved(
    context_dir: Path, stalled_write: tuple[threading.Event, threading.Event]
) -> None:
    writing, release = stalled_write
    events: list[str] = []
    s = ContextSession(context_dir, keep=True, threshold=0, on_debug=lambda event, data: events.append(event))
    saver = threading.Thread(target=s.save_context, args=("slow", {}, "output"))
    saver.start()
    writing.wait()
    closer = threading.Thread(target=s.close)
    closer.start()
    while not s.closed:  # the session has stopped taking calls and waits for this one
        time.sleep(0.001)
    release.set()
    closer.join()
    saver.join()
    assert [e for e in events if e in {"saved", "closed"}] == ["saved", "closed"]
    with ContextSession.resume(s.session_id, context_dir, keep=False) as resumed:
        assert [c.result for c in resumed.load_contexts(resumed.get_all_pointers())] == ["output"]


def test_a_call_still_saving_after_close_timeout_lands_in_a_folder_gc_removes(
    context_dir: Path, stalled_write: tuple[threading.Event, threading.Event]
) -> None:
    writing, release = stalled_write
    s = session(context_dir, threshold=0, close_timeout=0.01)
    saver = threading.Thread(target=s.save_context, args=("slow", {}, "output"))

    def end_while_saving() -> None:
        with s:
            s.save_context("quick", {}, "done")
            saver.start()
            writing.wait()
        # The session ended without the call, which is still writing its temporary file: the marker stays.
        left = {p.name for p in s.session_dir.iterdir()}
        assert {n for n in left if not n.startswith(".slow_")} == {MARKER_NAME, LOCK_NAME}  # "quick" is gone
        release.set()
        saver.join()  # (its warnings, that the call could not be stored after the end, are caught here too)

    with pytest.warns(ToolctxWarning) as caught:
        end_while_saving()
    messages = [str(w.message) for w in caught]
    assert any("1 call(s) were still being saved after 0.01 s" in m for m in messages)
    [landed] = {p.name for p in s.session_dir.iterdir()} - {MARKER_NAME, LOCK_NAME}
    assert landed.startswith("slow_")  # the whole document, after the session ended
    assert toolctx.gc(context_dir, older_than=0) == [s.session_dir]
    assert list(context_dir.iterdir()) == []


def test_a_call_after_the_end_is_refused_and_written_nowhere(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:
        s.save_context("before", {}, "x")
    with pytest.raises(SessionClosedError):
        s.save_context("after", {}, "x")
    assert list(context_dir.iterdir()) == []


@pytest.mark.parametrize("bad", [-1, float("nan"), "5", True])
def test_close_timeout_must_be_a_number_of_seconds(context_dir: Path, bad: Any) -> None:
    with pytest.raises(ConfigError, match="close_timeout"):
        session(context_dir, close_timeout=bad)


def test_a_session_whose_files_cannot_be_deleted_ends_and_leaves_them_to_gc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The with-block ends, a warning names the folder, and the folder is left unkept: toolctx.gc removes it
    (a kept one it would leave, and resume() would reopen a session the user meant to delete)."""

    def refuse(self: Any, name: str) -> bool:
        raise PermissionError(13, "Permission denied", name)

    s = session(tmp_path)
    with s:
        s.save_context("report", {}, "x" * 50_000)
        folder = s.session_dir
        monkeypatch.setattr(_local.LocalStore, "delete", refuse)
        with pytest.warns(ToolctxWarning, match="could not delete what session") as warned:
            s.close()  # (as the block's end does)
    monkeypatch.undo()
    assert str(folder) in str(warned[0].message)
    assert s.closed
    marker = toolctx.storage.read_marker(folder)
    assert marker is not None
    assert not marker.kept
    assert toolctx.gc(tmp_path, older_than=0) == [folder]
    assert not folder.exists()

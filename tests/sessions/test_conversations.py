"""Conversations: one kept session per conversation key, reopened by later turns and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import toolctx
from toolctx import ConfigError, Conversations, SessionBusyError
from toolctx.compaction import session_resolver


class SdkSession:
    """Anything with a ``session_id``, as an Agents SDK session has."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


def test_one_session_per_conversation(context_dir: Path) -> None:
    conversations = Conversations(context_dir)
    try:
        first = conversations.get("thread-1")
        assert conversations("thread-1") is first
        assert conversations.get(SdkSession("thread-1")) is first  # the SDK session's id names it
        assert conversations.get("thread-2") is not first
        assert conversations.get(7) is conversations.get("7")
        assert first.session_id == Conversations.session_id("thread-1")
        assert first.session_dir.parent == context_dir
    finally:
        conversations.close()


@pytest.mark.parametrize("key", ["", None, b"thread", 1.5, SdkSession(""), True])
def test_a_conversation_needs_a_name(context_dir: Path, key: object) -> None:
    conversations = Conversations(context_dir)
    with pytest.raises(ConfigError, match="conversation is named by"):
        conversations.get(key)


def test_bad_options_are_refused_by_name(context_dir: Path) -> None:
    with pytest.raises(ConfigError, match="keep"):
        Conversations(context_dir, keep=False)
    with pytest.raises(ConfigError, match="keep_for"):
        Conversations(context_dir, keep_for=-1)
    with pytest.raises(ConfigError, match="max_open"):
        Conversations(context_dir, max_open=0)


def test_a_later_turn_reads_what_an_earlier_one_stored(context_dir: Path) -> None:
    turn_one = Conversations(context_dir)
    pointer = turn_one.get("chat").save_context("search", {"q": "x"}, "result " * 500)
    turn_one.close()

    turn_two = Conversations(context_dir)
    try:
        [stored] = turn_two.get("chat").load_contexts([pointer.handle])
        assert stored.result == "result " * 500
        assert turn_two.get("other").load_contexts([pointer.handle]) == []
    finally:
        turn_two.close()


def test_open_makes_it_current_and_leaves_it_open(context_dir: Path) -> None:
    conversations = Conversations(context_dir)
    try:
        with conversations.open("chat") as session:
            assert toolctx.current_session() is session
            session.save_context("t", {}, "stored")
            with conversations.open("chat") as again:
                assert again is session
            assert toolctx.current_session() is session
        assert toolctx.current_session() is not session
        assert not session.closed
        assert conversations.get("chat") is session
    finally:
        conversations.close()
    assert session.closed
    assert session.session_dir.exists()  # kept for the next turn


def test_least_used_sessions_are_closed_but_kept(context_dir: Path) -> None:
    conversations = Conversations(context_dir, max_open=2)
    try:
        with conversations.open("busy") as busy:
            a = conversations.get("a")
            a.save_context("t", {}, "kept")
            conversations.get("b")
            conversations.get("c")
            assert not busy.closed  # in use by an open() block: never closed under it
            assert a.closed
        reopened = conversations.get("a")
        assert reopened is not a
        assert [c.result for c in reopened.load_contexts(reopened.get_all_pointers())] == ["kept"]
    finally:
        conversations.close()


HOLD = """
import sys
from toolctx import Conversations
conversations = Conversations(sys.argv[1])
conversations.get("chat").save_context("t", {}, "held")
print("ready", flush=True)
sys.stdin.readline()
"""


def test_a_conversation_open_in_another_process_is_busy(context_dir: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(context_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(SessionBusyError):
            Conversations(context_dir).get("chat")
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0
    conversations = Conversations(context_dir)  # the holder exited: its turn is readable
    try:
        session = conversations.get("chat")
        assert [c.result for c in session.load_contexts(session.get_all_pointers())] == ["held"]
    finally:
        conversations.close()


def test_conversations_unused_for_keep_for_are_removed(context_dir: Path) -> None:
    conversations = Conversations(context_dir, keep_for=3600)
    old = conversations.get("old")
    old.save_context("t", {}, "x" * 10_000)
    recent = conversations.get("recent")
    recent.save_context("t", {}, "y")
    conversations.close()
    past = time.time() - 7200
    for path in [old.session_dir, *old.session_dir.iterdir()]:
        os.utime(path, (past, past))
    user_file = context_dir / "notes.txt"
    user_file.write_text("mine")

    later = Conversations(context_dir, keep_for=3600)
    try:
        assert later.collect() == [old.session_id]
        assert not old.session_dir.exists()
        assert recent.session_dir.exists()
        assert user_file.read_text() == "mine"
        assert later.get("old").get_all_pointers() == []  # a new, empty conversation
    finally:
        later.close()


def test_close_waits_for_the_removal_of_old_conversations_running_in_the_background(context_dir: Path) -> None:
    conversations = Conversations(context_dir, keep_for=3600)
    started, release = threading.Event(), threading.Event()

    def slow_collect() -> list[str]:  # (the removal opening a conversation starts, held until released)
        started.set()
        release.wait(60)
        return []

    conversations.collect = slow_collect  # type: ignore[method-assign]
    conversations.get("chat")
    assert started.wait(60)
    closer = threading.Thread(target=conversations.close)
    closer.start()
    closer.join(0.5)
    assert closer.is_alive()  # close() waits: nothing is deleted after it returns
    release.set()
    closer.join(60)
    assert not closer.is_alive()


def test_the_session_resolver_passes_the_conversation(context_dir: Path) -> None:
    conversations = Conversations(context_dir)
    seen: list[str | None] = []
    fixed = toolctx.ContextSession(context_dir)

    def by_key(key: str | None) -> toolctx.ContextSession:
        seen.append(key)
        return fixed

    try:
        assert session_resolver(by_key)("t-1") is fixed
        assert seen == ["t-1"]
        assert session_resolver(lambda: fixed)("t-1") is fixed
        assert session_resolver(conversations)("t-1") is conversations.get("t-1")
        with toolctx.session(context_dir) as current:
            assert session_resolver(conversations)(None) is current  # no conversation named: the current one
        with pytest.raises(TypeError, match="Conversations"):
            session_resolver("t-1")  # type: ignore[arg-type]
    finally:
        conversations.close()
        fixed.close()


def test_a_deletion_the_store_refuses_is_an_error_not_a_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations = Conversations(tmp_path)
    with conversations.open("thread-1") as s:
        s.save_context("report", {}, "x" * 50_000)
    conversations.close()

    def refuse(self: object, name: str) -> bool:
        raise PermissionError(13, "Permission denied", name)

    monkeypatch.setattr("toolctx.storage._local.LocalStore.delete", refuse)
    with pytest.raises(OSError, match="Permission denied"), pytest.warns(toolctx.ToolctxWarning):
        conversations.delete("thread-1")
    monkeypatch.undo()
    assert conversations.delete("thread-1")  # (what was left: deleted once the store allows it)
    assert not conversations.delete("thread-1")

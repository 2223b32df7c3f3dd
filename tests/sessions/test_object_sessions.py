"""Sessions kept in object storage: any process reaching the store reads the handles back, several at once.

Every process here is a real one, reaching a real S3 endpoint over HTTP on loopback
(moto's server) through the standard AWS variables alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import toolctx
from tests.conftest import count_calls, new_postgres_database
from toolctx import Conversations, SessionNotFoundError
from toolctx.compaction import read_context
from toolctx.index import index_of
from toolctx.storage import ObjectStore


@pytest.fixture(params=["manifest object", "sqlite index", "postgresql index"])
def s3_env(
    request: pytest.FixtureRequest, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[str, str]:
    """The S3 endpoint, with each way of listing a session's calls: a manifest object beside the payloads, or a
    session index (``TOOLCTX_INDEX``) on SQLite or on a real PostgreSQL server."""
    if request.param == "manifest object":
        return s3_env
    if request.param == "sqlite index":
        url = f"sqlite:///{tmp_path / 'index.db'}"
    else:
        url = new_postgres_database(request.getfixturevalue("postgres_url"))
    monkeypatch.setenv("TOOLCTX_INDEX", url)
    return {**s3_env, "TOOLCTX_INDEX": url}


BIG = "".join(f"line {i}: figures for region {i % 7}\n" for i in range(3000))


def worker(script: str, env: dict[str, str], *args: str) -> str:
    """Run ``script`` in a new Python process reaching the S3 server; its standard output."""
    environment = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


STORE_ONE = """
    import sys, toolctx
    with toolctx.session(store=sys.argv[1], keep=True, threshold=0) as s:
        pointer = s.save_context("report", {"region": "emea"}, sys.argv[3], call_id="c1", task_id="thread-1")
        print(s.session_id, pointer.id)
"""

READ_ONE = """
    import sys, toolctx
    from toolctx.compaction import read_context
    s = toolctx.ContextSession.resume(sys.argv[2], store=sys.argv[1])
    print(read_context(s, "ctx:" + sys.argv[3], 0, 10**9, scope="thread-1").partition("\\n")[2] == sys.argv[4])
    print(read_context(s, "ctx:" + sys.argv[3], 0, 10**9, scope="thread-2").startswith("No stored output"))
    s.close()
"""


def test_a_handle_stored_by_one_process_reads_back_in_another(s3_server: Any, s3_env: dict[str, str]) -> None:
    url = f"s3://{s3_server.bucket()}/agents"
    session_id, pointer = worker(STORE_ONE, s3_env, url, "", BIG[:20000]).split()
    assert worker(READ_ONE, s3_env, url, session_id, pointer, BIG[:20000]).split() == ["True", "True"]


def test_the_store_can_come_from_the_environment(
    s3_server: Any, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"s3://{s3_server.bucket()}/agents"
    monkeypatch.setenv("TOOLCTX_STORE", url)
    with toolctx.session(tmp_path / "ctx", keep=True, threshold=0) as s:
        pointer = s.save_context("report", {}, BIG)
        session_id = s.session_id
    assert not (tmp_path / "ctx").exists()  # nothing on the local disk
    resumed = toolctx.ContextSession.resume(session_id)
    assert read_context(resumed, pointer.handle, 0, 10**9).partition("\n")[2] == BIG
    resumed.close()
    with pytest.raises(SessionNotFoundError):
        toolctx.ContextSession.resume("20261128T000000-00000000")


LIVE_WRITER = """
    import sys, time, toolctx
    s = toolctx.ContextSession.resume(sys.argv[2], store=sys.argv[1], threshold=0)
    pointer = s.save_context("late", {}, sys.argv[3], task_id="thread-1")
    print(pointer.id)
    s.close()
"""


def test_a_session_open_in_two_processes_reads_what_the_other_stored(s3_server: Any, s3_env: dict[str, str]) -> None:
    # No lock is held: a second worker opens the same session while this one has it open, and each reads
    # back what the other stored since (the manifest, appended by both, tells the first worker).
    url = f"s3://{s3_server.bucket()}/agents"
    with toolctx.session(store=url, keep=True, threshold=0) as s:
        mine = s.save_context("early", {}, "early " * 500, task_id="thread-1")
        theirs = worker(LIVE_WRITER, s3_env, url, s.session_id, "late " * 700)
        assert read_context(s, f"ctx:{theirs}", 0, 10**9, scope="thread-1").partition("\n")[2] == "late " * 700
        assert read_context(s, mine.handle, 0, 10**9, scope="thread-1").partition("\n")[2] == "early " * 500
        lines = s.store.get("manifest.jsonl").decode().splitlines()
        assert len(lines) == 2  # both workers' entries, neither lost


CONVERSATION_TURN = """
    import sys, toolctx
    conversations = toolctx.Conversations(sys.argv[2], store=sys.argv[1])
    with conversations.open(sys.argv[3]) as s:
        found = [p for p in s.get_all_pointers()]
        pointer = s.save_context("turn", {"n": len(found)}, sys.argv[4], task_id=sys.argv[3])
        print(pointer.id, len(found))
    conversations.close()
"""


def test_turns_of_one_conversation_on_other_workers_while_the_first_keeps_it_open(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path
) -> None:
    url = f"s3://{s3_server.bucket()}/conversations"
    conversations = Conversations(tmp_path / "local", store=url)
    try:
        with conversations.open("thread-9") as s:
            first = s.save_context("turn", {"n": 0}, "zero " * 400, task_id="thread-9")
        # This worker keeps the conversation open between turns (no lock, no lease); the next turn lands elsewhere.
        second, seen = worker(CONVERSATION_TURN, s3_env, url, str(tmp_path / "other"), "thread-9", "one " * 400).split()
        assert seen == "1"  # the other worker saw turn 1, and was never told the conversation was busy
        with conversations.open("thread-9") as again:  # turn 3, back here
            assert again is s
            back = read_context(s, f"ctx:{second}", 0, 10**9, scope="thread-9")
            assert back.partition("\n")[2] == "one " * 400
            assert read_context(s, first.handle, 0, 10**9, scope="thread-9").partition("\n")[2] == "zero " * 400
    finally:
        conversations.close()


@pytest.mark.parametrize("where", ["object store", "local folder"])
def test_deleting_a_conversation_removes_everything_it_stored(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path, where: str
) -> None:
    store = f"s3://{s3_server.bucket()}/conversations" if where == "object store" else None
    conversations = Conversations(tmp_path / "local", **({"store": store} if store else {}))
    try:
        with conversations.open("thread-1") as s:
            s.save_context("report", {}, BIG, task_id="thread-1")
            with pytest.raises(toolctx.ConfigError, match="in use"):
                conversations.delete("thread-1")
        with conversations.open("thread-2") as other:
            kept = other.save_context("report", {}, "theirs " * 300, task_id="thread-2")
        assert conversations.delete("thread-1") is True
        assert conversations.delete("thread-1") is False
        with pytest.raises(SessionNotFoundError):
            toolctx.ContextSession.resume(Conversations.session_id("thread-1"), tmp_path / "local", store=store)
        conversations.close()  # (a worker done with them: the other conversation is read back from the store)
        again = toolctx.ContextSession.resume(Conversations.session_id("thread-2"), tmp_path / "local", store=store)
        assert read_context(again, kept.handle, 0, 10**9).partition("\n")[2] == "theirs " * 300
        again.close()
    finally:
        conversations.close()


def test_a_page_of_a_long_output_is_one_ranged_read_exact_to_the_character(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Non-ASCII characters, quotes, tabs and backslashes: a character is 1 to 6 bytes in the stored document.
    text = "".join(f'línea {i}: "citada"\tc:\\ruta — ✓ {"x" * (i % 50)} 🙂\n' for i in range(3000))
    store = f"s3://{s3_server.bucket()}/p"
    with toolctx.session(tmp_path, store=store, keep=True, threshold=0) as first:
        saved = first.save_context("cat", {"path": "notes.txt"}, text, call_id="c1", task_id="thread-1")
        other = toolctx.ContextSession.resume(first.session_id, store=store)  # (another worker: not in memory)
        requests = count_calls(monkeypatch, ObjectStore, ("get", "read_range"))
        try:
            for offset, limit in [(0, 100), (12_345, 4000), (len(text) - 50, 4000), (len(text) // 3, 70_000)]:
                del requests[:]
                read = read_context(other, saved.handle, offset, limit, scope="thread-1")
                end = min(len(text), offset + limit)
                assert read.partition("\n")[0].startswith(f"[{saved.handle} characters {offset:,}-{end:,} of ")
                assert read.partition("\n")[2] == text[offset:end]
                assert requests == ["read_range"]  # one ranged GET: neither the whole document nor the manifest
            assert read_context(other, saved.handle, 0, 100, scope="thread-2").startswith("No stored output")
        finally:
            other.close()


def test_messages_name_the_object_store_not_a_local_folder(s3_env: dict[str, str], tmp_path: Path) -> None:
    """A session or a conversation kept in object storage is named by its store's URL, in the warning a failed
    write gives and in its repr: no local folder is named (none is made)."""
    url = "s3://no-such-bucket/agents"
    conversations = Conversations(tmp_path / "unused", store=url)
    assert repr(conversations).startswith(f"<Conversations in {url!r}")
    with warnings.catch_warnings(record=True) as caught, toolctx.session(store=url) as session:
        warnings.simplefilter("always")
        assert f"in '{url}/{session.session_id}'" in repr(session)
        saved = session.save_context("report", {}, BIG)
        assert not saved.stored
    message, ended = (str(w.message) for w in caught if issubclass(w.category, toolctx.ToolctxWarning))
    assert f"could not store the output of tool 'report' in '{url}/{session.session_id}'" in message, message
    # the block ends, its clean-up said to have failed (nothing raised from the with)
    assert f"could not delete what session {session.session_id} stored in '{url}/{session.session_id}'" in ended
    assert session.closed
    if "TOOLCTX_INDEX" in s3_env:  # (no row of it is left to keep the store's sweep from what it wrote)
        index = index_of(s3_env["TOOLCTX_INDEX"])
        assert index is not None
        assert not index.exists(session.session_id)
    conversations.close()
    assert not (tmp_path / "unused").exists()
    assert str(session.session_dir) not in message

"""A conversation served by a fleet: one turn at a time by lease, expiry and a sweep away from requests.

Real processes, a real S3 endpoint over HTTP on loopback (moto's server) and a
session index on SQLite and on a real PostgreSQL server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import toolctx
from tests.conftest import new_postgres_database
from toolctx import ConfigError, Conversations, SessionBusyError
from toolctx.compaction import CompactionSettings, at_tool_time, read_context
from toolctx.index import expire, index_of, sweep
from toolctx.storage import ObjectStore


@pytest.fixture(params=["sqlite", "postgresql"])
def fleet(
    request: pytest.FixtureRequest,
    s3_server: Any,
    s3_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str]:
    """What every worker is given (this process too): the S3 endpoint, a store URL and an empty index's URL."""
    if request.param == "sqlite":
        index = f"sqlite:///{tmp_path / 'index.db'}"
    else:
        index = new_postgres_database(request.getfixturevalue("postgres_url"))
    given = {**s3_env, "TOOLCTX_STORE": f"s3://{s3_server.bucket()}/conversations", "TOOLCTX_INDEX": index}
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    return given


HOLD_A_TURN = """
    import sys, time, toolctx
    conversations = toolctx.Conversations(sys.argv[1], lease=float(sys.argv[3]))
    with conversations.open(sys.argv[2]) as s:
        s.save_context("turn", {}, "held " * 300, task_id=sys.argv[2])
        print("holding", flush=True)
        if sys.argv[4] == "until-told":  # (until the test closes the worker's input)
            sys.stdin.readline()
        else:
            time.sleep(float(sys.argv[4]))
    print("done", flush=True)
"""


def until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (a lease's renewer runs in a thread of its own)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def start(script: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    environment = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "holding", process.stderr.read() if process.stderr else ""
    return process


def finish(process: subprocess.Popen[str]) -> str:
    """What a worker printed after its first line, once it exited cleanly."""
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-3000:]
    return out.strip()


def test_a_second_turn_waits_for_the_first_then_runs(fleet: dict[str, str], tmp_path: Path) -> None:
    first = start(HOLD_A_TURN, fleet, str(tmp_path / "w1"), "thread-1", "30", "1.5")
    conversations = Conversations(tmp_path / "w2", lease_wait=120)
    try:
        with conversations.open("thread-1") as s:  # waits for the first turn to end
            assert finish(first) == "done"
            assert [p.tool_name for p in s.get_all_pointers()] == ["turn"]  # the first turn's call, read here
    finally:
        conversations.close()


def test_a_turn_gives_its_lease_up_once_its_uploads_landed_so_the_next_worker_finds_every_call(
    fleet: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = ObjectStore.put

    def slow_put(self: ObjectStore, name: str, chunks: Sequence[bytes]) -> None:
        time.sleep(0.5)  # (an upload still under way when the turn ends)
        put(self, name, chunks)

    monkeypatch.setattr(ObjectStore, "put", slow_put)
    first, second = Conversations(tmp_path / "w1"), Conversations(tmp_path / "w2")
    try:
        session = first.hold("thread-1")
        shown = at_tool_time(CompactionSettings(), session, "ls", {"d": "."}, "a.py", "a.py", call_id="c1")
        assert shown.shown is None  # (shown whole: uploaded in the background)
        first.release("thread-1")
        with second.open("thread-1") as s:
            assert [parts.tool_name for parts in s.call_parts("c1")] == ["ls"]  # (found by identity, not stored again)
    finally:
        first.close()
        second.close()


def test_a_turn_taken_up_here_while_the_last_one_waits_for_its_uploads_keeps_the_lease(
    fleet: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = ObjectStore.put
    gate = threading.Event()

    def held_put(self: ObjectStore, name: str, chunks: Sequence[bytes]) -> None:
        gate.wait(30)  # (an upload still under way when the turn ends)
        put(self, name, chunks)

    monkeypatch.setattr(ObjectStore, "put", held_put)
    monkeypatch.setattr(ObjectStore, "create", held_put)
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    worker = Conversations(tmp_path / "w1")
    try:
        session = worker.hold("thread-1")
        at_tool_time(CompactionSettings(), session, "ls", {"d": "."}, "a.py", "a.py", call_id="c1")
        ending = threading.Thread(target=worker.release, args=("thread-1",))
        ending.start()
        ending.join(0.3)
        assert ending.is_alive()  # (waiting for the upload, the lease still held and renewed)
        worker.hold("thread-1")  # the next turn starts here meanwhile
        gate.set()
        ending.join(30)
        assert f":{os.getpid()}:" in str(index.holder(Conversations.session_id("thread-1")))  # not given up
        worker.release("thread-1")
        assert index.holder(Conversations.session_id("thread-1")) is None
    finally:
        gate.set()
        worker.close()


def test_a_turn_that_cannot_wait_is_told_clearly_and_never_runs_without_toolctx(
    fleet: dict[str, str], tmp_path: Path
) -> None:
    # The first turn outlives its lease (3 s) twice over (until the three tries below are done, 6 s at
    # least, however slow the machine): renewed while it runs, never taken over.
    first = start(HOLD_A_TURN, fleet, str(tmp_path / "w1"), "thread-1", "3", "until-told")
    conversations = Conversations(tmp_path / "w2", lease_wait=0.2)
    try:
        for _ in range(3):
            with (
                pytest.raises(SessionBusyError, match=r"'thread-1' is in a turn on another worker .*lease_wait"),
                conversations.open("thread-1"),
            ):
                pytest.fail("a second turn ran while the first held the conversation")
            time.sleep(2)
        with conversations.open("thread-2") as other:  # another conversation is not held up
            other.save_context("turn", {}, "other", task_id="thread-2")
        assert finish(first) == "done"
        with conversations.open("thread-1") as s:
            assert len(s.get_all_pointers()) == 1
    finally:
        conversations.close()


def test_a_worker_killed_mid_turn_holds_the_conversation_no_longer_than_its_lease(
    fleet: dict[str, str], tmp_path: Path
) -> None:
    first = start(HOLD_A_TURN, fleet, str(tmp_path / "w1"), "thread-1", "2", "600")
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    session_id = Conversations.session_id("thread-1")
    assert f":{first.pid}:" in str(index.holder(session_id))
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    conversations = Conversations(tmp_path / "w2", lease=2, lease_wait=60)
    try:
        with conversations.open("thread-1") as s:  # once the dead worker's lease ran out
            pointer = s.get_all_pointers()[0]
            assert read_context(s, pointer.handle, 0, 10**6).partition("\n")[2] == "held " * 300
            assert f":{os.getpid()}:" in str(index.holder(session_id))
    finally:
        conversations.close()
    assert index.holder(session_id) is None  # given up when the turn ended


def test_expired_conversations_leave_the_index_and_the_store_except_those_in_a_turn(
    fleet: dict[str, str], tmp_path: Path
) -> None:
    conversations = Conversations(tmp_path / "w", keep_for=0)
    for thread in ("old-1", "old-2", "busy"):
        with conversations.open(thread) as s:
            s.save_context("report", {}, "x " * 500, task_id=thread)
    conversations.close()
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    busy = Conversations.session_id("busy")
    assert index.take(busy, "another-worker", 600) is None  # a turn under way elsewhere
    again = Conversations(tmp_path / "w", keep_for=0)
    removed = again.collect()
    assert sorted(removed) == sorted(Conversations.session_id(t) for t in ("old-1", "old-2"))
    for thread in ("old-1", "old-2"):
        assert not index.exists(Conversations.session_id(thread))
        assert ObjectStore(fleet["TOOLCTX_STORE"], Conversations.session_id(thread)).list() == []
    assert index.exists(busy)
    assert ObjectStore(fleet["TOOLCTX_STORE"], busy).list()
    again.close()


def test_the_sweep_removes_payloads_no_index_lists_once_past_the_grace_period(
    fleet: dict[str, str], tmp_path: Path
) -> None:
    url = fleet["TOOLCTX_STORE"]
    with toolctx.session(store=url, keep=True, threshold=0) as listed:
        kept = listed.save_context("report", {}, "kept " * 300)
    orphan = ObjectStore(url, "20261129T000000-0badf00d")  # a worker that died before listing anything
    orphan.put("report_0_0_0_abcdefghij.json", [b"{}"])
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    assert sweep(url, index, grace=3600) == []  # too young: perhaps being listed right now
    # (the index by its URL, as a cron job has it)
    assert sweep(url, fleet["TOOLCTX_INDEX"], grace=0, now=time.time() + 1) == ["20261129T000000-0badf00d"]
    assert orphan.list() == []
    resumed = toolctx.ContextSession.resume(listed.session_id)
    assert read_context(resumed, kept.handle, 0, 10**6).partition("\n")[2] == "kept " * 300
    resumed.close()


@pytest.mark.parametrize("index", [None, "", 42])
def test_the_sweep_and_expiry_name_a_bad_index(index: object) -> None:
    for run in (lambda: sweep("s3://bucket/agents", index), lambda: expire(index)):  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="index must be a SessionIndex or its database URL"):
            run()


def test_an_open_turn_keeps_its_lease_while_it_takes_calls(fleet: dict[str, str], tmp_path: Path) -> None:
    """An Agents SDK run inside ``open()`` calls no hook of the lease: the calls its session takes (stored or
    queued) are its sign of life, however long since the block began; a block that takes none lets it lapse."""
    conversations = Conversations(tmp_path / "w", lease=0.6)
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    try:
        with conversations.open("long turn") as s:
            conversations._held[s.session_id].seen -= 10**6  # (as if the turn had begun days ago)
            for step in range(10):  # over three leases, a tool call every 0.2 s
                s.save_context("build", {"step": step}, "ok")
                time.sleep(0.2)
            assert index.take(s.session_id, "another-worker", 600) is not None  # still held here
        with conversations.open("hung turn") as s:
            conversations._held[s.session_id].seen -= 10**6  # (no sign of life for days)
            time.sleep(2.0)  # over three leases, taking no call
            assert index.take(s.session_id, "another-worker", 600) is None  # let lapse: taken by another
    finally:
        conversations.close()


def test_a_lapsed_lease_taken_again_is_held_again(fleet: dict[str, str], tmp_path: Path) -> None:
    """A turn that showed no sign of life for long lets its lease lapse, and its store stops answering from
    memory; when a sign of life comes while the lease is free, the lease is taken again and the store, after
    reading the conversation anew once, answers from memory again."""
    conversations = Conversations(tmp_path / "w", lease=0.6)
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    try:
        with conversations.open("quiet turn") as s:
            turn = s.store.turn
            conversations._held[s.session_id].seen -= 10**6  # (no sign of life for days)
            assert until(lambda: not s.store.holding)  # (at the renewer's next tick: the lease lapses)
            s.save_context("build", {"step": 1}, "ok")  # a sign of life
            assert until(lambda: s.store.holding)
            assert s.store.turn == turn + 1
            assert index.take(s.session_id, "another-worker", 600) is not None  # held here again
    finally:
        conversations.close()


def test_a_lease_renewed_as_its_turn_ends_is_given_back(fleet: dict[str, str], tmp_path: Path) -> None:
    """The renewer may ask the index to renew a lease just as the turn releases it: what it took then is given
    back, so the next turn of the conversation on another worker does not wait for it to run out."""
    conversations = Conversations(tmp_path / "w", lease=3.0)
    assert conversations.index is not None
    take = conversations.index.take

    def slow(session_id: str, holder: str, seconds: float, now_ns: int | None = None) -> str | None:
        if threading.current_thread().name == "toolctx-lease":
            time.sleep(0.5)  # (the renewer is between its look at the turns and its request when the turn ends)
        return take(session_id, holder, seconds, now_ns)

    conversations.index.take = slow  # type: ignore[method-assign]
    other = Conversations(tmp_path / "v", lease=3.0, lease_wait=1.0)
    try:
        with conversations.open("chat") as s:
            time.sleep(1.2)  # (the renewer's first tick, at 1 s, is asking meanwhile)
        time.sleep(0.8)
        assert other.hold("chat").session_id == s.session_id  # not SessionBusyError after a second
        other.release("chat")
    finally:
        conversations.close()
        other.close()


def test_a_turn_taken_over_is_said_once_and_not_fought_over(fleet: dict[str, str], tmp_path: Path) -> None:
    conversations = Conversations(tmp_path / "w", lease=0.3)
    index = index_of(fleet["TOOLCTX_INDEX"])
    assert index is not None
    try:
        with conversations.open("chat") as s:
            index.release(s.session_id, conversations._holder)  # (as if its lease had run out unrenewed)
            assert index.take(s.session_id, "another-worker", 600) is None
            for step in range(10):  # over three leases, the turn still taking calls
                s.save_context("build", {"step": step}, "ok")
                time.sleep(0.1)
            assert index.holder(s.session_id) == "another-worker"  # its turn, not taken back
    finally:
        conversations.close()
    said = toolctx.testing.escalated_warnings()  # (a warning: escalated to an error, and kept, under pytest)
    assert len([m for m in said if "was taken over by another-worker" in m]) == 1
    assert len(said) == 1

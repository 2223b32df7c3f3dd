"""Calls a tool hook queues are stored before anything reads the session, in order, tagged and timed as queued."""

from __future__ import annotations

import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from toolctx import ContextSession, StorageKind, ToolctxWarning, hash_query, session
from toolctx.compaction import CompactionSettings, notes, persist_call, queue_call, shown_output, shown_whole
from toolctx.tokens import _estimate, estimate_tokens


def test_a_queued_call_is_there_for_every_reader_at_once(context_dir: Path) -> None:
    with session(context_dir) as s:
        assert queue_call(s, "grep", {"pattern": "todo"}, "a.py:3: # todo", call_id="c1")
        assert s._saver._later  # (not stored yet: nothing has read the session)
        pointer = s.find_call("c1")
        assert pointer is not None
        assert pointer.tool_name == "grep"
        assert s.load_contexts([pointer])[0].result == "a.py:3: # todo"
        assert s.load_contexts([pointer])[0].args == {"pattern": "todo"}
        queue_call(s, "grep", {"pattern": "fixme"}, "b.py:9: # fixme", call_id="c2")
        assert len(s) == 2
        queue_call(s, "grep", {"pattern": "note"}, "c.py:1: # a note on pagination", call_id="c3")
        assert [p.id for p in s.select_relevant_contexts("pagination note")][:1] == [s.find_call("c3").id]  # type: ignore[union-attr]


def test_queued_calls_keep_their_order_with_calls_saved_directly(context_dir: Path) -> None:
    with session(context_dir) as s:
        queue_call(s, "first", {}, "1", call_id="a")
        s.save_context("second", {}, "2", call_id="b")  # stores the queue before itself
        queue_call(s, "third", {}, "3", call_id="c")
        pointers = s.get_all_pointers()
        assert [p.tool_name for p in pointers] == ["first", "second", "third"]
        assert [p.call_id for p in pointers] == ["a", "b", "c"]
        assert [p.timestamp for p in pointers] == sorted(p.timestamp for p in pointers)


def test_a_queued_call_keeps_its_arguments_as_they_were_when_queued(context_dir: Path) -> None:
    class Region:  # not JSON: stored in the fallback form a direct save gives it
        def __repr__(self) -> str:
            return "Region(emea)"

    token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"  # a secret deep in the arguments: redacted alike

    def arguments() -> dict[str, Any]:
        return {"zone": Region(), "paths": ["a.py"], "options": {"depth": 1, "auth": [token]}, "all": True}

    with session(context_dir) as s:
        queued = arguments()
        queue_call(s, "scan", queued, "2 files", call_id="q")
        assert len(s._saver._later) == 1  # (queued, not stored yet)
        queued["paths"].append("b.py")  # the framework's state changing what the call was given
        queued["options"]["depth"] = 9
        queued["extra"] = 1
        s.save_context("scan", arguments(), "2 files", call_id="d")  # stores the queue before itself
        pointers = s.get_all_pointers()
        [kept, saved] = s.load_contexts(pointers)
    assert kept.args == saved.args
    assert kept.notes == saved.notes
    assert kept.notes  # (the object that is not JSON is noted, the same way)
    assert token not in str(kept.args)
    assert [list(p.args) for p in pointers] == [["zone", "paths", "options", "all"]] * 2  # (in the order given)
    assert kept.args["paths"] == ["a.py"]
    assert kept.args["options"]["depth"] == 1
    assert kept.args_hash == saved.args_hash


def test_a_queued_call_is_tagged_and_timed_as_it_was_queued(context_dir: Path) -> None:
    with session(context_dir) as s:
        with s.task("fix-42"):
            before = time.time_ns()
            queue_call(s, "run", {"command": "pytest"}, "3 passed", call_id="t1")
            queued_at = time.time_ns()
        notes(s).question("why does the build fail?")
        queue_call(s, "run", {"command": "make"}, "ok", call_id="t2")
        notes(s).question(None)
        time.sleep(0.01)
        first, second = s.get_all_pointers()  # stored now, outside the task block
        assert first.task_id == "fix-42"
        assert before <= first.timestamp.timestamp() * 1e9 <= queued_at + 1e6  # (datetime keeps microseconds)
        assert second.query_id == hash_query("why does the build fail?")


def test_a_session_that_ends_stores_what_was_queued_and_then_refuses(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        queue_call(s, "ls", {"path": "."}, "a.py b.py", call_id="k1")
        session_id = s.session_id
    with pytest.warns(ToolctxWarning, match="could not store a call of tool 'ls'.*has ended"):
        assert not queue_call(s, "ls", {}, "late", call_id="k2")  # the session has ended: said, not stored
    with ContextSession.resume(session_id, context_dir, keep=False) as resumed:
        pointer = resumed.find_call("k1")
        assert pointer is not None
        assert resumed.load_contexts([pointer])[0].result == "a.py b.py"
        assert resumed.find_call("k2") is None


def test_a_call_that_cannot_be_queued_is_said_at_once_naming_the_value(context_dir: Path) -> None:
    with session(context_dir) as s:
        with pytest.warns(ToolctxWarning, match="tool_name must be a non-empty str, got ''"):
            assert not queue_call(s, "", {}, "no tool name")
        with pytest.warns(ToolctxWarning, match="task_id must be an int or a str, got float: 1.5"):
            assert not queue_call(s, "ok", {}, "a bad task", task_id=1.5)  # type: ignore[arg-type]
        assert not s._saver._later
        assert len(s) == 0


def test_a_queued_call_that_cannot_be_stored_is_logged_and_the_next_ones_still_are(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session(context_dir) as s:
        queue_call(s, "boom", {}, "refused when stored", call_id="bad")
        queue_call(s, "ok", {}, "fine", call_id="good")
        save = type(s._saver).save

        def failing(saver: Any, call: Any, *args: Any) -> Any:
            if call.tool_name == "boom":
                raise OSError("disk full")
            return save(saver, call, *args)

        monkeypatch.setattr(type(s._saver), "save", failing)
        with pytest.warns(ToolctxWarning, match="could not store a queued tool call.*disk full"):
            assert s.find_call("bad") is None
        assert s.find_call("good") is not None


def test_calls_queued_from_many_threads_are_each_stored_once(context_dir: Path) -> None:
    with session(context_dir) as s:
        start = threading.Barrier(5)

        def queue_many(worker: int) -> None:
            start.wait()
            for i in range(50):
                queue_call(s, "work", {"worker": worker, "i": i}, f"{worker}-{i}", call_id=f"{worker}-{i}")

        def read_meanwhile() -> None:
            start.wait()
            for _ in range(50):
                s.find_call("0-0")
                len(s)

        threads = [threading.Thread(target=queue_many, args=(w,)) for w in range(4)]
        threads.append(threading.Thread(target=read_meanwhile))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pointers = s.get_all_pointers()
        assert sorted(p.call_id or "" for p in pointers) == sorted(f"{w}-{i}" for w in range(4) for i in range(50))
        assert len({p.id for p in pointers}) == 200
        for worker in range(4):  # each thread's calls in the order it queued them
            mine = [p.call_id for p in pointers if (p.call_id or "").startswith(f"{worker}-")]
            assert mine == [f"{worker}-{i}" for i in range(50)]


def test_an_output_qualifies_when_its_estimate_is_within_max_output_tokens() -> None:
    settings = CompactionSettings(max_output_tokens=10)
    assert shown_whole(settings, "0123456789")  # no more characters than that: never more tokens
    assert shown_whole(settings, "word " * 8)  # longer, but estimated within it
    assert shown_whole(settings, "café au lait")  # not ASCII, estimated within it
    assert not shown_whole(settings, "word " * 40)
    assert not shown_whole(settings, "日本語のテキスト" * 4)
    assert estimate_tokens("word " * 8) <= 10 < estimate_tokens("word " * 40)


@pytest.fixture
def estimates(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lengths of the texts the compaction helpers estimate (none remembered from before)."""
    made: list[int] = []

    def counted(text: str | bytes) -> int:
        made.append(len(text))
        return estimate_tokens(text)

    monkeypatch.setattr(_estimate, "estimate_tokens", counted)
    monkeypatch.setattr(_estimate, "_estimates", {})
    return made


@pytest.mark.parametrize("length", [4_096, 4_097, 95_000])  # (estimated in shown_whole, or not)
def test_a_long_output_is_estimated_once_on_its_way_to_a_stand_in(
    context_dir: Path, estimates: list[int], length: int
) -> None:
    settings = CompactionSettings(max_output_tokens=100)
    output = ("line of a long log\n" * 5_000)[:length]
    with session(context_dir) as s:
        assert not shown_whole(settings, output)
        saved = persist_call(s, "tail", {"path": "app.log"}, output)
        notes(s).offer_read_context = True
        shown = shown_output(settings, s, saved, output)
    assert shown is not None
    assert shown.startswith("[toolctx stand-in]")
    assert estimates == [length]


def test_a_longer_output_within_the_limit_is_left_to_the_stand_in_decision(
    context_dir: Path, estimates: list[int]
) -> None:
    settings = CompactionSettings(max_output_tokens=2_000)
    assert shown_whole(settings, ("word " * 1_000)[:4_096])  # estimated there: queued
    estimates.clear()
    output = "word " * 1_000  # 5,000 characters, about 1,000 tokens: shown whole, but too long to queue
    assert not shown_whole(settings, ("word " * 1_000)[:4_097])
    assert not shown_whole(settings, output)
    assert estimates == []  # (not estimated there: shown_output does it, once)
    with session(context_dir) as s:
        saved = persist_call(s, "echo", {}, output)
        assert shown_output(settings, s, saved, output) is None
    assert estimates == [5_000]


def test_an_output_whose_json_may_reach_the_threshold_is_stored_at_once(context_dir: Path) -> None:
    with session(context_dir, threshold=4_096) as s:
        greek = "α" * 2_400  # 2,400 characters, 4,802 bytes of JSON: over the threshold, to disk
        queue_call(s, "read", {"path": "a.txt"}, greek, call_id="g")
        queue_call(s, "read", {"path": "b.txt"}, "short", call_id="s")
        assert len(s._saver._later) == 1  # only the short one waits
        pointer = s.find_call("g")
        assert pointer is not None
        assert pointer.storage is StorageKind.DISK
        assert s.load_contexts([pointer])[0].result == greek


def test_a_session_nothing_reads_stores_its_queue_every_64_calls(context_dir: Path) -> None:
    with session(context_dir) as s:
        for i in range(64):
            queue_call(s, "poll", {"i": i}, "nothing new", call_id=f"p{i}")
        assert not s._saver._later  # the 64th stored them all: the queue stays small
        assert len(s._saver._records) == 64  # (read without storing anything)
        queue_call(s, "poll", {"i": 64}, "nothing new", call_id="p64")
        assert len(s._saver._later) == 1


def test_calls_are_listed_by_the_time_they_were_made_whenever_they_were_stored(context_dir: Path) -> None:
    with session(context_dir) as s:
        s.save_context("now", {}, "made now", call_id="now")
        made_before = time.time_ns() - 10**9
        s._record("earlier", {}, "made a second ago, stored after", call_id="earlier", timestamp_ns=made_before)
        assert [p.call_id for p in s.get_all_pointers()] == ["earlier", "now"]


def test_a_call_whose_output_goes_to_disk_at_once_is_not_queued(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:  # (as Conversations opens its sessions: on disk as saved)
        queue_call(s, "ls", {}, "a.py", call_id="d1")
        assert not s._saver._later
        assert s._saver.named("d1", None)[0].storage is StorageKind.DISK


def test_memory_bytes_counts_what_was_queued(context_dir: Path) -> None:
    with session(context_dir) as s:
        queue_call(s, "ls", {}, "a.py b.py", call_id="m1")
        assert s.memory_bytes > 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_has_the_calls_queued_before_the_fork(context_dir: Path) -> None:
    with session(context_dir) as s:
        queue_call(s, "ls", {}, "a.py", call_id="f1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            os._exit(0 if s.find_call("f1") is not None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert s.find_call("f1") is not None


def test_a_session_whose_end_is_interrupted_stays_open_and_queues_again(context_dir: Path) -> None:
    s = ContextSession(context_dir)
    queue_call(s, "ls", {}, "a.py", call_id="c1")

    def interrupted() -> None:
        raise KeyboardInterrupt

    s._saver.queue(interrupted)  # (stands for a Ctrl-C while close() stores the queue)
    with pytest.raises(KeyboardInterrupt):
        s.close()
    assert not s.closed
    assert queue_call(s, "ls", {}, "b.py", call_id="c2")  # taken, not refused as if the session had ended
    assert s.find_call("c1") is not None
    assert s.find_call("c2") is not None
    s.close()
    assert s.closed


def test_ending_a_session_waits_at_most_its_close_timeout_for_another_thread_storing_the_queue(
    context_dir: Path,
) -> None:
    s = ContextSession(context_dir, close_timeout=0.2)
    queue_call(s, "ls", {}, "a.py", call_id="c1")
    held, release = threading.Event(), threading.Event()

    def storing_forever() -> None:  # (stands for a thread whose store hangs while it stores the queue)
        with s._saver._later._lock:
            held.set()
            release.wait(60)

    blocker = threading.Thread(target=storing_forever)
    blocker.start()
    held.wait(10)
    closer = threading.Thread(target=s.close)

    def ends() -> bool:
        closer.start()
        closer.join(30)  # (a hang detector, not a timing: close gives up after 0.2 s)
        return not closer.is_alive()

    with pytest.warns(ToolctxWarning, match="still storing its queue; 1 queued call"):
        ended = ends()
    release.set()
    blocker.join()
    closer.join()
    assert ended

"""Calls a tool hook queues are stored before anything reads the session, in order, tagged and timed as queued."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from toolctx import ContextSession, ToolctxWarning, hash_query, session
from toolctx.compaction import CompactionSettings, notes, queue_call, shown_whole


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


def test_a_queued_call_that_cannot_be_stored_is_logged_and_the_next_ones_still_are(context_dir: Path) -> None:
    with session(context_dir) as s:
        queue_call(s, "", {}, "no tool name: refused when stored", call_id="bad")
        queue_call(s, "ok", {}, "fine", call_id="good")
        with pytest.warns(ToolctxWarning, match="could not store a queued tool call.*tool_name"):
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


def test_only_an_output_certainly_shown_whole_qualifies() -> None:
    settings = CompactionSettings(max_output_tokens=10)
    assert shown_whole(settings, "0123456789")
    assert not shown_whole(settings, "0123456789a")  # may be over max_output_tokens
    assert not shown_whole(settings, "café")  # not ASCII: may take more tokens than characters


def test_a_session_nothing_reads_stores_its_queue_every_64_calls(context_dir: Path) -> None:
    with session(context_dir) as s:
        for i in range(64):
            queue_call(s, "poll", {"i": i}, "nothing new", call_id=f"p{i}")
        assert not s._saver._later  # the 64th stored them all: the queue stays small
        assert len(s._saver._records) == 64  # (read without storing anything)
        queue_call(s, "poll", {"i": 64}, "nothing new", call_id="p64")
        assert len(s._saver._later) == 1

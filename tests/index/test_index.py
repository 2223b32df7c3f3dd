"""The session index on SQLite and on a real PostgreSQL server: its layout, listings, leases, expiry, decisions."""

from __future__ import annotations

import multiprocessing

import pytest
from sqlalchemy import select

from toolctx import ConfigError
from toolctx.index import SCHEMA_VERSION, SessionIndex
from toolctx.index._schema import meta

SECOND = 1_000_000_000
NOW = 1_800_000_000 * SECOND


def test_a_new_database_gets_the_current_layout_once(index_url: str) -> None:
    first = SessionIndex(index_url)
    first.touch("s1", "s3://b/p", None)
    again = SessionIndex(index_url)  # (another worker opening it: nothing recreated, nothing lost)
    assert again.exists("s1")
    with again.engine.connect() as conn:
        assert conn.execute(select(meta.c.value).where(meta.c.key == "version")).scalars().all() == [SCHEMA_VERSION]
    first.close()
    again.close()


def test_a_layout_newer_than_this_release_is_refused(index_url: str) -> None:
    index = SessionIndex(index_url)
    with index.engine.begin() as conn:
        conn.execute(meta.update().values(value=SCHEMA_VERSION + 1))
    index.close()
    with pytest.raises(ConfigError, match=f"layout version {SCHEMA_VERSION + 1}, newer than this toolctx knows"):
        SessionIndex(index_url)


def test_bad_urls_are_refused_with_what_to_give() -> None:
    with pytest.raises(ConfigError, match="postgresql://user@host/db"):
        SessionIndex("s3://bucket/prefix")
    with pytest.raises(ConfigError, match="'mysql://localhost/db'"):
        SessionIndex("mysql://localhost/db")


def _open_and_list(url: str, worker: int) -> int:
    index = SessionIndex(url)
    index.touch("shared", "s3://b/p", None)
    index.add("shared", f'{{"id":"r{worker}"}}\n'.encode(), record_id=f"r{worker}", task="t", call_id="c")
    return len(index.entries("shared"))


def test_workers_opening_a_new_index_at_once_create_it_once(index_url: str) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(_open_and_list, [(index_url, n) for n in range(4)])
    index = SessionIndex(index_url)
    assert sorted(index.entries("shared")) == sorted(f'{{"id":"r{n}"}}\n'.encode() for n in range(4))
    with index.engine.connect() as conn:
        assert conn.execute(select(meta.c.value)).scalars().all() == [SCHEMA_VERSION]
    index.close()


def test_calls_are_listed_once_in_order_and_found_by_their_identity(index_url: str) -> None:
    index = SessionIndex(index_url)
    index.touch("s", "s3://b/p", None)
    index.add("s", b"one\n", record_id="a", task="thread-1", call_id="call_0")
    index.add("s", b"two\n", record_id="b", task="thread-2", call_id="call_0")  # another conversation's call_0
    index.add("s", b"one\n", record_id="a", task="thread-1", call_id="call_0")  # listed again: no second row
    index.add("s", b"three\n", record_id="c", task="thread-1", call_id="call_0")  # the same id in a later response
    index.add("other", b"four\n", record_id="a", task="thread-1", call_id="call_0")
    assert index.entries("s") == [b"one\n", b"two\n", b"three\n"]
    assert index.identified("s", "thread-1", "call_0") == [b"one\n", b"three\n"]
    assert index.identified("s", "thread-2", "call_0") == [b"two\n"]
    assert index.identified("s", None, "call_0") == []
    index.replace("s", [(b"two\n", "b", "thread-2", "call_0")])
    assert index.entries("s") == [b"two\n"]
    assert index.entries("other") == [b"four\n"]
    index.close()


def test_a_lease_is_held_renewed_taken_over_once_it_runs_out_and_released(index_url: str) -> None:
    index = SessionIndex(index_url)
    index.touch("conv", "s3://b/p", None)
    assert index.take("conv", "worker-a", 30, NOW) is None
    assert index.take("conv", "worker-b", 30, NOW + 10 * SECOND) == "worker-a"
    assert index.take("conv", "worker-a", 30, NOW + 20 * SECOND) is None  # renewed: until NOW + 50 s
    assert index.take("conv", "worker-b", 30, NOW + 40 * SECOND) == "worker-a"
    assert index.take("conv", "worker-b", 30, NOW + 51 * SECOND) is None  # worker-a went silent: taken over
    assert index.release("conv", "worker-a") is False  # (it no longer held it)
    assert index.take("conv", "worker-a", 30, NOW + 52 * SECOND) == "worker-b"
    assert index.release("conv", "worker-b") is True
    assert index.take("conv", "worker-a", 30, NOW + 53 * SECOND) is None
    with pytest.raises(KeyError):
        index.take("never-recorded", "worker-a", 30, NOW)
    index.close()


def test_sessions_expire_from_their_last_use(index_url: str) -> None:
    index = SessionIndex(index_url)
    index.touch("old", "s3://b/old", 60, NOW)
    index.touch("young", "s3://b/young", 60, NOW + 30 * SECOND)
    index.touch("kept", "s3://b/kept", None, NOW)
    assert index.expired(NOW + 61 * SECOND) == [("old", "s3://b/old")]
    index.touch("old", "s3://b/old", 60, NOW + 61 * SECOND)  # used again: its time starts over
    assert index.expired(NOW + 100 * SECOND) == [("young", "s3://b/young")]
    assert index.expired(NOW + 10**6 * SECOND) == [("young", "s3://b/young"), ("old", "s3://b/old")]
    assert index.known(["old", "kept", "gone"]) == {"old", "kept"}
    index.close()


def test_forgetting_a_session_removes_its_calls_notes_and_decisions_only(index_url: str) -> None:
    index = SessionIndex(index_url)
    for session in ("doomed", "other"):
        index.touch(session, "s3://b/p", None)
        index.add(session, b"x\n", record_id="r", task=None, call_id=None)
        index.note(session, "compacted")
        index.decide(session, "thread-1", '{"results": [["c", 1, "shown"]]}')
    assert index.forget("doomed") is True
    assert index.forget("doomed") is False
    assert not index.exists("doomed")
    assert index.entries("doomed") == []
    assert index.decided("doomed", "thread-1") is None
    assert index.noted("other", "compacted")
    assert index.decided("other", "thread-1") == '{"results": [["c", 1, "shown"]]}'
    index.close()


def test_a_sessions_notes_and_decisions_read_together_in_one_query(index_url: str) -> None:
    index = SessionIndex(index_url)
    assert index.state("s") is None
    index.touch("s", "s3://b/p", None)
    assert index.state("s") == (set(), {})
    index.note("s", "offered")
    index.note("s", "other")
    index.decide("s", "one", '{"results": "ünïcode"}')
    index.decide("s", "two", "{}")
    index.touch("t", "s3://b/p", None)
    index.decide("t", "one", '{"of": "t"}')
    assert index.state("s") == ({"offered", "other"}, {"one": '{"results": "ünïcode"}', "two": "{}"})
    index.close()


def test_notes_and_decisions_read_back_as_written(index_url: str) -> None:
    index = SessionIndex(index_url)
    index.touch("s", "s3://b/p", None)
    assert not index.noted("s", "word")
    index.note("s", "word")
    index.note("s", "word")
    assert index.noted("s", "word")
    assert not index.noted("s", "wor")
    decided = '{"results": [["call_1", 123, "[stand-in] ünïcode"]], "args": []}'
    index.decide("s", "scope", decided)
    assert index.decided("s", "scope") == decided
    index.decide("s", "scope", '{"results": []}')
    assert index.decided("s", "scope") == '{"results": []}'
    assert index.decided("s", "another scope") is None
    index.close()

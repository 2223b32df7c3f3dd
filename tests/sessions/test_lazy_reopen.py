"""Reopening a long conversation costs what the turn uses: a call is built from the manifest when it is first used."""

from __future__ import annotations

import gc
import tracemalloc
from contextlib import nullcontext
from pathlib import Path

import orjson
from structlog.testing import capture_logs

from toolctx import ContextPointer, ContextSession, session
from toolctx._naming import MANIFEST_NAME
from toolctx.redaction import default_redactor

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _kept(context_dir: Path, calls: int) -> tuple[str, list[ContextPointer]]:
    """A kept session of ``calls`` calls on disk (the i-th under task i % 3, none for 0, and a query); its id and
    pointers."""
    pointers = []
    with session(context_dir, keep=True, threshold=0) as s:
        for i in range(calls):
            body = f"needle{i} " + " ".join(WORDS[(i * k) % len(WORDS)] for k in range(20 + i % 50))
            with s.task(i % 3) if i % 3 else nullcontext(), s.query(f"q{i % 2}"):
                pointers.append(
                    s.save_context("grep", {"pattern": f"p{i}", "path": f"src/m{i % 7}.py"}, body, call_id=f"c{i}")
                )
    return s.session_id, pointers


def _lines(context_dir: Path, session_id: str) -> list[bytes]:
    return (context_dir / session_id / MANIFEST_NAME).read_bytes().splitlines(keepends=True)


def _same(pointer: ContextPointer, original: ContextPointer) -> None:
    assert pointer.model_dump() == original.model_dump()


def test_a_turn_that_reads_one_handle_holds_less_than_one_that_reads_every_call(context_dir: Path) -> None:
    session_id, pointers = _kept(context_dir, 1500)
    gc.collect()
    tracemalloc.start()
    try:
        resumed = ContextSession.resume(session_id, context_dir)
        [context] = resumed.load_contexts([pointers[700].id])
        one = tracemalloc.get_traced_memory()[0]
        assert len(resumed.get_all_pointers()) == 1500  # (every call used: each is built)
        gc.collect()
        every = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert context.args == {"pattern": "p700", "path": "src/m0.py"}
    # (a call's line held, less than the built call holds, against every call built)
    assert one < 0.95 * every, f"{one / 1500:.0f} bytes a call after one read, {every / 1500:.0f} after all"
    resumed.close()


def test_reopened_pointers_are_the_ones_handed_out_whatever_form_their_lines_take(context_dir: Path) -> None:
    session_id, pointers = _kept(context_dir, 40)
    lines = _lines(context_dir, session_id)
    # Lines another writer might leave: keys in another order and spaced out, a timestamp ending in Z, a size
    # as a string (the pointer model takes these as before, only not by the quick check).
    first = orjson.loads(lines[1])
    lines[1] = orjson.dumps(dict(reversed(first.items())), option=orjson.OPT_INDENT_2).replace(b"\n", b" ") + b"\n"
    second = orjson.loads(lines[2])
    second["timestamp"] = second["timestamp"].replace("+00:00", "Z")
    second["size"] = str(second["size"])
    lines[2] = orjson.dumps(second) + b"\n"
    (context_dir / session_id / MANIFEST_NAME).write_bytes(b"".join(lines))
    with ContextSession.resume(session_id, context_dir) as resumed:
        assert len(resumed) == 40
        assert resumed.get_pointer(pointers[2].id) == pointers[2]  # (one call built alone, before the others)
        for pointer, original in zip(resumed.get_all_pointers(), pointers, strict=True):
            _same(pointer, original)
        first = resumed.load_contexts(pointers[:3])[0]
        assert isinstance(first.result, str)
        assert first.result.startswith("needle0 ")


def test_calls_are_found_by_framework_id_and_task_after_reopening_and_new_ones_come_first(context_dir: Path) -> None:
    session_id, pointers = _kept(context_dir, 30)
    with ContextSession.resume(session_id, context_dir) as resumed:
        found = resumed.find_call("c4", task_id=1)
        assert found is not None
        _same(found, pointers[4])
        assert resumed.find_call("c4", task_id=2) is None  # (c4 was stored under task 1)
        assert resumed.find_call("c3") is not None  # (c3 under no task)
        with resumed.task(1):
            again = resumed.save_context("grep", {"pattern": "again"}, "newer", call_id="c4")
        assert resumed.find_call("c4", task_id=1) == again
        assert [p.result for p in resumed.call_parts("c4", task_id=1)] == ["newer", pointers[4].preview]
        assert {p.id for p in resumed.get_pointers_for_task(1)} == {p.id for p in pointers if p.task_id == 1} | {
            again.id
        }


def test_selection_over_a_reopened_conversation_finds_what_it_finds_once_every_call_is_built(
    context_dir: Path,
) -> None:
    session_id, pointers = _kept(context_dir, 200)
    queries = ["needle17", "alpha gamma needle150", "p42 src/m3.py", "grep epsilon", "kappa theta"]
    with ContextSession.resume(session_id, context_dir) as lazy:
        found = [[p.id for p in lazy.select_relevant_contexts(q, k=8)] for q in queries]
        budgeted = [p.id for p in lazy.select_relevant_contexts("alpha beta", budget_tokens=400)]
        recent = [p.id for p in lazy.select_relevant_contexts("needle3", strategy="recency", k=5)]
    with ContextSession.resume(session_id, context_dir) as built:
        every = built.get_all_pointers()  # (each call built before the index is first searched)
        assert [p.id for p in every] == [p.id for p in pointers]
        assert found == [[p.id for p in built.select_relevant_contexts(q, k=8)] for q in queries]
        assert budgeted == [p.id for p in built.select_relevant_contexts("alpha beta", budget_tokens=400)]
        assert recent == [p.id for p in built.select_relevant_contexts("needle3", strategy="recency", k=5)]
    assert found[0][0] == pointers[17].id
    assert found[1][0] == pointers[150].id
    assert recent == [p.id for p in reversed(pointers[-5:])]


def test_a_damaged_line_far_back_does_not_stop_a_turn_and_its_call_is_read_from_its_file(context_dir: Path) -> None:
    session_id, pointers = _kept(context_dir, 300)
    lines = _lines(context_dir, session_id)
    lines[5] = lines[5][:40] + b"\x00garbage\xff" + lines[5][60:]  # (damaged on disk, still a line)
    (context_dir / session_id / MANIFEST_NAME).write_bytes(b"".join(lines))
    with ContextSession.resume(session_id, context_dir) as resumed:
        assert len(resumed) == 300
        [last] = resumed.load_contexts([pointers[-1].handle])
        assert last.result.startswith("needle299 ")
        [damaged] = resumed.load_contexts([pointers[5].handle])
        assert damaged.result.startswith("needle5 ")
        assert damaged.args == pointers[5].args
    relisted = _lines(context_dir, session_id)
    assert len(relisted) == 300
    assert relisted[:5] == lines[:5]
    assert relisted[6:] == lines[6:]
    assert orjson.loads(relisted[5])["id"] == pointers[5].id  # (listed again from its file)


def test_a_damaged_line_whose_file_is_damaged_too_is_reported_and_its_handle_refused(context_dir: Path) -> None:
    session_id, pointers = _kept(context_dir, 300)
    lines = _lines(context_dir, session_id)
    lines[5] = b'{"op": "put", "file": 12}\n'  # (foreign: no call of ours)
    (context_dir / session_id / MANIFEST_NAME).write_bytes(b"".join(lines))
    assert pointers[5].filepath is not None
    Path(pointers[5].filepath).write_bytes(b"not a context document")
    with capture_logs() as logs, ContextSession.resume(session_id, context_dir) as resumed:
        assert len(resumed) == 299
        assert resumed.load_contexts([pointers[5].handle]) == []
        [last] = resumed.load_contexts([pointers[-1].handle])
    assert last.result.startswith("needle299 ")
    reasons = [str(e.get("reason")) for e in logs if e.get("event") == "skipped"]
    assert any(r.startswith("unreadable context file") for r in reasons), reasons
    assert any("not a context of this session" in r for r in reasons), reasons


def test_reading_a_reopened_conversation_does_not_wait_for_the_redactor_and_storing_a_call_still_redacts(
    context_dir: Path,
) -> None:
    session_id, pointers = _kept(context_dir, 20)
    default_redactor.cache_clear()  # (as in a fresh process: compiled once a process, the first time it is used)
    with ContextSession.resume(session_id, context_dir) as resumed:
        [context] = resumed.load_contexts([pointers[3].handle])
        assert context.args == pointers[3].args
        assert default_redactor.cache_info().currsize == 0  # reading needed no redactor: none was compiled
        secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
        stored = resumed.save_context("login", {"api_key": secret}, f"logged in with {secret}")
        [kept] = resumed.load_contexts([stored])
        assert secret not in orjson.dumps([kept.args, kept.result]).decode()
        assert resumed.redactor is default_redactor()

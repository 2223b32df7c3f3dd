"""Uploads off the tool's path: a tool call returns first, a model call waits for them, failures are shown whole."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

import toolctx
import toolctx.testing
from toolctx.compaction import (
    CompactionSettings,
    Compactor,
    ToolTime,
    at_tool_time,
    persist_call,
    read_context,
    shown_output,
)
from toolctx.storage import DictStore

from .conftest import DictAdapter, answer, asks, user

BIG = "".join(f"line {i}: the figures of the quarter\n" for i in range(2000))
CALL: dict[str, str] = {"call_id": "c1", "task_id": "t"}


class GatedStore(DictStore):
    """A shared store whose writes wait for the gate (a slow object store), or fail once it says so."""

    shared = True

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.fail = False

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        self.gate.wait()
        if self.fail:
            raise OSError("the bucket is unreachable")
        super().put(name, chunks)


def test_a_tool_call_returns_before_its_upload_and_a_model_call_waits_for_it(tmp_path: Path) -> None:
    store = GatedStore()
    with toolctx.session(tmp_path, store=store, threshold=0, background_uploads=True) as s:
        saved = persist_call(s, "report", {"q": 1}, BIG, call_id="c1")  # (returns: the gate is still shut)
        assert saved is not None
        assert saved.stored
        assert read_context(s, f"ctx:{saved.id}", 0, 10**6).partition("\n")[2] == BIG  # (from memory)
        assert not [name for name in store.list() if saved.id in name]
        settling = threading.Thread(target=s.save_path.settle)
        settling.start()
        settling.join(0.2)
        assert settling.is_alive()  # a model call would wait here
        store.gate.set()
        settling.join()
        assert [name for name in store.list() if saved.id in name]
        assert s.save_path.failed_writes == 0


def test_without_background_uploads_a_tool_call_returns_once_its_output_is_stored(tmp_path: Path) -> None:
    store = GatedStore()
    with toolctx.session(tmp_path, store=store, threshold=0) as s:
        calling = threading.Thread(target=persist_call, args=(s, "report", {"q": 1}, BIG), kwargs={"call_id": "c1"})
        calling.start()
        calling.join(0.2)
        assert calling.is_alive()  # (held until the store has it)
        store.gate.set()
        calling.join()
        assert len(s.get_all_pointers()) == 1


def test_an_upload_that_fails_is_shown_whole_at_the_next_model_call(tmp_path: Path) -> None:
    store = GatedStore()
    store.fail = True
    settings = CompactionSettings(max_output_tokens=500)
    with toolctx.session(tmp_path, store=store, threshold=0, background_uploads=True) as s:
        saved = persist_call(s, "report", {"q": 1}, BIG, call_id="c1", task_id="t")
        assert saved is not None
        stand_in = shown_output(settings, s, saved, BIG)  # (what the tool hook hands the framework)
        assert stand_in is not None
        assert stand_in.startswith("[toolctx stand-in]")
        store.gate.set()
        messages = [user(0, "go"), asks(1, ("c1", "report", {"q": 1})), answer("c1", stand_in, "report")]
        shown, _ = Compactor(DictAdapter(), settings, s).view(messages, "t", s)
        assert shown[-1]["text"] == BIG  # (the model never sees a handle no worker can read)
        assert s.save_path.failed_writes == 1
        said = toolctx.testing.escalated_warnings()
        assert any("could not store" in str(w) for w in said), said
        # the output stays in this worker's memory: it still loads here, as the model was shown it whole
        [loaded] = s.load_contexts([saved.id])
        assert loaded.result == BIG


class CountingStore(DictStore):
    """A shared store that counts reads and fails the writes of old assistant text when told to."""

    shared = True

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.fail_texts = False

    def get(self, name: str) -> bytes:
        self.reads += name.endswith(".json")  # (a stored output read back; the manifest is read to catch up)
        return super().get(name)

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        if self.fail_texts and name.startswith("assistant_text"):
            raise OSError("the bucket refused it")
        super().put(name, chunks)


SMALL = CompactionSettings(high_water=1500, low_water=200, keep=1, min_gain=0, cached_price=1.0, text_chars=100)


def conversation(s: toolctx.ContextSession, compactor: Compactor[object]) -> list[list[dict[str, object]]]:
    """A loop whose tool hook stores each output, with long assistant text, until a batch is made."""
    messages: list[dict[str, object]] = [user(0, "fix it")]
    views = []
    for n in range(1, 12):
        output = "".join(f"{n}: line {i} of the output\n" for i in range(60))
        persist_call(s, "shell", {"command": f"cat {n}"}, output, call_id=f"c{n}", task_id="t")
        messages += [asks(n, (f"c{n}", "shell", {"command": f"cat {n}"}), text="Thinking it over. " * 12)]
        messages += [answer(f"c{n}", output)]
        views.append(compactor.view(list(messages), "t", s)[0])
    return views


def test_a_batch_reads_nothing_back_from_the_store_that_this_worker_wrote(tmp_path: Path) -> None:
    store = CountingStore()
    with toolctx.session(tmp_path, store=store, threshold=0, keep=True) as s:
        views = conversation(s, Compactor(DictAdapter(), SMALL, s))
        assert any("[toolctx" in str(m.get("text")) for m in views[-1])  # (a batch was made)
        assert store.reads == 0  # (each stored copy came from memory, not a request to the store)


def test_old_text_a_batch_could_not_store_is_shown_whole_never_by_an_unreadable_handle(tmp_path: Path) -> None:
    store = CountingStore()
    store.fail_texts = True
    with toolctx.session(tmp_path, store=store, threshold=0, keep=True) as s:
        views = conversation(s, Compactor(DictAdapter(), SMALL, s))
        assert any("[toolctx" in str(m.get("text")) for m in views[-1])  # (the outputs were compacted)
        for view in views:
            for message in view:
                if message["role"] == "assistant":
                    assert message["text"] == "Thinking it over. " * 12  # (never a marker with a lost handle)
        assert s.save_path.failed_writes > 0
        toolctx.testing.escalated_warnings()


@pytest.mark.parametrize("background", [False, True])
def test_an_output_shown_whole_uploads_after_the_tool_returns_and_no_model_call_waits_for_it(
    tmp_path: Path, background: bool
) -> None:
    store = GatedStore()
    settings = CompactionSettings(max_output_tokens=500)
    with toolctx.session(tmp_path, store=store, threshold=0, background_uploads=background) as s:
        done: list[object] = []
        tool = threading.Thread(
            target=lambda: done.append(at_tool_time(settings, s, "ls", {"d": "."}, "a.py b.py", "a.py b.py", **CALL))
        )
        tool.start()
        tool.join(10)
        assert not tool.is_alive()  # returned with the gate shut: its upload is still under way
        assert done[0] == ToolTime(None, None)  # (shown whole)
        assert len(s.save_path.uploads) == 1
        messages = [user(0, "go"), asks(1, ("c1", "ls", {"d": "."})), answer("c1", "a.py b.py", "ls")]
        model_call = threading.Thread(target=Compactor(DictAdapter(), settings, s).view, args=(messages, "t", s))
        model_call.start()
        model_call.join(10)
        assert not model_call.is_alive()  # it shows no handle of that output: it did not wait for it
        assert len(s.save_path.uploads) == 1
        store.gate.set()
        s.save_path.settle()
        assert [p.tool_name for p in s.get_all_pointers()] == ["ls"]  # landed, listed
        assert s.save_path.failed_writes == 0


def test_an_output_given_a_stand_in_at_tool_time_is_stored_before_the_tool_returns(tmp_path: Path) -> None:
    store = GatedStore()
    settings = CompactionSettings(max_output_tokens=500)
    with toolctx.session(tmp_path, store=store, threshold=0) as s:
        done: list[ToolTime] = []
        tool = threading.Thread(target=lambda: done.append(at_tool_time(settings, s, "report", {}, BIG, BIG, **CALL)))
        tool.start()
        tool.join(0.2)
        assert tool.is_alive()  # (its handle goes out with the result: held until the store has it)
        store.gate.set()
        tool.join()
        assert done[0].shown is not None
        assert done[0].shown.startswith("[toolctx stand-in]")
        assert done[0].saved is not None
        assert [name for name in store.list() if done[0].saved.id in name]


def test_an_output_whose_upload_fails_at_tool_time_is_shown_whole(tmp_path: Path) -> None:
    store = GatedStore()
    store.fail = True
    store.gate.set()
    with toolctx.session(tmp_path, store=store, threshold=0) as s:
        done = at_tool_time(CompactionSettings(max_output_tokens=500), s, "report", {}, BIG, BIG, **CALL)
        assert done.shown is None  # (no handle that no worker could read)
        assert s.save_path.failed_writes == 1
        said = toolctx.testing.escalated_warnings()
        assert any("could not store" in str(w) for w in said), said


class UnlistedStore(GatedStore):
    """A shared store that takes every payload but cannot list any (its manifest, or index, is out of reach)."""

    def append(self, name: str, data: bytes) -> None:
        raise OSError("the index is unreachable")


def test_an_output_stored_but_not_listed_is_shown_whole_even_when_too_big_to_keep_in_memory(tmp_path: Path) -> None:
    store = UnlistedStore()
    store.gate.set()
    with toolctx.session(tmp_path, store=store, threshold=0, keep=True, memory_budget=1000) as s:
        done = at_tool_time(CompactionSettings(max_output_tokens=500), s, "report", {}, BIG, BIG, **CALL)
        assert done.shown is None  # (no other worker could find it: never shown by handle)
        assert s.save_path.failed_writes == 1
        said = toolctx.testing.escalated_warnings()
        assert any("shown whole" in str(w) for w in said), said


def test_a_job_of_the_upload_pool_runs_the_jobs_it_submits_itself() -> None:
    from toolctx.sessions._uploads import MAX_PENDING, Uploads

    uploads, ran = Uploads(), []
    gate = threading.Event()

    def outer() -> None:
        for n in range(MAX_PENDING + 1):  # (more than the pool holds: submitted, they would wait for room)
            uploads.submit(f"inner-{n}", lambda n=n: ran.append((n, threading.current_thread().name)))
        gate.set()

    uploads.submit("outer", outer)
    assert gate.wait(30)
    assert uploads.settle(30)
    assert len(ran) == MAX_PENDING + 1
    assert len({name for _, name in ran}) == 1  # all in the outer job's thread

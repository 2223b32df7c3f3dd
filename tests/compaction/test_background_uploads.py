"""Uploads off the tool's path: a tool call returns first, a model call waits for them, failures are shown whole."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import toolctx
import toolctx.testing
from toolctx.compaction import CompactionSettings, Compactor, persist_call, read_context, shown_output
from toolctx.storage import DictStore

from .conftest import DictAdapter, answer, asks, user

BIG = "".join(f"line {i}: the figures of the quarter\n" for i in range(2000))


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

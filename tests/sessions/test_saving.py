"""The save path: memory or store by size, the memory budget, shared files, tags, bad input."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import files_under
from tests.sessions.helpers import BIG, held_in_memory, save
from toolctx import (
    ConfigError,
    ContextSession,
    StorageKind,
    ToolctxWarning,
    hash_query,
    persist_context,
    session,
)
from toolctx._naming import MANIFEST_NAME
from toolctx.storage import DictStore

# -- saving and pointers ---------------------------------------------------------------


def test_small_results_stay_in_memory_and_touch_no_disk(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = save(s, result={"hits": [1, 2]})
        assert pointer.storage is StorageKind.MEMORY
        assert pointer.filepath is None
        assert pointer.size == len(b'{"hits":[1,2]}')
        assert s.load_contexts([pointer])[0].result == {"hits": [1, 2]}
    assert files_under(context_dir) == []


def test_large_results_go_to_a_file_holding_the_whole_document(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = s.save_context("read_file", {"path": "a.txt"}, BIG, task_id=3, query_id="q1")
        assert pointer.storage is StorageKind.DISK
        assert pointer.filepath is not None
        assert pointer.filename is not None
        path = Path(pointer.filepath)
        assert path.parent == s.session_dir == context_dir / s.session_id
        assert path.name.startswith("read_file_" + pointer.args_hash)
        document = orjson.loads(path.read_bytes())
        assert document["result"] == BIG
        assert document["args"] == {"path": "a.txt"}
        assert document["task_id"] == 3
        assert document["query_id"] == "q1"
        assert document["tool_description"] == "read file a.txt"


def test_threshold_zero_sends_everything_to_disk(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:
        assert save(s, result="tiny").storage is StorageKind.DISK


def test_per_call_threshold_overrides_the_session(context_dir: Path) -> None:
    with session(context_dir) as s:
        assert s.save_context("t", {}, "tiny", threshold=0).storage is StorageKind.DISK


def test_memory_budget_spills_the_oldest_results(context_dir: Path) -> None:
    with session(context_dir, memory_budget=3_000) as s:
        pointers = [save(s, result="y" * 900, n=i) for i in range(6)]
        current = {p.id: p for p in s.get_all_pointers()}
        storages = [current[p.id].storage for p in pointers]
        assert storages[:3] == [StorageKind.DISK] * 3
        assert storages[-2:] == [StorageKind.MEMORY] * 2
        assert held_in_memory(s) == s.memory_bytes <= 3_000
        # A pointer handed out before the spill still loads: lookups go by id.
        assert [c.result for c in s.load_contexts(pointers)] == ["y" * 900] * 6


def test_memory_stays_bounded_in_a_long_session(context_dir: Path) -> None:
    with session(context_dir, memory_budget=64 * 1024) as s:
        for i in range(2_000):
            save(s, result={"i": i, "body": "z" * 1000})
        assert held_in_memory(s) == s.memory_bytes <= 64 * 1024
        assert len(s) == 2_000
        assert len(list(s.session_dir.glob("search_*.json"))) > 1_900


def test_repeated_identical_calls_share_one_file(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        with s.query("first"):
            first = s.save_context("read_file", {"path": "a"}, BIG)
        with s.query("second"):
            again = s.save_context("read_file", {"path": "a"}, BIG)
        other = s.save_context("read_file", {"path": "a"}, BIG + "changed")
        assert first.filename == again.filename != other.filename
        assert len(list(s.session_dir.glob("read_file_*.json"))) == 2
        loaded = s.load_contexts([first, again])
        assert [c.id for c in loaded] == [first.id, again.id]
        assert [c.query_id for c in loaded] == [hash_query("first"), hash_query("second")]
        assert loaded[1].timestamp == again.timestamp
    with ContextSession.resume(s.session_id, context_dir, keep=False) as resumed:
        assert [p.id for p in resumed.get_all_pointers()] == [first.id, again.id, other.id]
        contexts = resumed.load_contexts([again.id, first.id])
        assert [c.id for c in contexts] == [again.id, first.id]
        assert [c.result for c in contexts] == [BIG, BIG]
        resumed.clear()
        newer = resumed.save_context("read_file", {"path": "a"}, BIG)  # the shared file is gone: written anew
        assert newer.filepath is not None
        assert Path(newer.filepath).exists()


def test_errors_are_never_merged(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:
        first = s.save_context("t", {}, None, error=ValueError("x"))
        second = s.save_context("t", {}, None, error=ValueError("x"))
        assert first.filename != second.filename


def test_pointers_are_copies(context_dir: Path) -> None:
    with session(context_dir) as s:
        save(s, q="a")
        first = s.get_all_pointers()
        first.clear()
        pointer = s.get_all_pointers()[0]
        pointer.args["q"] = "mutated"
        assert s.get_all_pointers()[0].args == {"q": "a"}
        with pytest.raises(Exception, match="frozen"):
            pointer.tool_name = "x"  # type: ignore[misc]


def test_an_integer_past_the_digit_limit_is_stored_as_its_exact_decimal_string(context_dir: Path) -> None:
    # 10**5000 + 7: str() of it raises (the interpreter's 4,300-digit limit); the fallback form promises its digits.
    huge, digits = 10**5000 + 7, "1" + "0" * 4999 + "7"

    @persist_context
    def count_everything() -> int:
        return huge

    with session(context_dir, threshold=0) as s:
        with pytest.warns(ToolctxWarning, match="fallback form"):
            pointer = s.save_context("count", {"limit": huge}, huge)
        with pytest.warns(ToolctxWarning, match="fallback form"):
            assert count_everything() == huge
        decorated = s.get_all_pointers()[-1]
        assert decorated.tool_name == "count_everything"
        for stored in s.load_contexts([pointer, decorated]):
            assert stored.result == digits
            assert any("decimal strings" in note for note in stored.notes)
        assert s.load_contexts([pointer])[0].args == {"limit": digits}


def test_query_and_task_tags(context_dir: Path) -> None:
    with session(context_dir) as s:
        with s.query("What was AAPL revenue?") as qid, s.task(7):
            save(s, q="in both")
        with s.task("setup"):
            save(s, q="task only")
        save(s, q="untagged")
        assert qid == hash_query("What was AAPL revenue?") == s.hash_query("What was AAPL revenue?")
        assert [p.args["q"] for p in s.get_pointers_for_query(qid)] == ["in both"]
        assert [p.args["q"] for p in s.get_pointers_for_task(7)] == ["in both"]
        assert [p.args["q"] for p in s.get_pointers_for_task("setup")] == ["task only"]
        assert s.get_pointers_for_query("nope") == []
        assert s.get_pointers_for_task(99) == []
        explicit = s.save_context("t", {}, 1, task_id=1, query_id="given")
        assert (explicit.task_id, explicit.query_id) == (1, "given")


def test_task_rejects_odd_ids(context_dir: Path) -> None:
    s = ContextSession(context_dir)
    with pytest.raises(ConfigError, match="task_id"), s.task(1.5):  # type: ignore[arg-type]
        pass


def test_size_len_and_locations(context_dir: Path) -> None:
    with session(context_dir, session_id="my-session") as s:
        assert s.size == len(s) == 0
        save(s)
        save(s)
        assert s.size == len(s) == 2
        assert s.context_dir == context_dir
        assert s.session_dir == context_dir / "my-session"
        assert "my-session" in repr(s)


def test_context_dir_defaults_to_the_environment_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLCTX_CONTEXT_DIR", str(tmp_path / "env"))
    assert ContextSession().context_dir == tmp_path / "env"
    monkeypatch.delenv("TOOLCTX_CONTEXT_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ContextSession().context_dir == tmp_path / "home" / ".agent" / "context"


def test_error_contexts(context_dir: Path) -> None:
    with session(context_dir) as s:
        try:
            raise ValueError("bad ticker")
        except ValueError as exc:
            pointer = s.save_context("fin", {"ticker": "X"}, None, error=exc)
        assert pointer.is_error
        stored = s.load_contexts([pointer])[0]
        assert stored.error is not None
        assert stored.error.type == "ValueError"
        assert stored.error.message == "bad ticker"
        assert "raise ValueError" in (stored.error.traceback or "")


def test_save_context_rejects_bad_input(context_dir: Path) -> None:
    s = ContextSession(context_dir)
    with pytest.raises(ConfigError, match="tool_name"):
        s.save_context("", {}, 1)
    with pytest.raises(ConfigError, match="args must be a mapping"):
        s.save_context("t", ["a"], 1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="threshold"):
        s.save_context("t", {}, 1, threshold=-1)


@pytest.mark.parametrize(
    ("option", "value"),
    [("threshold", -1), ("threshold", "32k"), ("memory_budget", 1.5), ("memory_budget", True)],
)
def test_bad_session_options_name_the_value(context_dir: Path, option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=option):
        session(context_dir, **{option: value})


def test_bad_context_dir_and_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="context_dir"):
        session(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="NUL"):
        session("a\x00b")
    with pytest.raises(ConfigError, match="BlobStore"):
        session(tmp_path, store=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="on_debug"):
        session(tmp_path, on_debug="print")  # type: ignore[arg-type]


class ClearedWhileWriting(DictStore):
    """A store that runs ``hook`` once, right after writing an output: a clear from another thread."""

    hook: Any = None

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        super().put(name, chunks)
        if self.hook is not None and name != MANIFEST_NAME:
            hook, self.hook = self.hook, None
            hook()


def test_an_output_written_while_the_store_is_cleared_is_written_again_and_stays_loadable() -> None:
    store = ClearedWhileWriting()
    with session(store=store, threshold=0) as s:
        s.save_context("fetch", {"n": 0}, "first")
        store.hook = s.clear_context_dir
        pointer = s.save_context("fetch", {"n": 1}, "written during a clear")
        assert store.hook is None  # the clear ran
        assert pointer.filename in store.list()
        assert [c.result for c in s.load_contexts(s.get_all_pointers())] == ["written during a clear"]
        again = s.save_context("fetch", {"n": 1}, "written during a clear")  # shares a file that exists
        assert s.load_contexts([again])[0].result == "written during a clear"


def test_an_output_spilled_while_the_store_is_cleared_is_spilled_again() -> None:
    store = ClearedWhileWriting()
    with session(store=store, memory_budget=300) as s:
        first = s.save_context("note", {"n": 0}, "a" * 200)
        store.hook = s.clear_context_dir
        s.save_context("note", {"n": 1}, "b" * 200)  # over the budget: the first one is spilled
        assert store.hook is None
        assert s.get_pointer(first.id) is not None
        assert [c.result for c in s.load_contexts([first.id])] == ["a" * 200]

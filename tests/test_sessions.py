from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from tests.conftest import files_under
from toolctx import (
    ConfigError,
    ContextPointer,
    ContextSession,
    SessionBusyError,
    SessionClosedError,
    SessionNotFoundError,
    StorageKind,
    ToolctxWarning,
    current_session,
    hash_query,
    session,
)
from toolctx.naming import MANIFEST_NAME
from toolctx.storage import MemoryStore

BIG = "x" * 40_000  # over the 32 KiB default threshold


def held_in_memory(s: ContextSession) -> int:
    """Bytes of argument and result JSON the session's records hold right now."""
    return sum(len(r.call.args_json) + len(r.payload[0]) for r in s._saver.records.values() if r.payload)


def save(s: ContextSession, tool: str = "search", result: Any = "r", **args: Any) -> ContextPointer:
    return s.save_context(tool, args or {"q": tool}, result)


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


# -- loading ---------------------------------------------------------------------------


def test_load_accepts_pointers_ids_handles_and_paths(context_dir: Path) -> None:
    with session(context_dir) as s:
        small = save(s, result="small")
        big = save(s, tool="big", result=BIG)
        assert big.filepath is not None
        refs: list[Any] = [small, big.id, f"ctx:{small.id}", big.filepath, Path(big.filepath), big.filename]
        assert [c.result for c in s.load_contexts(refs)] == ["small", BIG, "small", BIG, BIG, BIG]
        loaded = s.load_contexts([big])[0]
        assert (loaded.id, loaded.tool_name, loaded.session_id) == (big.id, "big", s.session_id)


def test_load_skips_missing_malformed_and_foreign_with_a_logged_warning(context_dir: Path, tmp_path: Path) -> None:
    with session(context_dir) as s, session(tmp_path / "other") as other:
        good = save(s, result=BIG)
        broken = save(s, tool="broken", result=BIG)
        gone = save(s, tool="gone", result=BIG)
        foreign = save(other, result="theirs")
        assert broken.filepath is not None
        assert gone.filepath is not None
        assert good.filepath is not None
        Path(broken.filepath).write_bytes(b'{"format": "toolctx/1", "id": ')
        Path(gone.filepath).unlink()
        outside = tmp_path / "x_0123456789abcdef_1735012345678_1_9f3a1c.json"
        outside.write_bytes(Path(good.filepath).read_bytes())  # a valid document, but not in this session
        with capture_logs() as logs:
            loaded = s.load_contexts([broken, good, "nope", gone, foreign, str(outside), "../../etc/passwd"])
        assert [c.id for c in loaded] == [good.id]
        skipped = [e for e in logs if e["event"] == "skipped"]
        assert len(skipped) == 6
        assert all(e["log_level"] == "warning" for e in skipped)
        assert sum("belongs to session" in e["reason"] for e in skipped) == 1


def test_load_contexts_wants_a_list(context_dir: Path) -> None:
    s = ContextSession(context_dir)
    with pytest.raises(ConfigError, match="list"):
        s.load_contexts("abc")


def test_get_pointer(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = save(s)
        assert s.get_pointer(pointer.handle) == pointer
        assert s.get_pointer("missing") is None


# -- selection -------------------------------------------------------------------------


def test_keyword_strategy_keeps_the_seed_behaviour(context_dir: Path) -> None:
    with session(context_dir) as s:
        s.save_context("get_weather", {"city": "Paris"}, 1)
        apple = s.save_context("get_income_statements", {"ticker": "AAPL", "period": "annual"}, 2)
        both = s.save_context("get_revenue", {"ticker": "AAPL", "period": "annual"}, 3)
        ranked = s.select_relevant_contexts("AAPL annual revenue", strategy="keyword")
        assert [p.id for p in ranked] == [both.id, apple.id]
        assert [p.id for p in s.select_relevant_contexts("AAPL annual revenue", k=1, strategy="keyword")] == [both.id]
        assert len(s.select_relevant_contexts("no overlap at all", strategy="keyword")) == 3
        assert s.select_relevant_contexts("AAPL", pointers=[apple], strategy="keyword") == [apple]


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_select_rejects_bad_k(context_dir: Path, k: object) -> None:
    with pytest.raises(ConfigError, match="k must be"):
        ContextSession(context_dir).select_relevant_contexts("q", k=k)  # type: ignore[arg-type]


def test_select_rejects_a_non_text_query(context_dir: Path) -> None:
    with pytest.raises(ConfigError, match="query must be a str"):
        ContextSession(context_dir).select_relevant_contexts(None)  # type: ignore[arg-type]


# -- cleanup ---------------------------------------------------------------------------


def test_clear_pointers_keeps_files(context_dir: Path) -> None:
    with session(context_dir) as s:
        big = save(s, result=BIG)
        s.clear_pointers()
        assert len(s) == 0
        assert big.filepath is not None
        assert Path(big.filepath).exists()
        assert [c.result for c in s.load_contexts([big])] == [BIG]


def test_clear_context_dir_removes_files_and_their_pointers_only(context_dir: Path) -> None:
    with session(context_dir) as s:
        small = save(s, result="small")
        big = save(s, result=BIG)
        (s.session_dir / "user-notes.txt").write_text("mine")
        s.clear_context_dir()
        assert [p.id for p in s.get_all_pointers()] == [small.id]
        assert sorted(p.name for p in s.session_dir.iterdir()) == ["session.lock", "user-notes.txt"]
        assert big.filepath is not None
        assert not Path(big.filepath).exists()
    assert sorted(p.name for p in context_dir.rglob("*")) == [s.session_id, "user-notes.txt"]


def test_clear_removes_everything_and_the_session_stays_usable(context_dir: Path) -> None:
    with session(context_dir) as s:
        save(s, result=BIG)
        save(s)
        s.clear()
        assert len(s) == 0
        assert save(s, result=BIG).storage is StorageKind.DISK
    assert files_under(context_dir) == []


def test_leaving_the_block_deletes_what_was_stored_even_on_error(context_dir: Path) -> None:
    def agent(s: ContextSession) -> None:
        save(s, result=BIG)
        raise RuntimeError("agent failed")

    s = session(context_dir)
    with pytest.raises(RuntimeError, match="agent failed"), s:
        agent(s)
    assert files_under(context_dir) == []
    assert s.closed
    with pytest.raises(SessionClosedError, match=r"toolctx\.session\(\)"):
        save(s)
    with pytest.raises(SessionClosedError), s:
        pass


def test_a_context_dir_full_of_user_files_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    (home / "docs" / "thesis.txt").write_text("years of work")
    (home / "search_0123456789abcdef_1735012345678_1_9f3a1c.json").write_text("looks like ours, is not")
    (home / MANIFEST_NAME).write_text("not ours either")
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    with session(home) as s:
        save(s, result=BIG)
        save(s, result="small")
        s.clear()
        save(s, result=BIG)
    after = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert after == before


# -- activation, nesting, async and threads ----------------------------------------------


def test_sessions_nest_and_restore(context_dir: Path) -> None:
    default = current_session()
    with session(context_dir) as outer:
        assert current_session() is outer
        with session(context_dir) as inner:
            assert current_session() is inner
        assert current_session() is outer
    assert current_session() is default


def test_reentering_the_same_session_closes_it_only_at_the_outermost_exit(context_dir: Path) -> None:
    s = session(context_dir)
    with s:
        with s:
            save(s, result=BIG)
        assert not s.closed
        assert len(s) == 1
    assert s.closed


def test_async_with_and_tasks_follow_the_session(context_dir: Path) -> None:
    async def tool_call(n: int) -> ContextSession:
        await asyncio.sleep(0)
        return current_session()

    async def main() -> None:
        async with session(context_dir) as s:
            seen = await asyncio.gather(*(asyncio.create_task(tool_call(i)) for i in range(5)))
            assert all(x is s for x in seen)
            assert await asyncio.to_thread(current_session) is s
            loop = asyncio.get_running_loop()
            ctx = contextvars.copy_context()
            assert await loop.run_in_executor(None, ctx.run, current_session) is s
        assert s.closed

    asyncio.run(main())


def test_concurrent_sessions_in_tasks_do_not_mix(context_dir: Path) -> None:
    async def agent(name: str) -> list[str]:
        async with session(context_dir) as s:
            for i in range(20):
                current_session().save_context(name, {"i": i}, i)
                await asyncio.sleep(0)
            return sorted({p.tool_name for p in s.get_all_pointers()})

    async def main() -> list[list[str]]:
        return await asyncio.gather(agent("a"), agent("b"), agent("c"))

    assert asyncio.run(main()) == [["a"], ["b"], ["c"]]


def test_context_copying_thread_pools_land_in_the_session(context_dir: Path) -> None:
    with session(context_dir) as s, ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(contextvars.copy_context().run, current_session) for _ in range(8)]
        assert all(f.result() is s for f in futures)


def test_plain_threads_use_the_only_open_session(context_dir: Path) -> None:
    def in_plain_thread() -> ContextSession:
        seen: list[ContextSession] = []
        thread = threading.Thread(target=lambda: seen.append(current_session()))
        thread.start()
        thread.join()
        return seen[0]

    with session(context_dir) as outer:
        assert in_plain_thread() is outer
        with session(context_dir) as inner:
            assert in_plain_thread() is inner
    assert in_plain_thread() is current_session()  # the default again


def test_plain_threads_fall_back_to_the_default_when_sessions_are_open_in_several_threads(context_dir: Path) -> None:
    ready, done = threading.Barrier(2), threading.Event()

    def other_agent() -> None:
        with session(context_dir):
            ready.wait()
            done.wait()

    agent = threading.Thread(target=other_agent)
    agent.start()
    with session(context_dir) as mine:
        ready.wait()
        seen: list[ContextSession] = []
        worker = threading.Thread(target=lambda: seen.append(current_session()))
        worker.start()
        worker.join()
        done.set()
        assert seen[0] is not mine
        assert seen[0].context_dir != context_dir  # the default session: ambiguity is never guessed
    agent.join()


def test_saving_from_many_threads(context_dir: Path) -> None:
    with session(context_dir, memory_budget=50_000) as s:

        def work(t: int) -> None:
            for i in range(200):
                s.save_context(f"tool{t}", {"i": i}, "v" * (i * 50))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        pointers = s.get_all_pointers()
        assert len({p.id for p in pointers}) == 1600
        assert len({p.filename for p in pointers if p.filename}) == sum(1 for p in pointers if p.filename)
        loaded = s.load_contexts(pointers)
        assert len(loaded) == 1600
        assert all(c.result == "v" * (c.args["i"] * 50) for c in loaded)


def test_the_default_session_is_lazy_and_reused(tmp_path: Path) -> None:
    first = current_session()
    assert current_session() is first
    assert first.context_dir == tmp_path / "default-context"
    assert not (tmp_path / "default-context").exists()


def test_the_default_session_is_cleaned_at_interpreter_exit(tmp_path: Path) -> None:
    code = (
        "import toolctx\n"
        "s = toolctx.current_session()\n"
        "p = s.save_context('t', {}, 'x' * 100_000)\n"
        "import os; assert os.path.exists(p.filepath); print(p.filepath)\n"
    )
    env = {**os.environ, "TOOLCTX_CONTEXT_DIR": str(tmp_path / "ctx")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(str(tmp_path / "ctx"))
    assert files_under(tmp_path / "ctx") == []


# -- keep and resume ------------------------------------------------------------------------


def test_keep_flushes_memory_and_resume_rebuilds_every_pointer(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        with s.query("q"), s.task(2):
            small = save(s, result={"a": 1})
            big = save(s, tool="big", result=BIG)
        original = s.get_all_pointers()
    assert (s.session_dir / MANIFEST_NAME).exists()
    with ContextSession.resume(s.session_id, context_dir) as resumed:
        pointers = resumed.get_all_pointers()
        assert [p.id for p in pointers] == [p.id for p in original]
        assert [p.query_id for p in pointers] == [hash_query("q")] * 2
        assert [p.task_id for p in pointers] == [2, 2]
        assert all(p.storage is StorageKind.DISK for p in pointers)
        assert [c.result for c in resumed.load_contexts([small.id, big.id])] == [{"a": 1}, BIG]
        newer = save(resumed, result=BIG)
        assert newer.id not in {p.id for p in original}
    assert resumed.session_dir.exists()  # resume keeps by default
    with ContextSession.resume(s.session_id, context_dir, keep=False) as last:
        assert len(last) == 3
    assert files_under(context_dir) == []


def test_resume_in_another_process(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s:
        save(s, result=BIG)
        save(s, result="small")
    code = (
        "import sys, toolctx\n"
        "s = toolctx.ContextSession.resume(sys.argv[1], sys.argv[2])\n"
        "print(sorted(len(str(c.result)) for c in s.load_contexts(s.get_all_pointers())))\n"
        "s.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, s.session_id, str(context_dir)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[5, 40000]"


def test_resume_recovers_files_the_manifest_missed_and_drops_missing_ones(context_dir: Path) -> None:
    with session(context_dir, keep=True, threshold=0) as s:
        pointers = [save(s, n=i) for i in range(4)]
    manifest = s.session_dir / MANIFEST_NAME
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(lines[0] + lines[1] + lines[2][:20])  # a crash cut the manifest short
    assert pointers[0].filepath is not None
    Path(pointers[0].filepath).unlink()
    (s.session_dir / ".x_0123456789abcdef_1735012345678_9_9f3a1c.json.0123abcd.tmp").write_bytes(b"{partial")
    resumed = ContextSession.resume(s.session_id, context_dir, keep=False)
    assert sorted(p.id for p in resumed.get_all_pointers()) == sorted(p.id for p in pointers[1:])
    assert [c.args["n"] for c in resumed.load_contexts(resumed.get_all_pointers())] == [1, 2, 3]
    assert len(manifest.read_bytes().splitlines()) == 3  # rewritten whole
    resumed.close()
    assert files_under(context_dir) == []


def test_resume_errors(context_dir: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        ContextSession.resume("no-such-session", context_dir)
    with pytest.raises(ConfigError, match="session_id"):
        ContextSession.resume("../etc", context_dir)
    with session(context_dir, keep=True) as s:
        save(s, result=BIG)
        with pytest.raises(SessionBusyError):
            ContextSession.resume(s.session_id, context_dir)
    ContextSession.resume(s.session_id, context_dir, keep=False).close()


def test_a_fresh_session_never_takes_over_an_existing_directory(context_dir: Path) -> None:
    (context_dir / "taken").mkdir()
    (context_dir / "taken" / "user.txt").write_text("mine")
    with pytest.warns(ToolctxWarning, match="could not store"), session(context_dir, session_id="taken") as s:
        pointer = save(s, result=BIG)
    assert pointer.storage is StorageKind.NONE
    assert (context_dir / "taken" / "user.txt").read_text() == "mine"


# -- stores, events and logs -----------------------------------------------------------------


def test_a_memory_store_keeps_everything_off_disk(context_dir: Path) -> None:
    store = MemoryStore()
    with session(context_dir, store=store, threshold=0) as s:
        pointer = save(s, result=BIG)
        assert pointer.storage is StorageKind.DISK
        assert pointer.filepath is None
        assert pointer.filename in store.list()
        assert s.load_contexts([pointer])[0].result == BIG
    assert store.list() == []
    assert files_under(context_dir) == []


def test_on_debug_and_structlog_receive_events(context_dir: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    with capture_logs() as logs:
        with session(context_dir, on_debug=lambda e, d: events.append((e, d)), memory_budget=100) as s:
            pointer = save(s, result="y" * 80)
            save(s, result="y" * 80)
            s.load_contexts([pointer, "missing"])
        names = [e for e, _ in events]
    for expected in ("saved", "spilled", "loaded", "skipped", "cleared", "closed"):
        assert expected in names
        assert any(e["event"] == expected and e["session"] == s.session_id for e in logs)
    saved = dict(events)["saved"]
    assert saved["tool"] == "search"


def test_a_failing_on_debug_callback_is_reported_not_raised(context_dir: Path) -> None:
    def boom(event: str, data: dict[str, Any]) -> None:
        raise RuntimeError("callback bug")

    def use(s: ContextSession) -> None:
        s.save_context("t", {}, 1)
        s.close()

    s = session(context_dir, on_debug=boom)
    with pytest.warns(ToolctxWarning, match="on_debug"):
        use(s)
    assert s.closed


def test_unconfigured_structlog_goes_to_stdlib_logging(context_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="toolctx")
    with session(context_dir) as s:
        save(s)
    assert any("event='saved'" in r.getMessage() for r in caplog.records if r.name == "toolctx")

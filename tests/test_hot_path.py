"""The per-call path of ``@persist_context``: what it must keep doing while it is made cheaper.

No timings here (the machine is shared): what a user would notice if a shortcut broke,
secrets kept, a large string persisted without holding copies of it, an async tool's
large output written off the event loop yet readable as soon as the tool returns.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from toolctx import StorageKind, ToolctxWarning, current_session, persist_context, session
from toolctx.redaction import REDACTED
from toolctx.storage import LocalStore


def _only_context() -> Any:
    pointers = current_session().get_all_pointers()
    assert len(pointers) == 1
    return current_session().load_contexts(pointers)[0]


@pytest.mark.parametrize(
    ("result", "secret"),
    [
        ({"dsn": "postgres://app:hunter2-Xq9@db.internal:5432/sales", "rows": 3}, "hunter2-Xq9"),
        ({"title": "Quarterly report", "api_key": "k-7f3a9c1e5b2d4f60"}, "k-7f3a9c1e5b2d4f60"),
        ({"note": "token ghp_16C7e42F292c6912E7710c838347Ae178B4a here"}, "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ],
)
def test_a_secret_in_a_small_result_is_redacted(context_dir: Path, result: dict[str, Any], secret: str) -> None:
    @persist_context
    def lookup(query: str) -> dict[str, Any]:
        return result

    with session(context_dir):
        assert lookup("q") is result  # the caller still gets the real value
        stored = json.dumps(_only_context().result)
        assert secret not in stored
        assert REDACTED in stored


def test_a_plain_link_in_a_small_result_is_kept_as_it_is(context_dir: Path) -> None:
    # ``://`` is what a credentials URL starts with: seen alone, it must not change the stored result.
    result = {"url": "https://example.org/60816/pointer", "title": "Déjà Analyse", "score": 0.0974}

    @persist_context
    def search(query: str) -> dict[str, Any]:
        return result

    with session(context_dir):
        search("quarterly revenue")
        assert _only_context().result == result


def test_a_secret_argument_and_its_echo_in_a_small_result_are_redacted(context_dir: Path) -> None:
    @persist_context
    def connect(host: str, password: str) -> str:
        return f"connected to {host} with {password}"

    with session(context_dir):
        connect("db.internal", password="Zq8-unlikely-pw")
        stored = _only_context()
        assert stored.args["password"] == REDACTED
        assert "Zq8-unlikely-pw" not in json.dumps(stored.result)


def test_a_long_string_is_stored_exactly(context_dir: Path) -> None:
    # Quotes, backslashes, control characters and non-ASCII, across the slices a long string is encoded in.
    text = ('say "hi"\\ \x01\x1f tab\t é 😀 ' * 120_000)[: 3 * (1 << 20) + 5]

    @persist_context
    def read_log(name: str) -> str:
        return text

    with session(context_dir):
        read_log("app")
        stored = _only_context()
        assert stored.result == text
        assert stored.notes == []


def test_a_long_string_with_a_lone_surrogate_is_still_stored(context_dir: Path) -> None:
    text = "x" * (1 << 21) + "\udc80" + "y" * 10

    @persist_context
    def read_blob(name: str) -> str:
        return text

    with session(context_dir):
        with pytest.warns(ToolctxWarning, match="lone surrogates"):
            assert read_blob("b") is text
        stored = _only_context()
        assert stored.result == "x" * (1 << 21) + "\\udc80" + "y" * 10
        assert any("surrogate" in note for note in stored.notes)


_PEAK = """
import gc, sys, tempfile, tracemalloc
import toolctx

SIZE = {size}
text = ("quarterly revenue grew by 4% in the north region; " * (SIZE // 50 + 1))[:SIZE]

@toolctx.persist_context
def fetch(n: int) -> str:
    return text

with tempfile.TemporaryDirectory() as directory, toolctx.session(directory) as s:
    fetch(0)  # (first-call costs are not what is measured)
    gc.collect()
    tracemalloc.start()
    fetch(1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    pointers = s.get_all_pointers()
    assert pointers[-1].storage == "disk", pointers[-1].storage
    assert s.load_contexts(pointers[-1:])[0].result == text
print(peak / SIZE)
"""


def test_persisting_a_large_string_holds_about_one_copy_of_it() -> None:
    size = 64 << 20
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = textwrap.dedent(_PEAK.format(size=size))
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    ratio = float(done.stdout.strip().splitlines()[-1])
    # Its JSON once (the string is the caller's): no buffer reserved for the worst case, no whole copies.
    assert ratio < 1.5, f"persisting a {size >> 20} MiB string peaked at {ratio:.2f}x its size"


def test_an_async_tool_writes_its_large_output_off_the_event_loop(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[threading.Thread] = []
    put = LocalStore.put

    def recording_put(store: LocalStore, name: str, chunks: Any) -> None:
        writers.append(threading.current_thread())
        put(store, name, chunks)

    monkeypatch.setattr(LocalStore, "put", recording_put)
    output = "row;" * 50_000  # over the threshold: it goes to a file

    @persist_context
    async def export(table: str) -> str:
        await asyncio.sleep(0)
        return output

    async def main() -> threading.Thread:
        assert await export("sales") is output
        # Available as soon as the tool returns, whether or not the file has landed yet.
        assert _only_context().result == output
        return threading.current_thread()

    with session(context_dir) as current:
        loop_thread = asyncio.run(main())
        assert current.save_path.settle(timeout=60)
        pointer = current.get_all_pointers()[0]
        assert pointer.storage is StorageKind.DISK
        assert pointer.filepath is not None
        assert Path(pointer.filepath).read_bytes().count(b"row;") == 50_000
    assert writers, "the output was never written"
    assert loop_thread not in writers


def test_a_clear_while_an_async_output_is_written_loses_nothing_kept(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landed, resume = threading.Event(), threading.Event()
    put = LocalStore.put

    def put_then_pause(store: LocalStore, name: str, chunks: Any) -> None:
        put(store, name, chunks)
        if threading.current_thread().name.startswith("toolctx-upload") and not landed.is_set():
            landed.set()  # the file is there: the clear runs now, before the write marks the record
            resume.wait(30)

    monkeypatch.setattr(LocalStore, "put", put_then_pause)
    output = "row;" * 50_000

    @persist_context
    async def export(table: str) -> str:
        return output

    with session(context_dir) as current:
        uploads = current.save_path.uploads
        settle = uploads.settle

        def settle_then_call(*args: Any, **kwargs: Any) -> Any:  # a tool of another thread's loop returns
            settled = settle(*args, **kwargs)  # just after the clear waited for the writes under way
            tool = threading.Thread(target=lambda: asyncio.run(export("sales")))
            tool.start()
            landed.wait(30)
            tool.join()
            return settled

        monkeypatch.setattr(uploads, "settle", settle_then_call)
        current.save_path.clear_store()
        monkeypatch.setattr(uploads, "settle", settle)
        resume.set()
        assert current.save_path.settle(timeout=60)
        [pointer] = current.get_all_pointers()  # kept by the clear (it was still in memory)
        [stored] = current.load_contexts([pointer])
        assert stored.result == output  # and written again: its first file went with the clear
        assert pointer.storage is StorageKind.DISK


def test_a_sync_tool_still_writes_its_large_output_before_returning(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[threading.Thread] = []
    put = LocalStore.put

    def recording_put(store: LocalStore, name: str, chunks: Any) -> None:
        writers.append(threading.current_thread())
        put(store, name, chunks)

    monkeypatch.setattr(LocalStore, "put", recording_put)

    @persist_context
    def export(table: str) -> str:
        return "row;" * 50_000

    with session(context_dir) as current:
        export("sales")
        assert writers == [threading.current_thread()]
        assert current.get_all_pointers()[0].storage is StorageKind.DISK


def test_the_agents_sdk_hooks_write_a_large_output_off_the_event_loop(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = pytest.importorskip("agents")
    testing = pytest.importorskip("agents.testing")
    from toolctx_openai_agents import ToolContextHooks

    writers: list[threading.Thread] = []
    put = LocalStore.put

    def recording_put(store: LocalStore, name: str, chunks: Any) -> None:
        writers.append(threading.current_thread())
        put(store, name, chunks)

    monkeypatch.setattr(LocalStore, "put", recording_put)
    report = "".join(f"line {i}: quarterly revenue figures for region {i % 7}\n" for i in range(2000))

    @agents.function_tool
    def fetch_report(region: str) -> str:
        """Fetch the revenue report of a region."""
        return report

    model = testing.ScriptedModel(
        [
            [testing.function_call("fetch_report", {"region": "emea"}, call_id="h1")],
            [testing.assistant_message("ok")],
        ]
    )
    agent = agents.Agent(name="a", model=model, tools=[fetch_report])
    config = agents.RunConfig(tracing_disabled=True)
    with session(context_dir) as current:
        asyncio.run(agents.Runner.run(agent, "go", hooks=ToolContextHooks(), run_config=config))
        [pointer] = current.get_all_pointers()
        assert current.load_contexts([pointer])[0].result == report
        assert current.save_path.settle(timeout=60)
    assert writers, "the output was never written"
    assert threading.main_thread() not in writers  # (asyncio.run ran the loop on this thread)

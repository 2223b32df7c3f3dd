"""Which session a call lands in: nesting, asyncio tasks, threads and the process default."""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import files_under
from tests.sessions.helpers import BIG, save
from toolctx import (
    ContextSession,
    current_session,
    session,
)

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


def run_python(code: str, context_dir: Path) -> str:
    """Run ``code`` in a new interpreter whose default session lives in ``context_dir``; its output."""
    env = {**os.environ, "TOOLCTX_CONTEXT_DIR": str(context_dir)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_default_session_is_cleaned_at_interpreter_exit(tmp_path: Path) -> None:
    code = (
        "import toolctx\n"
        "s = toolctx.current_session()\n"
        "p = s.save_context('t', {}, 'x' * 100_000)\n"
        "import os; assert os.path.exists(p.filepath); print(p.filepath)\n"
    )
    assert run_python(code, tmp_path / "ctx").strip().startswith(str(tmp_path / "ctx"))
    assert files_under(tmp_path / "ctx") == []


def test_a_forked_child_leaves_its_parents_default_session_alone(tmp_path: Path) -> None:
    """A child that exits normally runs the exit handlers it inherited; it must not end the parent's session."""
    code = (
        "import os, sys, toolctx\n"
        "parent = toolctx.current_session()\n"
        "p = parent.save_context('t', {}, 'x' * 100_000)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    child = toolctx.current_session()\n"
        "    assert child is not parent and child.session_id != parent.session_id\n"
        "    c = child.save_context('t', {}, 'y' * 100_000)\n"
        "    print(c.filepath, flush=True)\n"
        "    sys.exit(0)\n"  # runs the exit handlers: the child's default session ends, the parent's stays
        "os.waitpid(pid, 0)\n"
        "assert os.path.exists(p.filepath), 'the parent lost its output'\n"
        "assert [c.result for c in parent.load_contexts([p.id])] == ['x' * 100_000]\n"
        "assert toolctx.current_session() is parent\n"
        "print(p.filepath)\n"
    )
    child_file, parent_file = run_python(code, tmp_path / "ctx").split()
    assert Path(child_file).parent != Path(parent_file).parent
    assert files_under(tmp_path / "ctx") == []  # each process cleaned its own at exit


def test_reset_default_session_ends_it_and_the_next_call_starts_a_new_one(tmp_path: Path) -> None:
    from toolctx.sessions import reset_default_session

    first = current_session()
    pointer = first.save_context("fetch", {}, BIG)
    assert Path(pointer.filepath or "").exists()
    reset_default_session()
    assert first.closed
    assert not Path(pointer.filepath or "").exists()
    second = current_session()
    assert second is not first
    assert not second.closed
    reset_default_session()
    reset_default_session()  # nothing open: nothing to do

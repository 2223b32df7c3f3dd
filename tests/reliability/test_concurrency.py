"""Threads and processes saving into one context directory lose, duplicate and damage nothing."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import orjson

from toolctx import ContextSession, persist_context, session
from toolctx._naming import MANIFEST_NAME, parse_context_filename
from toolctx.sessions._records import parse_document

PROCESS_SCRIPT = """
import sys, toolctx
context_dir, session_id, worker = sys.argv[1], sys.argv[2], int(sys.argv[3])
with toolctx.session(context_dir, session_id=session_id, keep=True, threshold=2048, memory_budget=16384) as s:
    for i in range(500):
        s.save_context(f"worker{worker}", {"worker": worker, "i": i}, "r" * (i % 5 * 1000))
"""


def check_session_dir(session_dir: Path, expected: set[tuple[int, int]]) -> set[str]:
    """Every file valid, the manifest listing exactly the files, the calls exactly ``expected``."""
    files = [p for p in session_dir.iterdir() if parse_context_filename(p.name)]
    contexts = [parse_document(p.read_bytes()) for p in files]
    seen = [(c.args["worker"], c.args["i"]) for c in contexts]
    assert len(seen) == len(set(seen)), "a call was stored twice"
    assert set(seen) == expected, "a call was lost"
    for context in contexts:
        assert context.result == "r" * (context.args["i"] % 5 * 1000)
    manifest = [orjson.loads(line) for line in (session_dir / MANIFEST_NAME).read_bytes().splitlines()]
    assert sorted(entry["file"] for entry in manifest) == sorted(p.name for p in files)
    assert len({entry["id"] for entry in manifest}) == len(manifest)
    return {p.name for p in files}


def test_eight_threads_a_thousand_calls_each(context_dir: Path) -> None:
    @persist_context
    def work(worker: int, i: int) -> str:
        return "r" * (i % 5 * 1000)

    with session(context_dir, keep=True, threshold=2048, memory_budget=16384) as s:
        barrier = threading.Barrier(8)

        def run(worker: int) -> None:
            barrier.wait()
            for i in range(1000):
                work(worker, i)

        threads = [threading.Thread(target=run, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        pointers = s.get_all_pointers()
        assert len(pointers) == 8000
        assert len({p.id for p in pointers}) == 8000
        assert len(s.load_contexts(pointers)) == 8000
    # the session was kept: everything is now on disk and listed
    check_session_dir(s.session_dir, {(w, i) for w in range(8) for i in range(1000)})
    ContextSession.resume(s.session_id, context_dir, keep=False).close()
    assert list(context_dir.iterdir()) == []


def test_four_processes_five_hundred_calls_each(context_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    children = [
        subprocess.Popen([sys.executable, "-c", PROCESS_SCRIPT, str(context_dir), f"proc-{w}", str(w)], env=env)
        for w in range(4)
    ]
    assert [child.wait() for child in children] == [0, 0, 0, 0]
    names: set[str] = set()
    for w in range(4):
        found = check_session_dir(context_dir / f"proc-{w}", {(w, i) for i in range(500)})
        assert not names & found, "two processes wrote the same file name"
        names |= found
        with ContextSession.resume(f"proc-{w}", context_dir, keep=False) as resumed:
            assert len(resumed) == 500
    assert list(context_dir.iterdir()) == []


def _forked_worker(s: ContextSession, worker: int) -> None:
    for i in range(500):
        s.save_context(f"worker{worker}", {"worker": worker, "i": i}, "r" * (i % 5 * 1000), threshold=0)


def test_forked_processes_sharing_one_session(context_dir: Path) -> None:
    """Children forked from a process with an open session write into it without collisions."""
    fork = multiprocessing.get_context("fork")
    with session(context_dir, keep=True) as s:
        s.save_context("parent", {"worker": -1, "i": 0}, "", threshold=0)
        workers = [fork.Process(target=_forked_worker, args=(s, w)) for w in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    expected = {(w, i) for w in range(4) for i in range(500)} | {(-1, 0)}
    check_session_dir(s.session_dir, expected)
    with ContextSession.resume(s.session_id, context_dir, keep=False) as resumed:
        assert len({p.id for p in resumed.get_all_pointers()}) == 2001
    assert list(context_dir.iterdir()) == []

"""A process that forks while other threads save has children that never hang on a lock toolctx holds.

A child has only the thread that forked it: any lock another thread held at that
moment would stay held in the child forever. Threads here keep every lock toolctx
has busy (the save path's, the store's while it appends to the manifest, the
search index's, the module's lists of sessions) while the main thread forks;
each child saves (to disk) and calls a decorated tool, then exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from toolctx import ContextSession, StorageKind, current_session, persist_context, session
from toolctx.storage import DictStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

FORKS = 200
HUNG_AFTER = 120.0  # seconds after the last fork: a healthy child exits in milliseconds, even on a loaded
# machine well within this (30 s was once too short while another job filled memory); one running by then is stuck


def fork(child: Callable[[], int]) -> int:
    """Fork; the child runs ``child`` and exits with its code, running no exit handlers of the parent's."""
    with warnings.catch_warnings():  # Python 3.12+ warns about forking a process that has threads: that is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = child()
        finally:
            os._exit(code)
    return pid


def wait_for(pid: int, deadline: float) -> int | None:
    """The child's exit code, or None if it was still running at ``deadline`` (then it is killed).

    A child that has exited counts as exited whenever it is looked at, even after the deadline.
    """
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None  # exited just in time
        time.sleep(0.005)


def test_children_forked_while_threads_save_never_hang(tmp_path: Path) -> None:
    """The scenario below, in a fresh interpreter that no tracer (coverage) runs in.

    A tracer has locks of its own that another thread may hold at the fork; under
    ``make test``'s coverage, children then hang in the tracer, not in toolctx.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}  # pytest-cov's subprocess hook
    code = "import sys; from tests.reliability.test_fork import fork_while_saving; fork_while_saving(sys.argv[1])"
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ctx")],
        cwd=Path(__file__).parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip() == f"{FORKS} children exited", result.stdout[-2000:]


def fork_while_saving(directory: str) -> None:
    """Fork FORKS times while threads save, search and open sessions; fail if a child hangs."""
    context_dir = Path(directory)
    sys.setswitchinterval(0.0002)  # five busy threads would otherwise hold the GIL 5 ms each
    warnings.simplefilter("error")

    @persist_context(threshold=0)
    def lookup(n: int) -> str:
        return f"lookup {n} " * 50

    stop = threading.Event()
    # Searching while another thread clears is not what this test is about: the two take turns.
    turns = threading.Lock()
    # Kept: every call written to disk is also appended to the manifest under the store's lock.
    with session(context_dir, keep=True, threshold=0) as s:
        # The first search imports numpy, lazily: a child forked while another thread imports a module
        # hangs on the interpreter's import lock, which is not toolctx's to reset.
        s.save_context("writer", {"k": -1, "i": -1}, "warm up")
        s.select_relevant_contexts("warm up", k=1)

        def writer(k: int) -> None:
            i = 0
            while not stop.is_set():
                s.save_context("writer", {"k": k, "i": i}, "w" * (i % 3 * 3000))
                i += 1
                if i % 50 == 0:  # keeps the session small (so the test stays fast) and takes the locks too
                    with turns:
                        s.clear()

        def searcher() -> None:
            while not stop.is_set():
                with turns:
                    s.select_relevant_contexts("writer lookup", k=3)

        def opener() -> None:  # the module's lists of entered sessions and the default session
            while not stop.is_set():
                with session(context_dir):
                    pass
                current_session()

        def child(n: int) -> int:
            pointer = s.save_context("child", {"n": n}, f"child {n} " * 300)
            lookup(n)
            return 0 if pointer.storage is StorageKind.DISK else 1

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
        threads += [threading.Thread(target=searcher), threading.Thread(target=opener)]
        for thread in threads:
            thread.start()
        try:
            children = [fork(lambda n=n: child(n)) for n in range(FORKS)]  # forking on, while they run
            deadline = time.monotonic() + HUNG_AFTER
            codes = [wait_for(pid, deadline) for pid in children]
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert codes.count(None) == 0, f"{codes.count(None)} of {FORKS} children hung"
        assert codes == [0] * FORKS
    print(f"{FORKS} children exited")
    ContextSession.resume(s.session_id, context_dir, keep=False).close()
    assert not s.session_dir.exists()


def test_a_child_forked_while_a_call_is_being_saved_does_not_wait_for_it_when_it_ends() -> None:
    # The thread saving in the parent does not exist in the child: closing there has nothing to wait for.
    release = threading.Event()
    writing = threading.Event()

    class SlowStore(DictStore):
        def put(self, name: str, chunks: Sequence[bytes]) -> None:
            writing.set()
            release.wait()
            super().put(name, chunks)

    s = ContextSession(store=SlowStore(), threshold=0, close_timeout=60)
    saver = threading.Thread(target=s.save_context, args=("slow", {}, "x"))
    saver.start()
    try:
        writing.wait()

        def child() -> int:
            still_saving = s._saver.close(0.0)
            return 0 if still_saving == 0 else 1

        assert wait_for(fork(child), time.monotonic() + HUNG_AFTER) == 0
    finally:
        release.set()
        saver.join()
    s.close()

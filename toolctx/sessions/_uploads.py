"""Writes to a shared store, off the tool's path: a tool call returns while its output is uploaded.

A session in object storage would otherwise make every tool call wait for a PUT and
an index insert (milliseconds on loopback, tens of them to a cloud region). Its save
path hands the write to a pool of threads shared by the process and serves the output
from memory until it lands; whoever is about to show the model a handle (a model call)
first waits for the session's uploads to settle, so a handle the model sees is always
in the store, or its output is shown whole. A slow store holds at most
``MAX_PENDING`` uploads per session before a tool call waits for one to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

__all__ = ["MAX_PENDING", "Uploads", "deferred", "deferring", "on_event_loop"]

MAX_PENDING = 64
_THREADS = 8
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


_in_pool = threading.local()  # (running: this thread runs a job of the pool)
_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("toolctx_deferred_uploads", default=False)


def deferring() -> bool:
    """Whether outputs stored here and now upload in the background (inside :func:`deferred`)."""
    return _deferred.get()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, outputs this thread or task stores in a shared store upload in the background, in
    parallel: a model call storing the calls it compacts, which settles them before showing their handles."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


def on_event_loop() -> bool:
    """Whether this thread is running an asyncio event loop now (a write here would stall its other tasks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="toolctx-upload")
        return _pool


class Uploads:
    """The uploads of one session under way: submitted (each under a key, its record's id), then settled."""

    def __init__(self) -> None:
        self._done = threading.Condition(threading.Lock())
        self._pending: dict[str, int] = {}  # key -> its uploads under way
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def submit(self, key: str, job: Callable[[], object]) -> None:
        """Run ``job`` in the pool (it logs and counts its own failures); a job of the pool runs the jobs it
        submits itself, there and then (waiting for room in the pool could wait for itself)."""
        if getattr(_in_pool, "running", False):
            job()
            return
        with self._done:
            self._done.wait_for(lambda: self._count < MAX_PENDING)
            self._count += 1
            self._pending[key] = self._pending.get(key, 0) + 1
        try:
            _executor().submit(self._run, key, job)
        except BaseException:  # (an interpreter shutting down: upload here, now)
            self._run(key, job)

    def _run(self, key: str, job: Callable[[], object]) -> None:
        _in_pool.running = True
        try:
            job()
        finally:
            _in_pool.running = False
            with self._done:
                self._count -= 1
                left = self._pending.pop(key) - 1
                if left:
                    self._pending[key] = left
                self._done.notify_all()

    def settle(self, timeout: float | None = None, keys: Iterable[str] | None = None) -> bool:
        """Wait until every upload submitted so far is done (landed or failed), or only those of ``keys``;
        False if time ran out first."""
        if not self._count:
            return True
        if keys is None:
            with self._done:
                return self._done.wait_for(lambda: not self._count, timeout)
        wanted = frozenset(keys)
        if not wanted:
            return True
        pending = self._pending
        with self._done:
            return self._done.wait_for(lambda: pending.keys().isdisjoint(wanted), timeout)

    def after_fork(self) -> None:
        """A forked child uploads nothing of its parent's (the parent does), and counts from nothing."""
        self._done = threading.Condition(threading.Lock())
        self._pending = {}
        self._count = 0


def _forget_pool() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()  # (its threads stayed in the parent)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)

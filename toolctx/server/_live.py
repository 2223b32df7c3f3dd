"""The dashboard's live feed: every change to the memory, told to every open WebSocket.

Changes arrive three ways, all turned into one message ``{"event", "agent_id",
"revision"}`` per change and handed to each client's queue on the event loop:

- writes made through the server's own store object: :meth:`MemoryStore.subscribe`
  calls back in the writing thread, which hands the event to the loop;
- on PostgreSQL, writes of any process: a thread holds a ``LISTEN toolctx_memory``
  connection and forwards each notification (its payload is the agent id);
- on SQLite, writes of any process: a thread polls :meth:`MemoryStore.revision`
  (``poll_interval``, 0.2 s by default) and reports each change it did not already
  hear of in-process.

A client that falls behind (``MAX_QUEUED`` messages unread) is sent a single
``{"event": "resync"}`` instead of the backlog: it reloads what it shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from toolctx._internal import WARNING, log
from toolctx.memory import MemoryStore

__all__ = ["DEFAULT_POLL_INTERVAL", "MAX_QUEUED", "LiveFeed"]

DEFAULT_POLL_INTERVAL = 0.2
MAX_QUEUED = 256
_CHANNEL = "toolctx_memory"

Message = dict[str, Any]


class LiveFeed:
    """Fans the store's changes out to WebSocket clients; :meth:`start` and :meth:`stop` run with the app."""

    def __init__(self, store: MemoryStore, *, poll_interval: float = DEFAULT_POLL_INTERVAL) -> None:
        self.store = store
        self.poll_interval = poll_interval
        self._clients: set[asyncio.Queue[Message]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._seen = 0  # the highest revision already told to clients
        self._seen_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Begin listening (call from the event loop the clients are served on)."""
        self._loop = asyncio.get_running_loop()
        self._stop.clear()
        self._seen = self.store.revision()
        self._unsubscribe = self.store.subscribe(self._in_process)
        watch = self._listen if self.store.dialect == "postgresql" else self._poll
        self._thread = threading.Thread(target=watch, name="toolctx-live-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # -- clients -----------------------------------------------------------------------------

    def connect(self) -> asyncio.Queue[Message]:
        queue: asyncio.Queue[Message] = asyncio.Queue(MAX_QUEUED)
        self._clients.add(queue)
        return queue

    def disconnect(self, queue: asyncio.Queue[Message]) -> None:
        self._clients.discard(queue)

    @property
    def revision(self) -> int:
        """The highest store revision told to clients (or read at start)."""
        return self._seen

    @property
    def clients(self) -> int:
        return len(self._clients)

    def _broadcast(self, message: Message) -> None:
        for queue in list(self._clients):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait({"event": "resync", "agent_id": None, "revision": message.get("revision")})

    def _send(self, message: Message) -> None:
        """From any thread: hand ``message`` to the loop (dropped once the loop has closed)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
            loop.call_soon_threadsafe(self._broadcast, message)

    def _advance(self, revision: int | None) -> bool:
        """Record ``revision`` as told; False if it was told already."""
        if revision is None:
            return True
        with self._seen_lock:
            if revision <= self._seen:
                return False
            self._seen = revision
            return True

    # -- sources -----------------------------------------------------------------------------

    def _in_process(self, event: dict[str, Any]) -> None:
        revision = event.get("revision")
        self._advance(revision if isinstance(revision, int) else None)
        self._send({"event": event.get("event"), "agent_id": event.get("agent_id"), "revision": revision})

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_interval):
            try:
                revision = self.store.revision()
            except Exception as exc:  # a busy or vanished database: try again at the next tick
                log(WARNING, "live_feed_poll_failed", error=repr(exc))
                continue
            if self._advance(revision):
                self._send({"event": "changed", "agent_id": None, "revision": revision})

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen_once()
            except Exception as exc:  # the server went away: reconnect after a pause, then resync clients
                log(WARNING, "live_feed_listen_failed", error=repr(exc))
                if self._stop.wait(1.0):
                    return
                self._send({"event": "resync", "agent_id": None, "revision": None})

    def _listen_once(self) -> None:
        import psycopg

        url = self.store.engine.url.set(drivername="postgresql")
        with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f"LISTEN {_CHANNEL}")
            while not self._stop.is_set():
                for notice in conn.notifies(timeout=0.5):
                    self._send({"event": "changed", "agent_id": notice.payload or None, "revision": None})

"""The write-behind queue of a save path: calls taken now, stored in order before anything reads the records."""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Callable

from toolctx.telemetry import events

__all__ = ["LaterSaves"]

Later = tuple[contextvars.Context, Callable[[], object]]


class LaterSaves(deque[Later]):
    """Saves queued by tool hooks, each with a copy of the context it was queued in, run in order.

    A tool hook that queues its call does not pay for storing it on its own with
    cold caches: the next reader of the records stores the queue in one go. One
    thread stores at a time; a queued save that reads the records (it is one of
    them) does not store the queue again. (A deque: queueing, counting and
    testing for emptiness stay C calls on the tool hook's path.)
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()  # (re-entered by the saves it runs)
        self._draining = False

    def put(self, save: Callable[[], object]) -> int:
        """Queue ``save``, to run in a copy of the caller's context; returns how many are queued now."""
        self.append((contextvars.copy_context(), save))
        return len(self)

    def run(self, timeout: float | None = None) -> None:
        """Run the queued saves, oldest first; a reader in another thread meanwhile waits for them.

        ``timeout``: give up after that many seconds waiting for another thread
        running them (it runs them all), instead of waiting as long as it takes. A
        save that raises is logged: it could not store its call, which the model
        was shown whole.
        """
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return
        try:
            if self._draining:  # (a queued save reading the records: it is one of them)
                return
            self._draining = True
            try:
                while self:
                    context, save = self[0]  # (left in the queue until stored: a reader sees it and waits)
                    try:
                        context.run(save)
                    except Exception as exc:
                        events.save_failed(
                            "queue", "could not store a queued tool call; the model was shown it whole", exc
                        )
                    finally:
                        self.popleft()
            finally:
                self._draining = False
        finally:
            self._lock.release()

    def after_fork(self) -> None:
        """A forked child's copy: empty (the parent stores what it queued), with fresh locks."""
        self.clear()
        self._lock = threading.RLock()
        self._draining = False

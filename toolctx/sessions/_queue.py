"""The write-behind queue of a save path: calls taken now, stored in order before anything reads the records."""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Callable

from toolctx._internal import internal_error

__all__ = ["LaterSaves"]


class LaterSaves:
    """Saves queued by tool hooks, run in order, each in a copy of the context it was queued in.

    A tool hook that queues its call does not pay for storing it on its own with
    cold caches: the next reader of the records stores the queue in one go. One
    thread stores at a time; a queued save that reads the records (it is one of
    them) does not store the queue again.
    """

    def __init__(self) -> None:
        self._pending: deque[tuple[contextvars.Context, Callable[[], object]]] = deque()
        self._lock = threading.RLock()  # (re-entered by the saves it runs)
        self._draining = False

    def __len__(self) -> int:
        return len(self._pending)

    def __bool__(self) -> bool:
        return bool(self._pending)

    def put(self, save: Callable[[], object]) -> int:
        """Queue ``save``, to run in a copy of the caller's context; returns how many are queued now."""
        self._pending.append((contextvars.copy_context(), save))
        return len(self._pending)

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
            pending = self._pending
            try:
                while pending:
                    context, save = pending[0]  # (left in the queue until stored: a reader sees it and waits)
                    try:
                        context.run(save)
                    except Exception as exc:
                        internal_error("could not store a queued tool call; the model was shown it whole", exc)
                    finally:
                        pending.popleft()
            finally:
                self._draining = False
        finally:
            self._lock.release()

    def drop(self) -> int:
        """Forget what is queued (a session that ended while another thread ran it); returns how many."""
        left, self._pending = len(self._pending), deque()
        return left

    def after_fork(self) -> None:
        """A forked child's copy: empty (the parent stores what it queued), with fresh locks."""
        self._pending = deque()
        self._lock = threading.RLock()
        self._draining = False

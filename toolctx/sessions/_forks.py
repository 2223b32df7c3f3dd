"""What a fork does to the sessions alive in a process: their queued calls stored before, fresh state after."""

from __future__ import annotations

import os
import weakref
from typing import Protocol

from toolctx._internal import internal_error
from toolctx.sessions._saving import SavePath

__all__ = ["track"]


class _Session(Protocol):
    @property
    def save_path(self) -> SavePath: ...


_live_sessions: weakref.WeakSet[_Session] = weakref.WeakSet()
_fork_hook_registered = False


def track(session: _Session) -> None:
    """Remember live sessions so a forked child can reseed them (hook registered on first use)."""
    global _fork_hook_registered
    if not _fork_hook_registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_store_queues_before_fork, after_in_child=_reseed_after_fork)
        _fork_hook_registered = True
    _live_sessions.add(session)


def _store_queues_before_fork() -> None:
    """Store the calls the sessions queued, so a forked child has them too (waiting at most a second)."""
    for live in list(_live_sessions):
        try:
            live.save_path.store_queued(timeout=1.0)
        except Exception as exc:  # (never in the way of the fork)
            internal_error("could not store the queued calls before a fork; the child will not have them", exc)


def _reseed_after_fork() -> None:
    for live in list(_live_sessions):
        live.save_path.after_fork()

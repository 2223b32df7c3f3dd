"""Retention in a shared store: expiry from the index, and a sweep of payloads no index row lists.

Both run away from requests (a background thread of :class:`~toolctx.Conversations`,
or ``toolctx`` jobs of their own), and both delete in bulk: a thousand objects per
request, one transaction per session in the index.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from toolctx._internal import internal_error
from toolctx.errors import ConfigError
from toolctx.index._index import SessionIndex, index_of
from toolctx.storage import ObjectStore

__all__ = ["expire", "sweep"]


def expire(
    index: SessionIndex | str,
    *,
    skip: Callable[[str], bool] = lambda session_id: False,
    now_ns: int | None = None,
    batch: int = 1000,
) -> list[str]:
    """Remove the sessions whose time is up (payloads, then index rows); returns their ids.

    In batches of ``batch`` sessions: their leases taken in one statement, their
    listed payloads deleted a thousand per request, their rows in one transaction.
    A session ``skip(session_id)`` names (open in this process) and one a turn holds
    the lease of are left for a later run; so is a batch whose payloads could not be
    deleted (a warning says so). Payloads no row listed are the sweep's. ``index``: the index, or its
    database URL.
    """
    index = _opened(index)
    now = time.time_ns() if now_ns is None else now_ns
    holder = f"toolctx-expiry:{socket.gethostname()[:32]}:{os.getpid()}"  # (two expiring at once: one each)
    removed: list[str] = []
    passed: set[str] = set()
    while True:
        due = [(sid, url) for sid, url in index.expired(now, limit=batch + len(passed)) if sid not in passed]
        if not due:
            return removed
        wanted = [sid for sid, _ in due if not skip(sid)]
        taken = set(index.take_all(wanted, holder, 300.0))
        passed.update(sid for sid, _ in due if sid not in taken)
        by_store: dict[str, list[str]] = {}
        for session_id, url in due:
            if session_id in taken and url:
                by_store.setdefault(url, []).append(session_id)
        try:
            for url, ids in by_store.items():
                files = index.files(ids)
                ObjectStore(url, ids[0]).remove_paths([f"{sid}/{name}" for sid in ids for name in files.get(sid, ())])
        except Exception as exc:
            internal_error(f"could not delete the payloads of {len(taken)} expired sessions; later then", exc)
            passed.update(taken)
            continue
        index.forget_all(sorted(taken))
        removed += sorted(taken)


def sweep(url: str, index: SessionIndex | str, *, grace: float = 86_400.0, now: float | None = None) -> list[str]:
    """Delete the payloads under ``url`` of sessions the index does not hold, once ``grace`` seconds old.

    A payload is written before the index lists it; the grace period (a day by
    default) keeps a session being created, or one whose listing is delayed, from
    being swept. Returns the ids of the sessions swept. ``index``: the index every worker lists its sessions
    in, or its database URL (``"postgresql://user@host/db"``).
    """
    index = _opened(index)
    moment = time.time() if now is None else now
    probe = ObjectStore(url, "toolctx-sweep")
    present = probe.sessions()
    known = index.known(present)
    swept: list[str] = []
    for session_id in present:
        if session_id in known:
            continue
        store = ObjectStore(url, session_id)
        newest = store.newest()
        if newest is not None and moment - newest < grace:
            continue
        store.remove_all()
        swept.append(session_id)
    return swept


def _opened(index: SessionIndex | str) -> SessionIndex:
    """The index ``index`` is or names (one per URL in a process, as the workers' own)."""
    found = index_of(index) if isinstance(index, (str, SessionIndex)) and index else None
    if found is None:
        raise ConfigError(
            f"index must be a SessionIndex or its database URL such as 'postgresql://user@host/db', got {index!r:.80}"
        )
    return found

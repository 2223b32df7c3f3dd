"""Retention in a shared store: expiry from the index, and a sweep of payloads no index row lists.

Both run away from requests (a background thread of :class:`~toolctx.Conversations`,
or ``toolctx`` jobs of their own), and both delete in bulk: a thousand objects per
request, one transaction per session in the index.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from toolctx._internal import internal_error
from toolctx.index._index import SessionIndex
from toolctx.storage import ObjectStore

__all__ = ["expire", "sweep"]


def expire(
    index: SessionIndex,
    *,
    skip: Callable[[str], bool] = lambda session_id: False,
    now_ns: int | None = None,
    batch: int = 1000,
) -> list[str]:
    """Remove the sessions whose time is up (payloads, then index rows); returns their ids.

    A session ``skip(session_id)`` names (open in this process) and one a turn holds
    the lease of are left for a later run. A session whose payloads cannot be deleted
    stays in the index (a warning says so), so a later run tries again.
    """
    now = time.time_ns() if now_ns is None else now_ns
    removed: list[str] = []
    passed: set[str] = set()
    while True:
        due = [(sid, url) for sid, url in index.expired(now, limit=batch + len(passed)) if sid not in passed]
        if not due:
            return removed
        for session_id, url in due:
            if skip(session_id) or index.take(session_id, "toolctx-expiry", 60.0, now) is not None:
                passed.add(session_id)
                continue
            try:
                if url:
                    ObjectStore(url, session_id).remove_all()
            except Exception as exc:
                internal_error(f"could not delete the payloads of expired session {session_id} in {url}", exc)
                passed.add(session_id)
                continue
            index.forget(session_id)
            removed.append(session_id)


def sweep(url: str, index: SessionIndex, *, grace: float = 86_400.0, now: float | None = None) -> list[str]:
    """Delete the payloads under ``url`` of sessions the index does not hold, once ``grace`` seconds old.

    A payload is written before the index lists it; the grace period (a day by
    default) keeps a session being created, or one whose listing is delayed, from
    being swept. Returns the ids of the sessions swept.
    """
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

"""The turns under way in a worker, and whether each still shows a sign of life: which leases to renew.

A turn holds its conversation's lease from start to end (``Conversations.hold`` and
``release``). A worker that dies lets its leases run out; one that lives on but loses
a run without a word (a client gone, a worker hung mid-turn) must stop renewing too,
or the conversation stays held for ever. A turn is alive while it shows a sign of
life: an adapter's hook (``Conversations.seen``), or, inside an ``open()`` block (an
Agents SDK run, which calls no hook of the lease), a call its session takes. A block
may run one long tool or only read back for a while, so it is given longer.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass

from toolctx.sessions._session import ContextSession

__all__ = ["Turn", "alive"]

IDLE = 600.0  # seconds without a sign of life after which a lease is let lapse
IDLE_OPEN = 3600.0  # the same inside an open() block
IDLE_LEASES = 10  # (or this many leases, if longer)


@dataclass
class Turn:
    """The turns of one conversation under way here."""

    count: int = 0  # hold() calls not released yet
    seen: float = 0.0  # the last sign of life (time.monotonic())
    taken: tuple[int, int] = (0, 0)  # the session's calls taken (ContextSession.calls_taken), when last looked at
    lost: bool = False  # taken over by another worker mid-turn: said once, not fought over
    lapsed: bool = False  # let lapse for want of a sign of life: taken again if one comes while the lease is free

    def lapse(self, session: ContextSession | None) -> None:
        """Its lease is let lapse: its ``session``'s store no longer answers from memory (another worker may
        change the conversation)."""
        if not self.lapsed:
            self.lapsed = True
            if session is not None:
                session.store.held(False)

    def renewed(self, session: ContextSession | None) -> None:
        """Its lease was renewed: if it had lapsed, held again from now (the store reads the conversation anew
        once, then answers from memory again)."""
        if self.lapsed and session is not None:
            self.lapsed = False
            session.store.held(True)


def alive(
    turns: Mapping[str, Turn],
    now: float,
    lease: float,
    sessions: Mapping[str, ContextSession],
    blocks: Container[str],
) -> list[str]:
    """The session ids of ``turns`` whose lease to renew now, having marked the open() ``blocks`` (session ids)
    whose ``sessions`` took a call since last looked at as seen ``now``."""
    idle = max(IDLE, IDLE_LEASES * lease)
    idle_open = max(IDLE_OPEN, idle)
    live = []
    for session_id, turn in turns.items():
        block = session_id in blocks
        if block and (session := sessions.get(session_id)) is not None:
            taken = session.calls_taken()
            if taken != turn.taken:
                turn.taken, turn.seen = taken, now
        if not turn.lost and now - turn.seen < (idle_open if block else idle):
            live.append(session_id)
    return live

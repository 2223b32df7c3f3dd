"""Per-process counts of what toolctx did and what it could not do, kept without a lock on the hot path.

Each thread adds to a list of its own (only that thread ever writes it, so an
increment needs no lock and loses nothing); a snapshot sums every thread's list.
Resetting does not write into the lists (a thread could be adding meanwhile): it
notes the totals as the new zero. Lists of threads that ended are folded into one
when a snapshot is taken, so a process that starts many threads keeps few lists.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "HANDLE_REASONS",
    "READ_REASONS",
    "SAVE_REASONS",
    "STORAGES",
    "Counters",
    "cells",
    "per_thread",
    "reset",
    "slot",
    "snapshot",
]

STORAGES = ("memory", "disk", "object")
"""Where a save put an output: in memory, on local disk, in object storage."""

SAVE_REASONS = ("arguments", "store", "write", "upload", "manifest", "spill", "queue")
"""Why a save failed (see :class:`Counters`)."""

READ_REASONS = ("unknown", "invalid", "error")
"""Why a read-back failed: no such handle (or another conversation's), arguments it cannot use, an exception."""

HANDLE_REASONS = ("malformed", "unknown", "error", "part", "selection", "redacted", "chain", "unreadable", "other")
"""Why a handle passed as an argument was refused (:class:`toolctx.HandleError`'s ``reason``)."""

_NAMES = (
    *(f"saves.{s}" for s in STORAGES),
    "bytes_stored",
    *(f"save_failures.{r}" for r in SAVE_REASONS),
    "stand_ins",
    "tokens_freed",
    "compaction_batches",
    "compaction_failures",
    "cache_breaks",
    "cache_break_tokens",
    "read_backs",
    *(f"read_back_failures.{r}" for r in READ_REASONS),
    *(f"handle_refusals.{r}" for r in HANDLE_REASONS),
)
_SLOTS = {name: i for i, name in enumerate(_NAMES)}


def slot(name: str) -> int:
    """The index of counter ``name`` (``"saves.memory"``, ``"stand_ins"``) in a thread's list."""
    return _SLOTS[name]


def _count_map(totals: list[int], prefix: str, keys: tuple[str, ...]) -> Mapping[str, int]:
    return {k: totals[_SLOTS[f"{prefix}.{k}"]] for k in keys}


@dataclass(frozen=True)
class Counters:
    """What toolctx did in this process since it started (or since
    :func:`toolctx.diagnostics.reset_counters`), at one moment.

    Taken by :func:`toolctx.diagnostics.counters`; every number only grows until a reset. Failures are
    those toolctx logged and warned about (``internal_error``) and carried on from:
    the prompt went out unchanged, or the output was shown whole.

    - ``saves``: outputs stored, by where they went (``memory``, ``disk``,
      ``object``: object storage, counted when the save hands it over even if the
      upload runs in the background); ``bytes_stored``: their serialised bytes.
    - ``save_failures``, by reason: ``arguments`` (a tool's arguments could not be
      captured), ``store`` (a call could not be recorded), ``write`` (the local store
      refused the document), ``upload`` (object storage did), ``manifest`` (the
      kept session's manifest could not list it), ``spill`` (an in-memory output
      could not move to the store; it stays in memory), ``queue`` (a call queued
      for later could not be stored).
    - ``stand_ins``: outputs, arguments and old texts the model was shown as a
      stand-in (at tool time or in a batch); ``tokens_freed``: the tokens that saved
      the prompt, as estimated when they were made.
    - ``compaction_batches``: batches made; ``compaction_failures``: compaction steps
      that failed and left the prompt as it was.
    - ``cache_breaks``: prompt changes that make the provider re-read the prompt
      uncached from the change on (a batch; the first stand-in, which brings
      ``read_context`` into the tool list); ``cache_break_tokens``: the tokens
      re-sent uncached because of them, estimated.
    - ``read_backs``: ``read_context`` calls; ``read_back_failures`` by reason
      (``unknown``: no such stored output for the conversation, ``invalid``: arguments
      it cannot use, ``error``: it raised).
    - ``handle_refusals``: handles passed as arguments that were refused, by
      :class:`toolctx.HandleError` reason.
    """

    saves: Mapping[str, int]
    bytes_stored: int
    save_failures: Mapping[str, int]
    stand_ins: int
    tokens_freed: int
    compaction_batches: int
    compaction_failures: int
    cache_breaks: int
    cache_break_tokens: int
    read_backs: int
    read_back_failures: Mapping[str, int]
    handle_refusals: Mapping[str, int]

    @property
    def saved(self) -> int:
        """Outputs stored, wherever they went."""
        return sum(self.saves.values())

    @property
    def failed_saves(self) -> int:
        """Saves that failed, whatever the reason."""
        return sum(self.save_failures.values())

    @property
    def uploads_failed(self) -> int:
        """Outputs object storage did not take (``save_failures["upload"]``)."""
        return self.save_failures["upload"]

    def as_dict(self) -> dict[str, int]:
        """Every count under a flat dotted name (``"saves.disk"``, ``"stand_ins"``), for logs and health pages."""
        flat: dict[str, int] = {}
        for name, value in vars(self).items():
            if isinstance(value, Mapping):
                flat.update({f"{name}.{k}": v for k, v in value.items()})
            else:
                flat[name] = value
        return flat


class _Tally:
    """The lists every thread writes to, the totals of threads that ended, and the zero a reset set."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # taken when a thread first counts, on a snapshot and a reset only
        self.live: list[tuple[weakref.ref[threading.Thread], list[int]]] = []
        self.ended = [0] * len(_NAMES)
        self.zero = [0] * len(_NAMES)
        self.local = threading.local()
        self.fork_hooked = False

    def register(self) -> list[int]:
        own = [0] * len(_NAMES)
        if not self.fork_hooked and hasattr(os, "register_at_fork"):  # (on first use: importing does nothing)
            self.fork_hooked = True
            os.register_at_fork(after_in_child=_after_fork)
        self.local.cells = own
        with self.lock:
            self.live.append((weakref.ref(threading.current_thread()), own))
        return own

    def totals(self) -> list[int]:
        """Every thread's counts summed (the caller holds the lock)."""
        sums = list(self.ended)
        alive: list[tuple[weakref.ref[threading.Thread], list[int]]] = []
        for ref, own in self.live:
            for i, value in enumerate(own):
                sums[i] += value
            thread = ref()
            if thread is not None and thread.is_alive():
                alive.append((ref, own))
            else:  # (it writes no more: folded in for good)
                for i, value in enumerate(own):
                    self.ended[i] += value
        self.live = alive
        return sums


_tally = _Tally()


def cells() -> list[int]:
    """This thread's counts, to add to (``cells()[slot("stand_ins")] += 1``); the hooks inline it."""
    try:
        return _tally.local.cells  # type: ignore[no-any-return]
    except AttributeError:
        return _tally.register()


def per_thread() -> threading.local:
    """The thread-local object whose ``cells`` attribute is a thread's counts, once it counted (see :func:`cells`)."""
    return _tally.local


def snapshot() -> Counters:
    """The counts since the process started or the last :func:`reset`."""
    with _tally.lock:
        sums = _tally.totals()
        totals = [s - z for s, z in zip(sums, _tally.zero, strict=True)]
    return Counters(
        saves=_count_map(totals, "saves", STORAGES),
        bytes_stored=totals[_SLOTS["bytes_stored"]],
        save_failures=_count_map(totals, "save_failures", SAVE_REASONS),
        stand_ins=totals[_SLOTS["stand_ins"]],
        tokens_freed=totals[_SLOTS["tokens_freed"]],
        compaction_batches=totals[_SLOTS["compaction_batches"]],
        compaction_failures=totals[_SLOTS["compaction_failures"]],
        cache_breaks=totals[_SLOTS["cache_breaks"]],
        cache_break_tokens=totals[_SLOTS["cache_break_tokens"]],
        read_backs=totals[_SLOTS["read_backs"]],
        read_back_failures=_count_map(totals, "read_back_failures", READ_REASONS),
        handle_refusals=_count_map(totals, "handle_refusals", HANDLE_REASONS),
    )


def reset() -> None:
    """Count from zero again (the totals so far become the zero: no thread's count is written meanwhile)."""
    with _tally.lock:
        _tally.zero = _tally.totals()


def _after_fork() -> None:
    """A forked child counts its own work from zero, and may not wait for a lock another thread of the parent
    held when it forked."""
    _tally.lock = threading.Lock()
    reset()

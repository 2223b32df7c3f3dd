"""Reading what a session directory says about itself: its marker and its lock.

These functions only read (never lock for long, never write), so a listing, the
dashboard or :func:`toolctx.gc` can look at a directory without taking it over.
The marker and the lock are the ones :class:`~toolctx.storage.LocalStore` writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import orjson

from toolctx._naming import LOCK_NAME, MARKER_FORMAT, MARKER_NAME
from toolctx._platform import CAN_LOCK, pid_alive, try_lock, unlock
from toolctx.storage._files import open_regular, read_regular_file

__all__ = ["Marker", "is_held", "read_marker", "read_owner"]

_MARKER_LIMIT = 4096  # a marker or lock file longer than this is not one toolctx wrote
_LEGACY_KEYS = frozenset({"pid", "host", "since", "closed"})


class Marker(NamedTuple):
    """What the marker of a session directory says (see :func:`read_marker`)."""

    session_id: str
    kept: bool
    """Meant to be kept (``keep=True``), to be resumed: ``toolctx.gc`` spares it, even after a crash."""
    legacy: bool = False
    """Written before markers existed: recognised by its lock file."""
    notes: frozenset[str] | None = None
    """What the session noted about itself (:meth:`LocalStore.note`); None if its marker predates notes."""


def _read_small(path: str) -> bytes | None:
    """A marker or lock file's content, or None if it is absent, not a regular file or too long to be one."""
    try:
        data = read_regular_file(path, _MARKER_LIMIT + 1)
    except OSError:
        return None
    return data if len(data) <= _MARKER_LIMIT else None


def _json_object(data: bytes | None) -> dict[str, object] | None:
    try:
        value = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def read_marker(directory: str | os.PathLike[str]) -> Marker | None:
    """What the marker of a session directory says, or None if toolctx did not create the directory.

    None means: leave the directory and everything in it alone. A marker naming
    another session than the directory's name does not count (the directory was
    renamed or copied). A directory from before markers existed is recognised by
    its lock file (``legacy=True``).
    """
    name = Path(directory).name
    data = _read_small(os.path.join(directory, MARKER_NAME))
    if data is not None or os.path.lexists(os.path.join(directory, MARKER_NAME)):
        marker = _json_object(data)
        if marker is None or marker.get("format") != MARKER_FORMAT or marker.get("session_id") != name:
            return None
        notes = marker.get("notes")
        words = frozenset(w for w in notes if isinstance(w, str)) if isinstance(notes, list) else None
        return Marker(name, kept=marker.get("kept") is True, notes=words)
    owner = read_owner(directory)
    if owner is None or not _is_legacy_owner(owner):
        return None
    return Marker(name, kept=owner.get("closed") is not None, legacy=True)


def _is_legacy_owner(owner: dict[str, object]) -> bool:
    """Whether a lock file holds exactly what toolctx wrote in it before markers existed."""
    pid, since = owner.get("pid"), owner.get("since")
    return (
        owner.keys() <= _LEGACY_KEYS
        and type(pid) is int
        and isinstance(owner.get("host"), str)
        and type(since) in (int, float)
        and type(owner.get("closed", 0.0)) in (int, float)
    )


def read_owner(directory: str | os.PathLike[str]) -> dict[str, object] | None:
    """The owner recorded in a session directory's lock (``pid``, ``host``, ``since``), or None.

    The record stays after its owner exits: whether the owner is alive is
    :func:`is_held`'s question.
    """
    return _json_object(_read_small(os.path.join(directory, LOCK_NAME)))


def is_held(directory: str | os.PathLike[str]) -> bool:
    """Whether a live process holds the session directory right now (True when it cannot tell).

    It tries the directory's lock for an instant and releases it at once; where
    there is no ``flock`` (Windows) it asks whether the recorded pid is alive.
    """
    try:
        fd = open_regular(os.path.join(directory, LOCK_NAME), os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:  # a lock toolctx cannot open or check: leave the directory alone
        return True
    try:
        if not CAN_LOCK:  # pragma: no cover - no flock: fall back to asking whether the pid lives
            pid = (read_owner(directory) or {}).get("pid")
            return isinstance(pid, int) and pid_alive(pid)
        if not try_lock(fd):
            return True
        unlock(fd)
        return False
    finally:
        os.close(fd)

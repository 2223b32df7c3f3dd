"""The blob-store interface: a tiny abstract core every backend implements.

A store holds named blobs for one session. Names are flat (no separators) and are
checked by every backend, so no name can reach outside the store. ``put`` is
atomic: a reader sees the whole blob or no blob, never a part.
"""

from __future__ import annotations

import builtins
import errno
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NoReturn

from toolctx._checks import safe_name
from toolctx.errors import StorageError

__all__ = ["BlobStore", "check_name", "raise_exists", "raise_storage_error"]

MAX_BLOB_NAME = 255


def check_name(name: str) -> str:
    """Return ``name`` if it is a flat, safe blob name; raise ConfigError otherwise."""
    return safe_name("blob name", name, max_length=MAX_BLOB_NAME)


def raise_storage_error(action: str, name: str, where: object, exc: OSError) -> NoReturn:
    """Re-raise an operating-system failure of a store as a :class:`~toolctx.StorageError`.

    A missing blob stays ``FileNotFoundError`` and a directory the store will not
    adopt stays ``FileExistsError`` (callers test for them). The StorageError is
    still an ``OSError`` and keeps the errno. Call it from an ``except`` block.
    """
    if isinstance(exc, (FileNotFoundError, FileExistsError, StorageError)):
        raise exc
    message = f"could not {action} blob {name!r} in {str(where)!r}: {exc.strerror or exc}"
    raise StorageError(exc.errno, message) from exc


def raise_exists(name: str, where: object) -> NoReturn:
    """Refuse to replace the blob ``name`` (written once) with other bytes."""
    raise StorageError(errno.EEXIST, f"blob {name!r} in {str(where)!r} holds other bytes; it is never replaced")


class BlobStore(ABC):
    """Named blobs for one session: put, get, delete, list, append, close (and head, built on get)."""

    _noted_words: set[str] | None = None  # what note() was told (in memory: see note())
    shared = False
    """Other processes may write this session's blobs at the same time (object storage): a session reads
    what they listed when it misses a call, and never rewrites the manifest."""
    holding = False
    """This worker holds the session's lease (see :meth:`held`): no other one changes it meanwhile."""
    turn = 0
    """How many times this worker took the session's lease (a turn's number, here)."""

    def display_location(self) -> str:
        """Where the blobs are, as messages and ``repr()`` name it (a folder, an object store's URL and the
        session's prefix; never a password or a query string a URL may carry)."""
        return type(self).__name__

    @abstractmethod
    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        """Store the concatenation of ``chunks`` under ``name``, atomically."""

    @abstractmethod
    def get(self, name: str) -> bytes:
        """The blob stored under ``name``; FileNotFoundError if there is none."""

    @abstractmethod
    def delete(self, name: str) -> bool:
        """Remove ``name``; False if it was not there."""

    @abstractmethod
    def list(self) -> list[str]:
        """Names of the blobs present (never temporary or internal files)."""

    @abstractmethod
    def append(self, name: str, data: bytes) -> None:
        """Append ``data`` to the blob ``name``, creating it if needed (for journals)."""

    def head(self, name: str, size: int) -> bytes:
        """The first ``size`` bytes of the blob ``name`` (all of it if shorter); FileNotFoundError if none.

        Backends that can read part of a blob override this.
        """
        return self.get(name)[:size]

    def read_range(self, name: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` of the blob ``name`` (fewer past its end); FileNotFoundError if none.

        Backends that can read part of a blob override this (one ranged request).
        """
        return self.get(name)[start:end]

    def create(self, name: str, chunks: Sequence[bytes]) -> None:
        """:meth:`put` for a blob written once (a stored output): never replaces one that is there. The same
        bytes there already are a success (a write retried); other bytes a StorageError (``EEXIST``).

        Here a read, then a put; backends with a conditional create make it one atomic request.
        """
        try:
            found = self.get(name)
        except FileNotFoundError:
            self.put(name, chunks)
            return
        if found != b"".join(chunks):
            raise_exists(name, self)

    def find_listed(self, task: str | None, call_id: str) -> builtins.list[bytes] | None:
        """The manifest lines of the calls with this task and framework call id, when the store can find calls
        by identity (a session index); None: read the whole manifest instead."""
        return None

    def get_state(self, name: str) -> bytes | None:
        """What :meth:`put_state` last kept under ``name`` for the other workers of a shared store (None:
        nothing). A store one process has to itself keeps nothing here: that process's memory serves."""
        return None

    def put_state(self, name: str, data: bytes) -> None:  # noqa: B027 - kept only where others read it
        """Keep ``data`` (small: a compactor's decisions) under ``name`` for the other workers of a shared store,
        replacing what was there."""

    def path(self, name: str) -> str | None:
        """A filesystem path for ``name`` when the store has one, else None."""
        return None

    def note(self, word: str) -> None:
        """Remember ``word`` about this session, with the session: a store reopened later still knows it.

        Kept in memory here; a store that can be reopened (a session directory) keeps it there.
        """
        if self._noted_words is None:
            self._noted_words = set()
        self._noted_words.add(word)

    def noted(self, word: str) -> bool | None:
        """Whether ``word`` was noted; None if the store cannot tell (one kept before notes were)."""
        return self._noted_words is not None and word in self._noted_words

    def held(self, holding: bool) -> None:  # noqa: B027 - optional hook, nothing to cache by default
        """This worker holds the session's lease from now (``True``), or no longer (``False``). While it does,
        no other worker changes the session: a shared store may answer its state and notes from memory."""

    def after_fork(self) -> None:  # noqa: B027 - optional hook, nothing to reset by default
        """Called in a child process forked while the store was open (it has only the forking thread)."""

    def close(self, *, remove: bool = False) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the store holds; ``remove=True`` also removes its now-empty container."""

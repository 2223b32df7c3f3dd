"""The blob-store interface: a tiny abstract core every backend implements.

A store holds named blobs for one session. Names are flat (no separators) and are
checked by every backend, so no name can reach outside the store. ``put`` is
atomic: a reader sees the whole blob or no blob, never a part.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from toolctx.errors import ConfigError

__all__ = ["BlobStore", "check_name"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")


def check_name(name: str) -> str:
    """Return ``name`` if it is a flat, safe blob name; raise ConfigError otherwise."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None or ".." in name:
        raise ConfigError(
            f"blob name {name!r:.100} is not allowed: use ASCII letters, digits, '_', '-' and '.', "
            "starting with a letter or digit, without '..' or path separators"
        )
    return name


class BlobStore(ABC):
    """Named blobs for one session: put, get, delete, list, append, close."""

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

    def path(self, name: str) -> str | None:
        """A filesystem path for ``name`` when the store has one, else None."""
        return None

    def close(self, *, remove: bool = False) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the store holds; ``remove=True`` also removes its now-empty container."""

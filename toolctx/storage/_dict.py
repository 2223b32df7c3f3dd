"""A blob store in a dict, in process memory (tests, and sessions that must not touch disk)."""

from __future__ import annotations

from collections.abc import Sequence

from toolctx._platform import fork_safe_lock
from toolctx.storage._base import BlobStore, check_name, raise_exists

__all__ = ["DictStore"]


class DictStore(BlobStore):
    """Blobs in a dict. Nothing survives the process; ``resume()`` cannot reopen it."""

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}
        self._lock = fork_safe_lock()

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        data = b"".join(chunks)
        with self._lock:
            self._blobs[check_name(name)] = data

    def create(self, name: str, chunks: Sequence[bytes]) -> None:
        data = b"".join(chunks)
        found = self._blobs.get(check_name(name))
        if found is None:
            self.put(name, [data])  # (what a subclass does with a write, it does with this one)
        elif found != data:
            raise_exists(name, self)

    def get(self, name: str) -> bytes:
        try:
            return self._blobs[check_name(name)]
        except KeyError:
            raise FileNotFoundError(f"no blob named {name!r} in this dict store") from None

    def delete(self, name: str) -> bool:
        with self._lock:
            return self._blobs.pop(check_name(name), None) is not None

    def list(self) -> list[str]:
        with self._lock:
            return list(self._blobs)

    def append(self, name: str, data: bytes) -> None:
        with self._lock:
            self._blobs[check_name(name)] = self._blobs.get(name, b"") + data

"""The store a session is given: a local folder, an object store by URL, listed in a session index or not."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolctx.errors import ConfigError, SessionNotFoundError, StorageError
from toolctx.storage import BlobStore, ObjectStore

if TYPE_CHECKING:
    from toolctx.index import SessionIndex

__all__ = ["Unreachable", "index_for", "store_of"]


def store_of(store: object, session_id: str, index: object, *, existing: bool = False) -> BlobStore | None:
    """The store a session is given: a URL opens an object store, listed in ``index`` if one is named (None:
    ``TOOLCTX_INDEX``); None: ``TOOLCTX_STORE``, else the session's directory. ``existing``: the session must be
    there already (:class:`~toolctx.SessionNotFoundError` if not)."""
    if store is None:
        store = os.environ.get("TOOLCTX_STORE") or None
    if store is None:
        if index is not None:
            raise ConfigError(
                f"an index lists the calls of sessions in a shared store: give store='s3://bucket/prefix' "
                f"with index={index!r:.80}"
            )
        return None  # (TOOLCTX_INDEX alone leaves sessions in local folders as they are)
    if isinstance(store, str):
        store = ObjectStore(store, session_id)
    elif not isinstance(store, BlobStore):
        raise ConfigError(
            f"store must be a toolctx.storage.BlobStore or an object store URL such as 's3://bucket/prefix', "
            f"got {type(store).__name__}"
        )
    if not store.shared:
        if index is not None:
            raise ConfigError(f"index={index!r:.80} lists sessions in a shared store, and {store!r} is not one")
        return store
    found = _index_of(index)
    if found is None:
        if existing and not store.list():
            raise SessionNotFoundError(f"no kept session {session_id!r} in {store!r}")
        return store
    if existing:
        if not found.exists(session_id):
            raise SessionNotFoundError(f"no kept session {session_id!r} in {found!r}")
    else:
        found.touch(session_id, getattr(store, "url", repr(store)), None)
    from toolctx.index import IndexedStore

    return IndexedStore(store, found, session_id)


def _index_of(index: object) -> SessionIndex | None:
    if index is None and not os.environ.get("TOOLCTX_INDEX"):
        return None  # (the index's package, and SQLAlchemy, are imported only when one is named)
    from toolctx.index import index_of

    return index_of(index)  # type: ignore[arg-type]


class Unreachable(BlobStore):
    """The store of a turn whose shared store or index could not be reached: nothing is kept, so every output
    is shown whole and no handle is ever shown that a later turn could not read."""

    def __init__(self, cause: Exception) -> None:
        self.cause = cause

    def __repr__(self) -> str:
        return f"<unreachable store: {self.cause}>"

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        raise StorageError(errno.EIO, f"the shared store could not be reached: {self.cause}")

    def get(self, name: str) -> bytes:
        raise FileNotFoundError(errno.ENOENT, f"nothing is stored while the shared store is out of reach: {name}")

    def delete(self, name: str) -> bool:
        return False

    def list(self) -> list[str]:
        return []

    def append(self, name: str, data: bytes) -> None:
        self.put(name, [data])


def index_for(options: dict[str, Any]) -> SessionIndex | None:
    """The index the conversations' sessions are listed in: ``index``, else ``TOOLCTX_INDEX``, with a store."""
    index = options.get("index")
    if index is None and not os.environ.get("TOOLCTX_INDEX"):
        return None
    if not (options.get("store") or os.environ.get("TOOLCTX_STORE")):
        if index is not None:
            raise ConfigError(f"index={index!r:.80} lists conversations kept in a store: give store='s3://...' too")
        return None
    from toolctx.index import index_of

    return index_of(index)

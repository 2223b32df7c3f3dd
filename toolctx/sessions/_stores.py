"""The store a session is given: a local folder, an object store by URL, listed in a session index or not."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from toolctx.errors import ConfigError, SessionNotFoundError
from toolctx.storage import BlobStore, ObjectStore

if TYPE_CHECKING:
    from toolctx.index import SessionIndex

__all__ = ["store_of"]


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

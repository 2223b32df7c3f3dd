"""The shared session index: kept sessions any worker of a fleet serves (``index="postgresql://..."``).

Payloads go to a store every worker reaches (``store="s3://bucket/prefix"``); the
index (PostgreSQL, or SQLite on one host) lists each session's stored calls by
their identity, what was noted about it, when it expires, who holds its lease, and
what the compactors decided to show. ``pip install 'toolctx[postgres]'`` (or
``'toolctx[index]'`` for SQLite).
"""

from __future__ import annotations

from toolctx.index._index import SessionIndex, index_of
from toolctx.index._retention import expire, sweep
from toolctx.index._schema import SCHEMA_VERSION
from toolctx.index._store import IndexedStore

__all__ = ["SCHEMA_VERSION", "IndexedStore", "SessionIndex", "expire", "index_of", "sweep"]

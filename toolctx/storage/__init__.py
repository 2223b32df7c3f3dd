"""Blob stores: where stored tool outputs live once they leave memory."""

from __future__ import annotations

from toolctx.storage.base import BlobStore
from toolctx.storage.local import LocalStore
from toolctx.storage.memory import MemoryStore

__all__ = ["BlobStore", "LocalStore", "MemoryStore"]

"""Blob stores: where stored tool outputs live once they leave memory."""

from __future__ import annotations

from toolctx.storage._dict import DictStore
from toolctx.storage.base import BlobStore
from toolctx.storage.local import LocalStore

__all__ = ["BlobStore", "DictStore", "LocalStore"]

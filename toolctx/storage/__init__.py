"""Blob stores: where stored tool outputs live once they leave memory."""

from __future__ import annotations

from toolctx.storage._base import BlobStore
from toolctx.storage._dict import DictStore
from toolctx.storage._local import LocalStore

__all__ = ["BlobStore", "DictStore", "LocalStore"]

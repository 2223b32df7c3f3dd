"""Blob stores: where stored tool outputs live once they leave memory.

- :class:`BlobStore` is the small interface every store implements;
  :class:`DictStore` keeps blobs in memory, :class:`LocalStore` in a session
  directory it creates, marks and locks, :class:`ObjectStore` in object storage
  (S3 and S3-compatible services, GCS, Azure) named by a URL;
- :func:`read_marker`, :func:`read_owner` and :func:`is_held` tell, without
  taking it over, whether a directory is a toolctx session, who holds it and
  whether that holder is alive (what listings and :func:`toolctx.gc` decide by);
  :func:`remove_unfinished` deletes a directory a killed process was making;
- :func:`read_regular_file` reads a file in such a directory without following
  a link or opening a FIFO, socket or device.
"""

from __future__ import annotations

from toolctx.storage._base import BlobStore
from toolctx.storage._dict import DictStore
from toolctx.storage._files import read_regular_file
from toolctx.storage._local import LocalStore, remove_unfinished
from toolctx.storage._marker import Marker, is_held, read_marker, read_owner
from toolctx.storage._object import ObjectStore, display_url, is_store_url

__all__ = [
    "BlobStore",
    "DictStore",
    "LocalStore",
    "Marker",
    "ObjectStore",
    "display_url",
    "is_held",
    "is_store_url",
    "read_marker",
    "read_owner",
    "read_regular_file",
    "remove_unfinished",
]

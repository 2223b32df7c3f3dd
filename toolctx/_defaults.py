"""Every default of the session core, and the context directory they resolve to."""

from __future__ import annotations

import os
from pathlib import Path

from toolctx._checks import whole_number
from toolctx._platform import default_context_dir
from toolctx.errors import ConfigError

__all__ = [
    "ARGS_INLINE_LIMIT",
    "DEFAULT_CONTEXT_DIR",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MEMORY_BUDGET",
    "DEFAULT_THRESHOLD",
    "INDEX_PREVIEW_CHARS",
    "PREVIEW_CHARS",
    "byte_count",
    "resolve_context_dir",
]

DEFAULT_THRESHOLD = 32 * 1024
"""Results whose JSON form is at least this many bytes go straight to the store."""
DEFAULT_MEMORY_BUDGET = 4 * 1024 * 1024
"""Bytes of results and arguments a session keeps in memory before spilling the oldest."""
ARGS_INLINE_LIMIT = 1024
"""Pointers keep arguments whole up to this many JSON bytes and shorten larger ones."""
PREVIEW_CHARS = 200
"""Characters of a result kept in its pointer's preview."""
INDEX_PREVIEW_CHARS = 1000
"""Characters of a result the search index reads (so ranking never reads stored files)."""
DEFAULT_CONTEXT_DIR = "~/.agent/context"
"""Used when neither ``context_dir`` nor ``TOOLCTX_CONTEXT_DIR`` is given, on POSIX with a usable home.

On Windows sessions go to ``%LOCALAPPDATA%\\toolctx\\context`` instead. Where
there is no usable home directory (``HOME`` unset, or no folder can be made
there, as for many services and containers) they go to a per-user folder in the
temporary directory, ``<tempdir>/toolctx-<uid>/context``.
"""
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body the HTTP API accepts (``toolctx serve --max-body-bytes``): room for an item
of :data:`~toolctx.memory.MAX_CONTENT_BYTES` (8 MiB) even when a client escapes every character of it
in JSON (``\\uXXXX``, up to 12 bytes a character)."""


def resolve_context_dir(context_dir: str | os.PathLike[str] | None) -> Path:
    """The absolute context directory: the argument, ``TOOLCTX_CONTEXT_DIR`` or the default."""
    if context_dir is None:
        context_dir = os.environ.get("TOOLCTX_CONTEXT_DIR") or default_context_dir()
    if not isinstance(context_dir, (str, os.PathLike)) or "\x00" in os.fspath(context_dir):
        raise ConfigError(f"context_dir must be a directory path without NUL bytes, got {context_dir!r:.100}")
    return Path(context_dir).expanduser().absolute()


def byte_count(name: str, value: object) -> int:
    """``value`` if it is a whole number of bytes >= 0, else a ConfigError naming ``name``."""
    return whole_number(name, value, unit="bytes")

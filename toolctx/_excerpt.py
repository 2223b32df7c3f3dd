"""A bounded part of a stored context's file, for the views that show one (``toolctx show``, the dashboard).

A stored context can be gigabytes: reading one whole to show it costs that much memory
and time. These views read a window of it instead (:func:`read_excerpt`) and say how
much was left out, and parse the whole document only when it is small
(:data:`SHOW_BYTES`) or asked for.

The file is opened as session folders are read everywhere: never through a link, never
a FIFO, socket or device (``lstat`` first, then ``O_NOFOLLOW | O_NONBLOCK`` and
``fstat``), so nothing here can block or read outside the folder.
"""

from __future__ import annotations

import errno
import os
import stat

from pydantic import BaseModel, Field

__all__ = ["SHOW_BYTES", "ContextExcerpt", "file_size", "read_excerpt"]

SHOW_BYTES = 1 << 20
"""Bytes of a stored context shown at once (1 MiB): a larger one is shown in parts."""

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class ContextExcerpt(BaseModel):
    """A window of a stored context's file (its JSON document): ``text`` is bytes ``offset`` to ``end`` of ``size``.

    ``text`` is decoded as UTF-8; a character cut by the window's edges shows as U+FFFD.
    ``next_offset`` is where the following window starts, None at the end of the file.
    """

    session_id: str
    context_id: str
    offset: int = Field(ge=0)
    end: int = Field(ge=0)
    size: int = Field(ge=0, description="Bytes of the whole stored document.")
    text: str
    next_offset: int | None = None

    @property
    def left_out(self) -> int:
        """Bytes of the document outside this window."""
        return self.size - (self.end - self.offset)


def file_size(path: str) -> int:
    """Bytes of the regular file at ``path``; OSError (``EINVAL``) for a link, FIFO, socket, device or folder."""
    with _Opened(path) as fd:
        return os.fstat(fd).st_size


def read_excerpt(path: str, session_id: str, context_id: str, offset: int, length: int) -> ContextExcerpt:
    """Bytes ``offset`` to ``offset + length`` of the stored context file at ``path``, and its size.

    Reads only that window, whatever the size of the file. Raises OSError as
    :func:`file_size` does, and ValueError for a negative offset or length.
    """
    if offset < 0 or length < 0:
        raise ValueError(f"offset {offset} and length {length} must be 0 or more")
    with _Opened(path) as fd:
        size = os.fstat(fd).st_size
        start = min(offset, size)
        data = os.pread(fd, min(length, size - start), start)
    end = start + len(data)
    return ContextExcerpt(
        session_id=session_id,
        context_id=context_id,
        offset=start,
        end=end,
        size=size,
        text=data.decode("utf-8", errors="replace"),
        next_offset=end if end < size else None,
    )


class _Opened:
    """A file descriptor for the regular file at ``path``, closed on leaving."""

    def __init__(self, path: str) -> None:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        self.fd = os.open(path, _FLAGS)

    def __enter__(self) -> int:
        if not stat.S_ISREG(os.fstat(self.fd).st_mode):
            os.close(self.fd)
            raise OSError(errno.EINVAL, "not a regular file")
        return self.fd

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)

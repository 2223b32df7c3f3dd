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

import orjson
from pydantic import BaseModel, Field

from toolctx.errors import NotFoundError
from toolctx.models import ContextPointer, StoredContext
from toolctx.sessions import read_session_context, session_pointers

__all__ = ["SHOW_BYTES", "ContextExcerpt", "document_size", "excerpt_of", "file_size", "locate", "read_excerpt"]

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


def locate(
    session_id: str, context_id: str, context_dir: str | os.PathLike[str] | None
) -> ContextPointer | StoredContext:
    """The manifest's pointer to a stored context with a file of its own; any other context, read (it is small).

    Raises what :func:`~toolctx.sessions.read_session_context` raises for an unknown
    session, or a malformed or unknown context id, without reading any context's file.
    """
    wanted = context_id.removeprefix("ctx:")
    for pointer in session_pointers(session_id, context_dir):
        if pointer.id == wanted and pointer.filepath is not None:
            return pointer
    # Not listed with a file: read_session_context names what is wrong (a malformed or unknown id),
    # and reads a context kept without a file of its own.
    return read_session_context(session_id, context_id, context_dir)


def excerpt_of(found: ContextPointer | StoredContext, offset: int, length: int) -> ContextExcerpt:
    """The window ``offset``, ``length`` of the stored document of what :func:`locate` found.

    Raises :class:`~toolctx.errors.NotFoundError` if its file cannot be read.
    """
    if isinstance(found, ContextPointer):
        try:
            return read_excerpt(str(found.filepath), found.session_id, found.id, offset, length)
        except OSError as exc:
            raise _unreadable(found, exc) from None
    document = orjson.dumps(found.model_dump(mode="json"))
    start = min(offset, len(document))
    window = document[start : start + length]
    end = start + len(window)
    return ContextExcerpt(
        session_id=found.session_id,
        context_id=found.id,
        offset=start,
        end=end,
        size=len(document),
        text=window.decode("utf-8", errors="replace"),
        next_offset=end if end < len(document) else None,
    )


def document_size(found: ContextPointer) -> int:
    """Bytes of the stored document a pointer names; :class:`~toolctx.errors.NotFoundError` if it cannot be read."""
    try:
        return file_size(str(found.filepath))
    except OSError as exc:
        raise _unreadable(found, exc) from None


def _unreadable(found: ContextPointer, exc: OSError) -> NotFoundError:
    return NotFoundError(
        f"context {found.id!r} of session {found.session_id!r} is listed but its file cannot be read: "
        f"{exc.strerror or exc}"
    )


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

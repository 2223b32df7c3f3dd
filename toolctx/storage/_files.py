"""Opening files safely: only regular files are opened, links are never followed.

A session directory may hold anything a user or another program put there. Every
read toolctx makes in one goes through :func:`open_regular`: ``lstat`` first, so a
FIFO, socket or device is never even opened (opening some devices has effects,
reading a FIFO waits forever), then ``O_NOFOLLOW | O_NONBLOCK``, then ``fstat`` to
be sure the file opened is the one looked at.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = [
    "CLOEXEC",
    "NOFOLLOW",
    "NotRegularFileError",
    "make_private_dirs",
    "open_regular",
    "read_regular_file",
]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class NotRegularFileError(OSError):
    """A path toolctx would read or lock is a link, FIFO, socket, device or directory."""


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing ancestors owner-only (``Path.mkdir`` gives ancestors the umask's mode)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not path.is_dir():
            raise
    except FileNotFoundError:
        if path.parent == path:
            raise
        make_private_dirs(path.parent)
        make_private_dirs(path)


def open_regular(path: str, flags: int = os.O_RDONLY) -> int:
    """Open ``path`` if it is a regular file (or, with ``O_CREAT``, absent), never anything else.

    Returns the file descriptor; raises :class:`NotRegularFileError` for anything
    but a regular file, and ``FileNotFoundError`` if it is absent (without ``O_CREAT``).
    """
    try:
        seen: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
        seen = None
    if seen is not None and not stat.S_ISREG(seen.st_mode):
        raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
    fd = os.open(path, flags | NOFOLLOW | NONBLOCK | CLOEXEC, 0o600)
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or (seen is not None and opened.st_ino != seen.st_ino):
        os.close(fd)
        raise NotRegularFileError(errno.EINVAL, "not a regular file (it changed while being opened)", path)
    return fd


def read_regular_file(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The content of the regular file at ``path``, or its first ``limit`` bytes.

    Use it to read files in a session directory without taking the session over:
    a link is never followed and a FIFO, socket or device is never opened, so
    nothing here can block or read outside the directory. Raises ``OSError``
    (``FileNotFoundError`` if absent; an ``OSError`` with ``errno.EINVAL`` if the
    path is not a regular file).
    """
    fd = open_regular(os.fspath(path))
    with open(fd, "rb", closefd=True) as handle:
        return handle.read(limit)

"""A blob store in a local directory that the store owns while it is open.

- The directory (and any missing parent) is created on the first write, mode
  0700, never before, so a session whose outputs all stay in memory touches no disk.
- Blobs are written to a hidden temporary file (mode 0600) and renamed into
  place: a crash leaves either the whole blob or none, plus at most a ``.*.tmp``
  file that is never listed as a blob.
- Files are opened with ``O_NOFOLLOW`` and names are checked, so nothing is read,
  written or deleted outside the directory.
- While open, the store holds an exclusive ``flock`` on ``session.lock`` (which
  also records the owner's pid and host), so a second process cannot open the
  same directory and a garbage collector can tell a live session from an orphan.
  Where there is no ``flock`` (Windows) the recorded pid alone names the owner.
- What differs between operating systems (vectored writes, locking, probing a
  pid, locks a forked child must get back) lives in :mod:`toolctx._platform`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from toolctx._naming import LOCK_NAME, is_temp_name
from toolctx._platform import CAN_LOCK, fork_safe_lock, overwrite, pid_alive, try_lock, unlock, write_all
from toolctx.errors import SessionBusyError, SessionNotFoundError
from toolctx.storage._base import BlobStore, check_name, raise_storage_error

__all__ = ["LocalStore", "is_held", "read_marker"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_WRITE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW | _CLOEXEC
_READ = os.O_RDONLY | _NOFOLLOW | _CLOEXEC


class LocalStore(BlobStore):
    """Blobs as files in ``directory``.

    ``durable=True`` fsyncs each file and the directory after every write: a blob
    then survives a power cut, at the price of a disk flush per write (often
    milliseconds). Without it, a blob survives a crash of the process but not
    necessarily of the machine.
    """

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = False, existing: bool = False) -> None:
        self.directory = Path(directory)
        self._prefix = os.path.join(os.fspath(directory), "")  # plain strings: pathlib costs µs per call
        self._temp_ids = itertools.count()
        self.durable = durable
        self._lock = fork_safe_lock()
        self._lock_fd: int | None = None
        self._append_fds: dict[str, int] = {}
        self._ready = False
        self._created = False
        if existing:
            self._open_existing()

    # -- directory lifecycle -------------------------------------------------

    def _open_existing(self) -> None:
        if self.directory.is_symlink() or not self.directory.is_dir():
            raise SessionNotFoundError(f"no session directory at {str(self.directory)!r}")
        with self._lock:
            self._acquire()
            self._ready = True

    def _ensure(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if not self._created:
                _make_private_dirs(self.directory.parent)
                os.mkdir(self.directory, 0o700)  # fails if it exists: never adopt a folder we did not make
                self._created = True
                os.chmod(self.directory, 0o700)
            self._acquire()
            self._ready = True

    def _acquire(self) -> None:
        lock_path = self.directory / LOCK_NAME
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
        if not try_lock(fd):
            os.close(fd)
            raise SessionBusyError(
                f"session directory {str(self.directory)!r} is held by another live process; "
                "wait for it to end or use another session id"
            )
        self._lock_fd = fd
        self._write_marker()

    def _write_marker(self, **extra: object) -> None:
        assert self._lock_fd is not None
        marker = orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), **extra})
        overwrite(self._lock_fd, marker)

    def close(self, *, remove: bool = False) -> None:
        """Release the directory. Without ``remove`` it is left for a later resume,
        and the marker says it was closed on purpose (so ``toolctx.gc`` treats it as
        kept, not as an orphan of a crash)."""
        with self._lock:
            for fd in self._append_fds.values():
                os.close(fd)
            self._append_fds.clear()
            if not (self._ready or self._created):
                return
            if remove:
                self._remove_own_leftovers()
            if self._lock_fd is not None:
                if not remove:
                    self._write_marker(closed=time.time())
                os.close(self._lock_fd)
                self._lock_fd = None
            if remove:
                try:
                    os.rmdir(self.directory)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        raise
            self._ready = self._created = False

    def _remove_own_leftovers(self) -> None:
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if is_temp_name(entry.name) and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.directory / LOCK_NAME)

    # -- blobs ---------------------------------------------------------------

    def path(self, name: str) -> str:
        return self._prefix + check_name(name)

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        try:
            self._put(name, chunks)
        except OSError as exc:
            raise_storage_error("write", name, self.directory, exc)

    def _put(self, name: str, chunks: Sequence[bytes]) -> None:
        final = self._prefix + check_name(name)
        if not self._ready:
            self._ensure()
        if name in self._append_fds:  # the rename below replaces the file an append handle points to
            with self._lock:
                fd = self._append_fds.pop(name, None)
                if fd is not None:
                    os.close(fd)
        # Final names are unique per session, so a per-store counter keeps temporary names unique too.
        tmp = f"{self._prefix}.{name}.{next(self._temp_ids) & 0xFFFFFFFF:08x}.tmp"
        fd = os.open(tmp, _WRITE_NEW, 0o600)
        try:
            write_all(fd, chunks)
            if self.durable:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
        try:
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if self.durable:
            self._sync_directory()

    def get(self, name: str) -> bytes:
        path = self._prefix + check_name(name)
        try:
            fd = os.open(path, _READ)
            with open(fd, "rb", closefd=True) as handle:
                return handle.read()
        except OSError as exc:
            raise_storage_error("read", name, self.directory, exc)

    def delete(self, name: str) -> bool:
        path = self.path(name)
        with self._lock:
            fd = self._append_fds.pop(name, None)
            if fd is not None:
                os.close(fd)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True

    def list(self) -> list[str]:
        if not self._ready:  # never created or opened: nothing here is ours
            return []
        try:
            entries = os.scandir(self.directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        with entries:
            return [
                e.name
                for e in entries
                if e.name != LOCK_NAME and not e.name.startswith(".") and e.is_file(follow_symlinks=False)
            ]

    def append(self, name: str, data: bytes) -> None:
        try:
            self._append(name, data)
        except OSError as exc:
            raise_storage_error("append to", name, self.directory, exc)

    def _append(self, name: str, data: bytes) -> None:
        path = self._prefix + check_name(name)
        if not self._ready:
            self._ensure()
        with self._lock:
            fd = self._append_fds.get(name)
            if fd is None:
                fd = self._append_fds[name] = os.open(path, _APPEND, 0o600)
            write_all(fd, [data])
            if self.durable:
                os.fsync(fd)

    def _sync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing ancestors owner-only (``Path.mkdir`` gives ancestors the umask's mode)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not path.is_dir():
            raise
    except FileNotFoundError:
        if path.parent == path:
            raise
        _make_private_dirs(path.parent)
        _make_private_dirs(path)


def read_marker(directory: str | os.PathLike[str]) -> dict[str, object] | None:
    """The owner marker of a session directory, or None if it has none (then it is not ours)."""
    try:
        fd = os.open(os.path.join(directory, LOCK_NAME), _READ)
    except OSError:
        return None
    try:
        with open(fd, "rb", closefd=True) as handle:
            marker = orjson.loads(handle.read() or b"{}")
    except (OSError, orjson.JSONDecodeError):
        return {}
    return marker if isinstance(marker, dict) else {}


def is_held(directory: str | os.PathLike[str]) -> bool:
    """Whether a live process holds the session directory right now."""
    try:
        fd = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | _NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not CAN_LOCK:  # pragma: no cover - no flock: fall back to asking whether the pid lives
            pid = (read_marker(directory) or {}).get("pid")
            return isinstance(pid, int) and pid_alive(pid)
        if not try_lock(fd):
            return True
        unlock(fd)
        return False
    finally:
        os.close(fd)

"""A blob store in a local directory that the store creates and owns.

- The directory (and any missing parent) is created on the first write, mode
  0700, never before, so a session whose outputs all stay in memory touches no
  disk. A directory that already exists is never taken over. It appears with its
  marker already in it: it is made under a hidden name
  (``.<session id>.<16 hex>.new``), marked, then renamed, so a process killed
  meanwhile leaves no unmarked directory behind, only a hidden one that
  :func:`remove_unfinished` (what ``toolctx.gc`` calls) deletes.
- The first file written in it is the marker ``.toolctx-session``, one JSON line
  ``{"format": "toolctx-session/1", "session_id": <the directory's name>, "kept": <bool>}``,
  replaced atomically when it changes. Only a directory holding this marker for
  its own name is toolctx's: reopening one (``existing=True``, what ``resume()``
  and ``toolctx.gc`` do) refuses any other before changing anything in it, and
  the marker is the last file removed. A directory written before the marker
  existed is recognised by its lock file alone when that holds exactly what toolctx
  wrote there (``pid``, ``host``, ``since`` and perhaps ``closed``); it gets a marker
  when it is reopened.
- Blobs are written to a hidden temporary file (mode 0600) and renamed into
  place: a crash leaves either the whole blob or none, plus at most a ``.*.tmp``
  file that is never listed as a blob.
- Only regular files are read or locked: files are opened with ``O_NOFOLLOW`` and
  ``O_NONBLOCK`` after ``lstat`` says what they are, so a link is never followed and
  a FIFO, socket or device is never opened for reading, let alone waited on.
  Names are checked, so nothing is read, written or deleted outside the directory.
- While open, the store holds an exclusive ``flock`` on ``session.lock`` (which
  also records the owner's pid and host), so a second process cannot open the
  same directory and a garbage collector can tell a live session from an orphan.
  Where there is no ``flock`` (Windows) the recorded pid alone names the owner.
- Once closed, the store writes nothing more. A write still under way when it is
  closed with ``remove=True`` lands in a directory that keeps its marker, so
  ``toolctx.gc`` removes it later.
- What differs between operating systems (vectored writes, locking, probing a
  pid, locks a forked child must get back) lives in :mod:`toolctx._platform`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from toolctx._naming import HEAD_BYTES, LOCK_NAME, MARKER_FORMAT, MARKER_NAME, is_own_file, is_temp_name
from toolctx._platform import fork_safe_lock, overwrite, try_lock, write_all
from toolctx.errors import SessionBusyError, SessionNotFoundError, StorageError
from toolctx.storage._base import BlobStore, check_name, raise_storage_error
from toolctx.storage._files import (
    CLOEXEC,
    NOFOLLOW,
    NotRegularFileError,
    make_private_dirs,
    open_regular,
    read_regular_file,
)
from toolctx.storage._marker import read_marker

__all__ = ["LocalStore", "remove_unfinished"]

_WRITE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW | CLOEXEC
_UNFINISHED = re.compile(r"\.(?P<session>[A-Za-z0-9][A-Za-z0-9_.-]*)\.[0-9a-f]{16}\.new")
"""A session directory being made (a session id never starts with a dot, so it is never one)."""


class LocalStore(BlobStore):
    """Blobs as files in ``directory``.

    ``durable=True`` fsyncs each file and the directory after every write: a blob
    then survives a power cut, at the price of a disk flush per write (often
    milliseconds). Without it, a blob survives a crash of the process but not
    necessarily of the machine. ``existing=True`` reopens a directory a store
    created before (:class:`~toolctx.SessionNotFoundError` if it has no marker).
    ``keep=True``: the directory is meant to outlive the store, and its marker says
    so from the start, so that a process killed while using it leaves it to be
    resumed rather than an orphan for ``toolctx.gc``.
    """

    def display_location(self) -> str:
        return str(self.directory)

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        durable: bool = False,
        existing: bool = False,
        keep: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self._prefix = os.path.join(os.fspath(directory), "")  # plain strings: pathlib costs µs per call
        self._temp_ids = itertools.count()
        self.durable = durable
        self._keep = keep
        self._lock = fork_safe_lock()
        self._lock_fd: int | None = None
        self._append_fds: dict[str, int] = {}
        self._ready = False
        self._created = False
        self._closed = False
        self._writing = 0  # puts under way, so that close() never strands one in an unmarked directory
        self._notes: set[str] | None = set()  # what note() was told, in the marker (None: an older marker)
        self._marker_kept = keep
        self._forked = False  # a forked child's copy: never rewrites the marker for a note
        if existing:
            self._open_existing()

    # -- directory lifecycle -------------------------------------------------

    def _open_existing(self) -> None:
        where = str(self.directory)
        try:
            info = os.lstat(self.directory)
        except OSError:
            info = None
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise SessionNotFoundError(f"no session directory at {where!r}")
        marker = read_marker(self.directory)
        if marker is None:
            raise SessionNotFoundError(
                f"{where!r} is not a session directory toolctx created: it holds no {MARKER_NAME} marker "
                f"for session {self.directory.name!r}, so toolctx will not resume, change or delete anything "
                "in it. Pass the id of a session kept with keep=True, or another context_dir."
            )
        with self._lock:
            self._acquire()
            self._notes = None if marker.notes is None else set(marker.notes)
            self._marker_kept = marker.kept
            if marker.legacy or marker.kept != self._keep:  # a crash from now on leaves it as this store means
                self._write_marker(kept=self._keep)
            self._ready = True

    def _ensure(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if self._closed:
                raise self._closed_error()
            if not self._created:
                self._create()
                self._created = True
            self._acquire()
            self._ready = True

    def _create(self) -> None:
        """Make the directory, its marker already in it (the marker is what makes a directory toolctx's).

        Made under a hidden name, marked, then renamed into place: a process killed at
        any moment leaves no directory, a marked one, or a hidden unfinished one that
        :func:`remove_unfinished` deletes, never an unmarked one that nothing would.
        """
        parent = self.directory.parent
        make_private_dirs(parent)
        taken = FileExistsError(errno.EEXIST, "the session directory exists already", str(self.directory))
        if os.path.lexists(self.directory):  # never adopt (nor replace) a folder we did not make
            raise taken
        building = parent / f".{self.directory.name}.{secrets.token_hex(8)}.new"
        os.mkdir(building, 0o700)
        marker = os.path.join(building, MARKER_NAME)
        try:
            os.chmod(building, 0o700)
            fd = os.open(marker, _WRITE_NEW, 0o600)
            try:
                write_all(fd, [self._marker_line(kept=self._keep)])
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.rename(building, self.directory)  # (a directory made meanwhile holds a marker: not replaced)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise taken from None
                raise
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(marker)
            with contextlib.suppress(OSError):
                os.rmdir(building)
            raise
        self._marker_kept = self._keep
        if self.durable:
            _sync_directory(parent)

    def _acquire(self) -> None:
        try:
            fd = open_regular(self._prefix + LOCK_NAME, os.O_RDWR | os.O_CREAT)
        except NotRegularFileError:
            raise SessionNotFoundError(
                f"{str(self.directory)!r} holds a {LOCK_NAME} that is not a regular file; "
                "toolctx will not use this directory"
            ) from None
        if not _locked(fd):
            os.close(fd)
            raise SessionBusyError(
                f"session directory {str(self.directory)!r} is held by another live process; "
                "wait for it to end or use another session id"
            )
        self._lock_fd = fd
        owner = orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        overwrite(fd, owner)

    def _marker_line(self, *, kept: bool) -> bytes:
        marker: dict[str, object] = {"format": MARKER_FORMAT, "session_id": self.directory.name, "kept": kept}
        if self._notes is not None:  # (an older marker stays without: what it would have said is unknown)
            marker["notes"] = sorted(self._notes)
        return orjson.dumps(marker) + b"\n"

    def _write_marker(self, *, kept: bool) -> None:
        self._replace(self._prefix + MARKER_NAME, MARKER_NAME, [self._marker_line(kept=kept)])
        self._marker_kept = kept

    def note(self, word: str) -> None:
        """Remember ``word`` in the session directory's marker (written once per word).

        A directory not made yet gets it in its first marker (a session whose outputs
        all stay in memory makes none for it); a forked child keeps it in memory only,
        the parent's marker being the parent's to write.
        """
        if self._notes is not None and word in self._notes:
            return
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._notes = {word} if self._notes is None else self._notes | {word}
            if self._ready and not self._forked:
                self._write_marker(kept=self._marker_kept)

    def noted(self, word: str) -> bool | None:
        return None if self._notes is None else word in self._notes

    def close(self, *, remove: bool = False) -> None:
        """Release the directory; the store writes nothing more.

        Without ``remove`` the directory is left for a later resume, and the marker
        says it was kept on purpose (so ``toolctx.gc`` does not treat it as the
        orphan of a crash). With ``remove``, toolctx's own leftovers (temporary
        files, the lock, then the marker) are deleted and the directory too if
        nothing else is left in it; if another thread is still writing a blob, the
        marker stays instead, so that ``toolctx.gc`` removes the directory later.
        """
        with self._lock:
            self._closed = True
            for fd in self._append_fds.values():
                os.close(fd)
            self._append_fds.clear()
            if not (self._ready or self._created):
                return
            tidy = remove and not self._writing
            try:
                if not remove and self._lock_fd is not None:
                    self._write_marker(kept=True)
                if tidy:
                    self._remove_own_leftovers()
            finally:
                if self._lock_fd is not None:
                    os.close(self._lock_fd)
                    self._lock_fd = None
            if tidy and not self._blobs_left():
                self._delete_own(MARKER_NAME)  # last: until now gc could tell the directory is toolctx's
                try:
                    os.rmdir(self.directory)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        raise
            self._ready = self._created = False

    def _blobs_left(self) -> bool:
        """Whether files toolctx wrote are left (a clean-up that failed): the marker then stays, unkept, and
        ``toolctx.gc`` removes them once nothing holds the lock. (Anyone else's files never keep it.)"""
        with os.scandir(self.directory) as entries:
            names = [entry.name for entry in entries if entry.name != MARKER_NAME]
        for name in names:
            try:
                head = read_regular_file(self._prefix + name, HEAD_BYTES)
            except OSError:
                continue
            if is_own_file(name, head, self.directory.name):
                return True
        return False

    def _remove_own_leftovers(self) -> None:
        with os.scandir(self.directory) as entries:
            temporary = [entry.name for entry in entries if is_temp_name(entry.name)]
        for name in [*temporary, LOCK_NAME]:
            self._delete_own(name)

    def _delete_own(self, name: str) -> None:
        """Delete ``name`` if it is a regular file whose content says toolctx wrote it."""
        path = self._prefix + name
        try:
            head = read_regular_file(path, HEAD_BYTES)
        except OSError:
            return
        if is_own_file(name, head, self.directory.name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def after_fork(self) -> None:
        # Writes under way in the parent's other threads are not the child's to wait for.
        self._writing = 0
        self._forked = True

    def _closed_error(self) -> StorageError:
        return StorageError(errno.EBADF, f"the store in {str(self.directory)!r} is closed: its session has ended")

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
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._writing += 1
            fd = self._append_fds.pop(name, None)  # the rename below replaces the file an append handle points to
            if fd is not None:
                os.close(fd)
        try:
            if not self._ready:
                self._ensure()
            self._replace(final, name, chunks)
        finally:
            with self._lock:
                self._writing -= 1

    def _replace(self, final: str, name: str, chunks: Sequence[bytes]) -> None:
        """Make ``chunks`` the content of ``final`` atomically: a temporary file, then a rename."""
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
            _sync_directory(self.directory)

    def get(self, name: str) -> bytes:
        path = self._prefix + check_name(name)
        try:
            return read_regular_file(path)
        except OSError as exc:
            raise_storage_error("read", name, self.directory, exc)

    def head(self, name: str, size: int) -> bytes:
        path = self._prefix + check_name(name)
        try:
            return read_regular_file(path, size)
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
            if self._closed:
                raise self._closed_error()
            fd = self._append_fds.get(name)
            if fd is None:
                fd = self._append_fds[name] = os.open(path, _APPEND, 0o600)
            write_all(fd, [data])
            if self.durable:
                os.fsync(fd)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_unfinished(directory: str | os.PathLike[str], *, dry_run: bool = False) -> bool:
    """Remove a session directory a process was killed while making; whether it was (or, dry, would be) removed.

    Such a directory is named ``.<session id>.<16 hex>.new`` and holds at most the
    marker :class:`LocalStore` writes before renaming it into place. Anything else
    is left alone: another name, a link, a directory holding any other file, or a
    marker that is not toolctx's for that session.
    """
    path = Path(directory)
    found = _UNFINISHED.fullmatch(path.name)
    if found is None or ".." in found["session"] or not stat.S_ISDIR(os.lstat(path).st_mode):
        return False
    with os.scandir(path) as entries:
        names = [entry.name for entry in entries]
    if names not in ([], [MARKER_NAME]):
        return False
    marker = os.path.join(path, MARKER_NAME)
    if names:
        try:
            head = read_regular_file(marker, HEAD_BYTES)
        except OSError:  # gone meanwhile, or not a regular file
            return False
        if head and not is_own_file(MARKER_NAME, head, found["session"]):  # (empty: killed before its first byte)
            return False
    if dry_run:
        return True
    try:
        if names:
            os.unlink(marker)
        os.rmdir(path)
    except FileNotFoundError:  # (removed meanwhile: nothing left to do)
        pass
    except OSError:  # something was put in it meanwhile: left alone
        return False
    return True


_PROBE_WAIT = 0.25  # seconds: a check that a directory is in use (gc, list_sessions) holds its lock for an instant


def _locked(fd: int) -> bool:
    """Take the lock on ``fd``, trying again for a moment: one held by a live session stays held, one a check
    held for an instant is free again at once (a background gc probing the directory a request opens)."""
    deadline = time.monotonic() + _PROBE_WAIT
    while not try_lock(fd):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True

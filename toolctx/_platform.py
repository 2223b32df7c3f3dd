"""What differs between operating systems, kept in one place.

- ``write_all`` and ``overwrite`` write whole buffers to a file descriptor with
  ``os.writev``/``os.pwrite`` where the OS has them (POSIX) and plain
  ``os.write`` where it does not (Windows), completing short writes either way.
- ``try_lock``/``unlock`` take an advisory ``flock`` where there is one; without
  it (Windows) ``CAN_LOCK`` is false and callers ask ``pid_alive`` instead.
- ``fork_safe_lock`` makes the locks toolctx holds: a forked child gets every one
  of them back released, whichever thread held it in the parent.
- ``default_context_dir`` says where sessions go when no directory is given:
  ``~/.agent/context`` with a usable home directory, ``%LOCALAPPDATA%\\toolctx\\context``
  on Windows, else a per-user folder in the temporary directory.

The ``os`` functions are looked up on each call, not at import, so they can be
replaced at run time (tests remove ``os.writev`` to take the portable path).
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import stat
import sys
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CAN_LOCK",
    "WINDOWS",
    "default_context_dir",
    "fork_safe_lock",
    "overwrite",
    "pid_alive",
    "try_lock",
    "unlock",
    "write_all",
]

WINDOWS = sys.platform == "win32"
CAN_LOCK = fcntl is not None
_IOV_MAX = 1024  # writev takes at most IOV_MAX buffers (1024 on Linux)


# -- writing -----------------------------------------------------------------


def write_all(fd: int, chunks: Sequence[bytes]) -> None:
    """Write every byte of ``chunks`` to ``fd``, in order, however many calls the OS needs."""
    writev = getattr(os, "writev", None)
    if writev is None:
        _write_loop(fd, chunks[0] if len(chunks) == 1 else b"".join(chunks))
        return
    if len(chunks) > _IOV_MAX:
        chunks = [b"".join(chunks)]
    written = writev(fd, chunks)
    if written == sum(map(len, chunks)):
        return
    views = [memoryview(c) for c in chunks if c]  # a short write: carry on from where it stopped
    while views:
        while views and written >= len(views[0]):
            written -= len(views[0])
            views.pop(0)
        if written:
            views[0] = views[0][written:]
            written = 0
        if views:
            written = writev(fd, views)


def _write_loop(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def overwrite(fd: int, data: bytes) -> None:
    """Make ``data`` the whole content of the open file ``fd``."""
    os.ftruncate(fd, 0)
    pwrite = getattr(os, "pwrite", None)
    if pwrite is None:  # without pwrite the file offset moves; only this function writes such a file
        os.lseek(fd, 0, os.SEEK_SET)
        _write_loop(fd, data)
        return
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += pwrite(fd, view[offset:], offset)


# -- locking -----------------------------------------------------------------


def try_lock(fd: int) -> bool:
    """Take an exclusive lock on ``fd`` without waiting: False if another holder has it.

    Where there is no ``flock`` (see ``CAN_LOCK``) this always succeeds.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (True when it cannot tell)."""
    if sys.platform == "win32":  # pragma: no cover - os.kill(pid, 0) would terminate the process there
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if sys.platform == "win32":  # pragma: no cover

    def _windows_pid_alive(pid: int) -> bool:
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return bool(kernel32.GetLastError() == 5)  # ERROR_ACCESS_DENIED: it exists, it is not ours
        try:
            code = ctypes.c_ulong()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)


# -- forking -----------------------------------------------------------------

# Every lock toolctx makes, so that a forked child can release them all.
_fork_locks: weakref.WeakSet[threading.Lock] = weakref.WeakSet()
_fork_hook_registered = False


def fork_safe_lock() -> threading.Lock:
    """A ``threading.Lock`` that a child process forked from this one gets back released.

    A child has only the thread that forked it. A lock that another thread held at
    that moment stays held in the child with no one left to release it, and the
    child hangs for good on its first save. So the child re-initialises every lock
    made here, as the standard library does for its own (``logging``,
    ``concurrent.futures``). The data such a lock guards is left as the fork found
    it: at worst one call being saved by a thread that does not exist in the child
    is half registered there. Taking every lock before forking instead would make
    the data whole, but could deadlock a fork made while toolctx code holds one.
    """
    global _fork_hook_registered
    lock = threading.Lock()
    if not _fork_hook_registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_release_after_fork)
        _fork_hook_registered = True
    _fork_locks.add(lock)
    return lock


def _release_after_fork() -> None:
    for lock in list(_fork_locks):
        reinit = getattr(lock, "_at_fork_reinit", None)  # CPython's own at-fork reset
        if reinit is not None:
            reinit()
        elif lock.locked():  # pragma: no cover - interpreters without _at_fork_reinit
            lock.release()


# -- where sessions go by default ---------------------------------------------


def default_context_dir() -> Path:
    """The directory sessions go in when neither ``context_dir`` nor ``TOOLCTX_CONTEXT_DIR`` is given.

    ``~/.agent/context`` where the home directory is usable (POSIX, ``HOME`` set
    and the folder there either exists or can be created);
    ``%LOCALAPPDATA%\\toolctx\\context`` on Windows; otherwise (no home, or a
    read-only one such as the ``/`` a container gives an unnamed user)
    ``<tempdir>/toolctx-<uid>/context``. A
    per-user temporary folder that exists but is not safely the user's own
    (another owner, a link, writable by others) is never used: a fresh
    ``toolctx-<uid>-<random>`` beside it is named instead.
    """
    if WINDOWS:
        local = os.environ.get("LOCALAPPDATA")
        if local and os.path.isabs(local):
            return Path(local, "toolctx", "context")
    else:
        home = _home()
        if home is not None and _can_create(home / ".agent" / "context"):
            return home / ".agent" / "context"
    return _private_temp_dir() / "context"


def _home() -> Path | None:
    # Without HOME, Path.home() falls back to the password database, whose entry for a
    # service account is often a web root, "/" or "/nonexistent": not a place to write to.
    if not os.environ.get("HOME"):
        return None
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        return None
    return home if home.is_absolute() else None


def _can_create(path: Path) -> bool:
    """Whether ``path`` is a directory, or its nearest existing ancestor one this user may create folders in."""
    for candidate in (path, *path.parents):
        try:
            info = os.stat(candidate)
        except FileNotFoundError:
            continue
        except OSError:  # a file where a folder should be, or no permission to look
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
        return candidate == path or os.access(candidate, os.W_OK | os.X_OK)
    return False


def _private_temp_dir() -> Path:
    base = Path(tempfile.gettempdir(), f"toolctx-{_user_tag()}")
    if _own_or_absent(base):
        return base
    return base.with_name(f"{base.name}-{secrets.token_hex(4)}")


def _user_tag() -> str:
    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        return str(getuid())
    try:
        name = getpass.getuser()
    except Exception:  # no user name in the environment or the account database
        return "user"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip(".") or "user"


def _own_or_absent(path: Path) -> bool:
    """Whether ``path`` does not exist, or is a real directory of this user that others cannot write to."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - Windows: the temporary directory is per user already
        return True
    return info.st_uid == getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)

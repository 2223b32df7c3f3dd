"""Garbage collection of session directories left behind by crashed processes.

A session deletes its directory when it ends. A process that is killed cannot,
so its directory stays. :func:`gc` finds such orphans under a context directory
and removes what toolctx wrote in them, deciding by the directory's marker and lock:

- a directory without the marker toolctx writes first in every session directory
  (``.toolctx-session``, naming the session) is not a toolctx session: never
  touched, whatever files it holds;
- a directory whose lock a live process holds (flock) is in use: never touched;
- a directory of a session opened with ``keep=True`` (closed, or left by a
  process that died) is kept for ``resume()``: left alone unless
  ``include_kept=True``;
- anything else is an orphan, removed once nothing in it changed for
  ``older_than``;
- a hidden directory a process was killed while making
  (``.<session id>.<16 hex>.new``, holding at most its marker) is removed once
  ``older_than`` has passed since (see :func:`toolctx.storage.remove_unfinished`).

Only files toolctx wrote are deleted, recognised by name and by their first bytes
(a context document names its id and session first); links, FIFOs, sockets and
devices are never opened. A directory that still holds anything else afterwards
is left in place.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from toolctx._checks import real_number
from toolctx._defaults import resolve_context_dir
from toolctx._internal import DEBUG, log
from toolctx._naming import HEAD_BYTES, is_own_file, validate_session_id
from toolctx.errors import ConfigError, SessionError
from toolctx.storage import LocalStore, is_held, read_marker, remove_unfinished

__all__ = ["gc"]


def _seconds(older_than: float | timedelta) -> float:
    seconds = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
    return real_number("older_than (a timedelta or a number)", seconds, minimum=0.0, unit="seconds")


def _last_change(directory: Path) -> float:
    newest = directory.stat().st_mtime
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
            except FileNotFoundError:  # (a file removed while the folder is read)
                continue
    return newest


def gc(
    context_dir: str | os.PathLike[str] | None = None,
    *,
    older_than: float | timedelta = timedelta(hours=1),
    include_kept: bool = False,
    dry_run: bool = False,
) -> list[Path]:
    """Remove orphaned session directories; returns the ones cleaned (or, with ``dry_run``, that would be): their
    files toolctx wrote are removed, and the directory too unless it holds someone else's files, which stay.

    ``context_dir`` defaults like ``session()``'s (``TOOLCTX_CONTEXT_DIR``, then
    ``~/.agent/context``). ``older_than`` (a timedelta or seconds, one hour by
    default) spares orphans that changed recently.
    """
    root = resolve_context_dir(context_dir)
    cutoff = time.time() - _seconds(older_than)
    removed: list[Path] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        try:
            validate_session_id(entry.name)
        except ConfigError:
            if entry.name.endswith(".new") and _unfinished_removed(Path(entry.path), cutoff, dry_run=dry_run):
                removed.append(Path(entry.path))
                log(DEBUG, "gc_removed", directory=entry.path, dry_run=dry_run, unfinished=True)
            continue
        directory = Path(entry.path)
        if not entry.is_dir(follow_symlinks=False):
            continue
        marker = read_marker(directory)
        if marker is None or is_held(directory):
            continue
        if marker.kept and not include_kept:
            continue
        try:
            if _last_change(directory) > cutoff:
                continue
            if not dry_run and not _remove(directory):
                continue
        except FileNotFoundError:  # (removed meanwhile, by its owner or another gc: nothing left to do)
            continue
        removed.append(directory)
        log(DEBUG, "gc_removed", directory=str(directory), dry_run=dry_run)
    return removed


def _unfinished_removed(directory: Path, cutoff: float, *, dry_run: bool) -> bool:
    try:
        return _last_change(directory) <= cutoff and remove_unfinished(directory, dry_run=dry_run)
    except OSError:  # (gone meanwhile, a file of that name, or unreadable: left for its owner)
        return False


def _remove(directory: Path) -> bool:
    try:
        store = LocalStore(directory, existing=True)  # takes the lock: a process racing us loses
    except SessionError:
        return False
    try:
        for name in store.list():
            try:
                head = store.head(name, HEAD_BYTES)
            except OSError:  # gone meanwhile, or not a regular file
                continue
            if is_own_file(name, head, directory.name):
                store.delete(name)
    finally:
        store.close(remove=True)  # (the lock given up whatever happened: a folder removed meanwhile, say)
    return True

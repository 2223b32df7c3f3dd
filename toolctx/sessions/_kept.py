"""Session folders read from disk without taking them over: what ``toolctx ls``/``show`` and the dashboard list.

:meth:`ContextSession.resume` locks a session directory and rewrites its marker
and manifest; looking must change nothing. These functions read a directory only
if toolctx's marker names it, read its manifest line by line (a damaged line is
skipped, as recovery would), and open files only if they are regular files, so
nothing here writes, locks, or follows a link.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from toolctx._defaults import resolve_context_dir
from toolctx._naming import MANIFEST_NAME, POINTER_ID, validate_session_id
from toolctx.errors import ConfigError, NotFoundError, SessionNotFoundError
from toolctx.models import ContextPointer, StoredContext
from toolctx.sessions._records import Record, parse_document, parse_manifest_line
from toolctx.storage import is_held, read_marker, read_regular_file

__all__ = ["SessionState", "SessionSummary", "list_sessions", "read_session_context", "session_pointers"]

SessionState = Literal["kept", "in use", "orphaned"]


class SessionSummary(BaseModel):
    """One session directory toolctx created, as its files say now (what :func:`list_sessions` returns)."""

    session_id: str
    state: SessionState
    """``kept`` (closed with ``keep=True``, resumable), ``in use`` (a live process holds it) or ``orphaned``."""
    contexts: int
    size: int
    """Bytes of the stored results listed in the manifest."""
    tokens: int
    updated_at: datetime
    directory: str


def _session_dir(root: Path, session_id: object) -> Path:
    try:
        name = validate_session_id(session_id)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; list session ids with `toolctx ls`") from None
    directory = root / name
    if not directory.is_dir() or directory.is_symlink() or read_marker(directory) is None:
        raise SessionNotFoundError(f"no toolctx session {name!r} in {str(root)!r}; list them with `toolctx ls`")
    return directory


def _records(directory: Path) -> Iterator[Record]:
    try:
        manifest = read_regular_file(os.path.join(directory, MANIFEST_NAME))
    except OSError:
        return
    for line in manifest.splitlines():
        try:
            yield parse_manifest_line(line, directory.name)
        except Exception:
            continue


def _state(directory: Path, kept: bool) -> SessionState:
    if is_held(directory):
        return "in use"
    return "kept" if kept else "orphaned"


def list_sessions(context_dir: str | os.PathLike[str] | None = None) -> list[SessionSummary]:
    """Every toolctx session folder under ``context_dir`` (default as for ``session()``), most recent first.

    Kept sessions, sessions a live process holds, and orphans of crashed processes
    alike, each with its :attr:`~SessionSummary.state`; folders toolctx did not
    create are left out. Reading takes no lock, so a session in use may change
    while it is being listed. A missing ``context_dir`` lists nothing.
    """
    root = resolve_context_dir(context_dir)
    found: list[SessionSummary] = []
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return found
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            validate_session_id(entry.name)
        except ConfigError:
            continue
        directory = Path(entry.path)
        marker = read_marker(directory)
        if marker is None:
            continue
        records = list({r.id: r for r in _records(directory)}.values())
        try:
            changed = entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:  # removed meanwhile (a session ending, or gc)
            continue
        found.append(
            SessionSummary(
                session_id=entry.name,
                state=_state(directory, marker.kept),
                contexts=len(records),
                size=sum(r.size for r in records),
                tokens=sum(r.tokens for r in records),
                updated_at=datetime.fromtimestamp(changed, UTC),
                directory=str(directory),
            )
        )
    found.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)
    return found


def session_pointers(session_id: str, context_dir: str | os.PathLike[str] | None = None) -> list[ContextPointer]:
    """The pointers of every context a session folder's manifest lists, oldest first, without resuming it.

    Use :meth:`ContextSession.resume` to work with a kept session; this only looks,
    so it also works on a session a live process holds. Raises
    :class:`~toolctx.SessionNotFoundError` if ``context_dir`` holds no toolctx
    session by that id, :class:`~toolctx.ConfigError` if the id is not one toolctx gives.
    """
    directory = _session_dir(resolve_context_dir(context_dir), session_id)
    records = sorted({r.id: r for r in _records(directory)}.values(), key=lambda r: (r.timestamp_ns, r.id))
    return [r.pointer(directory.name, os.path.join(directory, r.filename)) for r in records]


def read_session_context(
    session_id: str, context_id: str, context_dir: str | os.PathLike[str] | None = None
) -> StoredContext:
    """One stored context of a session folder in full, by its id (``ctx:<id>`` works too), without resuming it.

    Raises :class:`~toolctx.errors.NotFoundError` for an id the manifest does not
    list or whose file cannot be read, :class:`~toolctx.SessionNotFoundError` and
    :class:`~toolctx.ConfigError` as :func:`session_pointers` does.
    """
    directory = _session_dir(resolve_context_dir(context_dir), session_id)
    wanted = context_id.removeprefix("ctx:") if isinstance(context_id, str) else context_id
    if not isinstance(wanted, str) or POINTER_ID.fullmatch(wanted) is None:
        raise ConfigError(
            f"context id {context_id!r:.80} is not one toolctx gives (7 or more hex digits, or ctx:<id>); "
            f"list them with `toolctx ls {directory.name}`"
        )
    for record in _records(directory):
        if record.id == wanted:
            try:
                return parse_document(read_regular_file(os.path.join(directory, record.filename)))
            except (OSError, ValueError) as exc:
                raise NotFoundError(
                    f"context {wanted!r} of session {directory.name!r} is listed but its file cannot be read: {exc}"
                ) from None
    raise NotFoundError(
        f"no context {wanted!r} in session {directory.name!r}; list them with `toolctx ls {directory.name}`"
    )

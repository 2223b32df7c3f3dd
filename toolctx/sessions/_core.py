"""What a session's doors share: its id, its save path, its events and how a record becomes a pointer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolctx._internal import WARNING, internal_error, log
from toolctx.models import ContextPointer, StorageKind
from toolctx.sessions._records import Record
from toolctx.sessions._saving import SavePath

__all__ = ["OnDebug", "SessionCore"]

OnDebug = Callable[[str, dict[str, Any]], None]


class SessionCore:
    """The state every part of :class:`~toolctx.ContextSession` reads (a base class of its door sets)."""

    session_id: str
    _saver: SavePath
    _on_debug: OnDebug | None

    def _event(self, level: int, event: str, **data: Any) -> None:
        if self._on_debug is not None:
            try:
                self._on_debug(event, data)
            except Exception as exc:
                internal_error("the on_debug callback raised", exc)
        log(level, event, session=self.session_id, **data)

    def _skip(self, ref: str, reason: str) -> None:
        self._event(WARNING, "skipped", ref=ref[:200], reason=reason)

    def _pointer(self, record: Record) -> ContextPointer:
        path = self._saver.store.path(record.filename) if record.storage is StorageKind.DISK else None
        return record.pointer(self.session_id, path)

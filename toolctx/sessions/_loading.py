"""Finding a stored call from what a caller holds, and loading it in full.

A caller may hold a :class:`~toolctx.ContextPointer`, its id (as a handle
``ctx:<id>`` or bare) or the path of a context file. Only this session's calls
are ever found: a pointer or document of another session, or a path outside this
session's store, is skipped with the reason, never read into the result.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from toolctx._internal import internal_error
from toolctx._naming import POINTER_ID, parse_context_filename, strip_handle
from toolctx.models import ContextPointer, StorageKind, StoredContext
from toolctx.sessions._records import Record, parse_document
from toolctx.sessions._resume import listed, parsed
from toolctx.sessions._saving import SavePath
from toolctx.sessions._tags import current_tags

__all__ = ["ContextRef", "Loader"]

ContextRef = ContextPointer | str | os.PathLike[str]
"""What load and selection accept: a pointer, its id (``"ctx:"`` prefix allowed) or a file path."""


class Loader:
    """Resolves references to one session's records and loads them."""

    def __init__(self, saver: SavePath, session_id: str, session_dir: Path, skip: Callable[[str, str], None]) -> None:
        self._saver = saver
        self.session_id = session_id
        self.session_dir = session_dir
        self._skip = skip

    def load(self, ref: ContextRef) -> StoredContext | None:
        """The stored call ``ref`` names in full, or None (told to ``skip`` with the reason)."""
        if isinstance(ref, ContextPointer) and ref.session_id != self.session_id:
            self._skip(ref.id, f"pointer belongs to session {ref.session_id}, not {self.session_id}")
            return None
        record = self.resolve(ref)
        if record is not None and record.storage is StorageKind.NONE and record.payload is None:
            self._skip(str(ref), "its output was never stored (storing it failed, as was said then)")
            return None
        try:
            if record is not None:
                payload = record.payload
                if payload is not None:
                    context = record.context(self.session_id, payload)
                else:
                    context = parse_document(self._saver.store.get(record.filename))
                    if context.session_id != self.session_id:
                        self._skip(str(ref), f"document belongs to session {context.session_id}")
                        return None
                    if context.id != record.id:  # a repeated identical call sharing an earlier file
                        metadata = record.metadata(self.session_id, context.args)
                        context = context.model_copy(update=metadata)
            else:
                name = self.path_name(ref.filepath if isinstance(ref, ContextPointer) else ref)
                if name is None:
                    self._skip(str(ref), "not a context of this session")
                    return None
                context = parse_document(self._saver.store.get(name))
        except Exception as exc:
            if record is None:  # (a path or a pointer of nothing this session holds: cleared, say)
                self._skip(str(ref), f"{type(exc).__name__}: {exc}")
                return None
            named = ref.id if isinstance(ref, ContextPointer) else str(ref)  # (held, and unreadable now: said aloud)
            internal_error(
                f"could not read the stored call {named!r:.120} from {self._saver.store.display_location()!r}; "
                "it is left out of what load_contexts returns",
                exc,
            )
            return None
        if context.session_id != self.session_id:
            self._skip(str(ref), f"document belongs to session {context.session_id}")
            return None
        return context

    def resolve(self, ref: ContextRef) -> Record | None:
        """The record ``ref`` names: a pointer, an id or handle, or a path of this session's store."""
        records = self._saver.records
        if isinstance(ref, ContextPointer):
            return records.get(ref.id)
        if isinstance(ref, str):
            record = records.get(strip_handle(ref)) or self.caught_up(strip_handle(ref))
            if record is not None:
                return record
        name = self.path_name(ref)
        parsed = parse_context_filename(name) if name else None
        return records.get(parsed.pointer_id) if parsed else None

    def caught_up(self, pointer_id: str) -> Record | None:
        """The record ``pointer_id`` names after reading what other workers listed in a shared store (None if
        it names none there either, or the store is not shared)."""
        saver = self._saver
        if not saver.store.shared or POINTER_ID.fullmatch(pointer_id) is None:
            return None
        saver.adopt(listed(saver.store, self.session_id))
        return saver.records.get(pointer_id)

    def catch_up(self, call_id: str | None = None, task_id: int | str | None = None) -> int:
        """Take in the calls other workers listed in a shared store since (those with this framework call id
        under ``task_id`` when the store finds calls by identity); how many were new (0: not shared)."""
        store = self._saver.store
        if not store.shared:
            return 0
        lines = None if call_id is None else store.find_listed(None if task_id is None else str(task_id), call_id)
        found = listed(store, self.session_id) if lines is None else parsed(lines, self.session_id)
        return self._saver.adopt(found)

    def named(self, call_id: str, task_id: int | str | None) -> list[Record]:
        """The records stored with this framework call id under ``task_id`` (see ``SavePath.named``), after
        reading what other workers listed in a shared store if this process has none."""
        found = self._saver.named(call_id, task_id)
        if found or not self._saver.store.shared:
            return found
        task_id = current_tags.get().task_id if task_id is None else task_id  # (as SavePath.named does)
        return self._saver.named(call_id, task_id) if self.catch_up(call_id, task_id) else found

    def path_name(self, ref: object) -> str | None:
        """The file name of ``ref`` if it is a path to a context file of this session."""
        if not isinstance(ref, (str, os.PathLike)):
            return None
        path = Path(ref)
        if not path.is_absolute():
            path = self.session_dir / path
        if parse_context_filename(path.name) is None:
            return None
        store_path = self._saver.store.path(path.name)
        if store_path is None or os.path.realpath(path.parent) != os.path.realpath(Path(store_path).parent):
            return None
        return path.name

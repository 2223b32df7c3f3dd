"""Rebuilding a kept session's records from its store, after a clean exit or a crash.

The manifest lists every stored context, one JSON line each, appended after the
file it names was written. A crash can cut the last line short, or come between
writing a file and listing it, so recovery trusts the files: a listed entry
whose file is gone is dropped, a file nobody listed is read and added, and an
unreadable line is skipped (its file, if whole, is found by the scan). Only the
manifest is read when it matches the files: no stored output is opened, and the
manifest is rewritten only when recovery changed what it lists. A repeated
identical call shares the file of the first one, so only the manifest knows it:
without a manifest line it is not recovered (its output is, under the first call).

Reading the manifest checks each line and keeps it: a call is built from its line
the first time something uses it (see :mod:`toolctx.sessions._listed`), so a turn
that reads one handle of a long conversation does not build the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from toolctx._naming import MANIFEST_NAME, parse_context_filename
from toolctx.sessions._listed import listed_record
from toolctx.sessions._records import Record, parse_document, parse_manifest_line, record_from_context
from toolctx.storage import BlobStore

__all__ = ["listed", "parsed", "recover"]


def recover(store: BlobStore, session_id: str, skip: Callable[[str, str], None]) -> list[Record]:
    """The records of every whole context file in ``store``, oldest first.

    Rewrites the manifest when it no longer matches the files; ``skip(name,
    reason)`` is told about files that could not be read. A shared store (one
    several workers write) is taken at its listing's word: a call is shown by
    handle only once listed there, so an unlisted object was never shown (the sweep
    removes it), and listing a bucket on every resume would cost a request per
    thousand objects.
    """
    if store.shared:
        return sorted(listed(store, session_id), key=lambda r: (r.timestamp_ns, r.id))
    names = set(store.list())
    records: dict[str, Record] = {}
    files: dict[str, str] = {}  # id -> the file its surviving line names
    try:
        manifest = store.get(MANIFEST_NAME)
    except FileNotFoundError:
        manifest = b""
    changed = False  # whether the manifest no longer says what the files say: only then is it rewritten
    for record, filename in _lines(manifest, session_id):
        if record is None:
            changed = True
            continue  # a line cut short by a crash, or damaged: the file scan below recovers it
        if filename in names:
            changed = changed or record.id in records
            records[record.id] = record
            files[record.id] = filename
        else:
            changed = True  # its file is gone
    named = set(files.values())
    del files
    for name in sorted(n for n in names - named if parse_context_filename(n) is not None):
        try:
            context = parse_document(store.get(name))
            if context.session_id != session_id:
                raise ValueError(f"the document belongs to session {context.session_id}")
            found = record_from_context(context, name)
        except Exception as exc:
            skip(name, f"unreadable context file: {type(exc).__name__}: {exc}")
            continue
        records[found.id] = found
        changed = True
    ordered = sorted(records.values(), key=lambda r: (r.timestamp_ns, r.id))
    if changed:  # only when a crash or a missing file changed it (a shared manifest never gets here)
        store.put(MANIFEST_NAME, [b"".join(r.manifest_line() for r in ordered)])
    return ordered


def listed(store: BlobStore, session_id: str) -> list[Record]:
    """The records the manifest of a shared ``store`` lists (each line appended after its file was written)."""
    try:
        manifest = store.get(MANIFEST_NAME)
    except FileNotFoundError:
        return []
    return [record for record, _ in _lines(manifest, session_id, whole=False) if record is not None]


def parsed(lines: Iterable[bytes], session_id: str) -> list[Record]:
    """The records manifest ``lines`` list (a damaged one skipped)."""
    records = []
    for line in lines:
        found, _ = _line(line, 0, len(line), session_id)
        if found is not None:
            records.append(found)
    return records


def _lines(manifest: bytes, session_id: str, *, whole: bool = True) -> Iterator[tuple[Record | None, str]]:
    """The record of each line of ``manifest`` and the file it names (None, "": a damaged line, or one cut short
    by a crash when ``whole``: a line that does not end in a newline)."""
    start, end = 0, len(manifest)
    while start < end:
        stop = manifest.find(b"\n", start)
        if stop < 0:
            if whole:  # cut short by a crash, if only by its end: the next line would join it
                yield None, ""
                return
            stop = end
        yield _line(manifest, start, stop, session_id)
        start = stop + 1


def _line(source: bytes, start: int, end: int, session_id: str) -> tuple[Record | None, str]:
    """The record of the line ``source[start:end]`` and the file it names (None, "": a damaged line)."""
    listed = listed_record(source, start, end)
    if listed is not None:
        return listed
    try:
        full = parse_manifest_line(source[start:end], session_id)
    except Exception:
        return None, ""  # (damage only from outside: a line being appended is whole or absent)
    return full, full.filename

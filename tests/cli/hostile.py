"""Files a user can point the toolctx command at by mistake (or an attacker on purpose), built on the spot.

``MEMORY_FILES`` are what ``--db`` may name instead of a toolctx memory: each builder
makes one in a folder and returns its path. None of them may get toolctx's tables,
change a byte, or end in a traceback.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

from toolctx.index import SessionIndex
from toolctx.memory import MemoryStore

Builder = Callable[[Path], Path]


def toolctx_memory(folder: Path, name: str = "memory.db", *, journal: str = "DELETE") -> Path:
    """A real toolctx memory with one agent and two items, in rollback-journal mode (one file, no -wal)."""
    path = folder / name
    with MemoryStore(path) as store:
        agent = store.agent("worker")
        agent.save("TASK", "Add retries to the uploader")
        agent.save("CODE", "def upload(): ...")
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA journal_mode={journal}")
    connection.close()
    return path


def _write(name: str, data: bytes) -> Builder:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    build.__name__ = name
    return build


def _sqlite(name: str, *statements: str) -> Builder:
    def build(folder: Path) -> Path:
        path = folder / name
        connection = sqlite3.connect(path)
        for statement in statements:
            connection.execute(statement)
        connection.commit()
        connection.close()
        return path

    build.__name__ = name
    return build


def _from_memory(name: str, change: Callable[[bytes], bytes]) -> Builder:
    def build(folder: Path) -> Path:
        original = toolctx_memory(folder, "original.db")
        path = folder / name
        path.write_bytes(change(original.read_bytes()))
        original.unlink()
        return path

    build.__name__ = name
    return build


def _altered_memory(name: str, *statements: str) -> Builder:
    def build(folder: Path) -> Path:
        path = toolctx_memory(folder, name)
        connection = sqlite3.connect(path)
        for statement in statements:
            connection.execute(statement)
        connection.commit()
        connection.close()
        return path

    build.__name__ = name
    return build


def _garbled(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:4096] + bytes(random.Random(7).randbytes(middle - 4096)) + data[middle:]


def session_index(folder: Path) -> Path:
    path = folder / "index.db"
    SessionIndex(f"sqlite:///{path}").close()
    return path


def newer_session_index(folder: Path) -> Path:
    path = session_index(folder)
    connection = sqlite3.connect(path)
    connection.execute("UPDATE toolctx_index_meta SET value = 99 WHERE key = 'version'")
    connection.commit()
    connection.close()
    return path


def folder_of_a_memory(folder: Path) -> Path:
    inside = folder / "memories"
    inside.mkdir()
    toolctx_memory(inside)
    return inside


def empty_folder(folder: Path) -> Path:
    path = folder / "a-folder.db"
    path.mkdir()
    return path


def fifo(folder: Path) -> Path:
    path = folder / "memory.fifo"
    os.mkfifo(path)
    return path


def unix_socket(folder: Path) -> Path:
    path = folder / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def dangling_link(folder: Path) -> Path:
    path = folder / "dangling.db"
    path.symlink_to(folder / "gone.db")
    return path


def link_to_foreign(folder: Path) -> Path:
    target = _sqlite("target.db", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")(folder)
    path = folder / "link.db"
    path.symlink_to(target)
    return path


def hostile_name(folder: Path) -> Path:
    path = folder / "evil\x1b]0;pwned\x07\u202e.db"
    path.write_text("\x1b[2J not a database")
    return path


def sparse_zeros(folder: Path) -> Path:
    path = folder / "zeros.db"
    with path.open("wb") as handle:
        handle.truncate(1 << 30)
    return path


def gzipped_memory(folder: Path) -> Path:
    original = toolctx_memory(folder, "original.db")
    path = folder / "memory.db.gz"
    path.write_bytes(gzip.compress(original.read_bytes()))
    original.unlink()
    return path


def bad_page_size(folder: Path) -> Path:
    original = toolctx_memory(folder, "original.db")
    data = bytearray(original.read_bytes())
    data[16:18] = b"\x00\x03"  # page size 3: no SQLite writes that
    path = folder / "bad-page-size.db"
    path.write_bytes(bytes(data))
    original.unlink()
    return path


MEMORY_FILES: list[Builder] = [
    _write("empty.db", b""),
    _write("notes.txt", b"just some notes\n"),
    _write("config.json", b'{"memory": true}\n'),
    _write("random.bin", random.Random(1).randbytes(8192)),
    _write("zeros.bin", bytes(4096)),
    _write("header-only.db", b"SQLite format 3\x00"),
    _write("escapes.db", b"\x1b]0;pwned\x07\x1b[2J"),
    _write("utf16.db", "SQLite format 3".encode("utf-16")),
    _from_memory("first-100-bytes.db", lambda data: data[:100]),
    _from_memory("first-page.db", lambda data: data[:4096]),
    _from_memory("half.db", lambda data: data[: len(data) // 2]),
    _from_memory("garbled.db", _garbled),
    _from_memory("header-garbled.db", lambda data: b"SQLite format 3\x00" + bytes(84) + data[100:]),
    _sqlite("empty-sqlite.db", "PRAGMA user_version = 1"),
    _sqlite(
        "other-app.db", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users VALUES (1, 'x')"
    ),
    _sqlite("same-names.db", "CREATE TABLE context_agents (x)", "CREATE TABLE context_items (y)"),
    _sqlite("meta-only.db", "CREATE TABLE context_meta (key TEXT PRIMARY KEY, value INTEGER)"),
    _sqlite("a-view.db", "CREATE TABLE t (a)", "CREATE VIEW context_meta AS SELECT 1 AS key, 2 AS value"),
    _sqlite("wal-foreign.db", "PRAGMA journal_mode=WAL", "CREATE TABLE orders (id INTEGER)"),
    _altered_memory("no-items-table.db", "DROP TABLE context_items"),
    _altered_memory("no-meta-table.db", "DROP TABLE context_meta"),
    _write("page.html", b"<html><script>alert(1)</script></html>"),
    _altered_memory("renamed.db", "ALTER TABLE context_agents RENAME TO agents_of_another_app"),
    session_index,
    newer_session_index,
    folder_of_a_memory,
    empty_folder,
    fifo,
    unix_socket,
    dangling_link,
    link_to_foreign,
    hostile_name,
    sparse_zeros,
    gzipped_memory,
    bad_page_size,
]


def digest(path: Path) -> bytes | None:
    """The bytes of a regular file (its content, for before/after checks); None for anything else."""
    if path.is_symlink():
        path = path.resolve()
    if not path.is_file():
        return None
    if path.stat().st_size > 1 << 20:
        return (str(path.stat().st_size) + str(path.stat().st_mtime_ns)).encode()  # (the sparse file)
    return path.read_bytes()


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)

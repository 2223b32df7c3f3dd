"""Opening the memory database a command is pointed at: read-only to look, and only ever toolctx's own.

``--db`` may name anything: another application's SQLite file, a text file, a folder,
a FIFO, a truncated copy. A command first looks at the file (without opening a FIFO
or a device), then opens the database read-only (a ``file:...?mode=ro`` URI and
``PRAGMA query_only`` on SQLite, read-only transactions on PostgreSQL), so looking
never creates a table or changes a byte; and a command that writes (flash save,
restore) checks, read-only first, that the tables it would write are toolctx's.
Whatever is wrong ends in one line naming the database and what to do.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolctx._database import open_database
from toolctx.cli._text import visible
from toolctx.errors import ConfigError, NotFoundError

__all__ = [
    "BUSY_SECONDS",
    "CommandRefused",
    "check_existing_memory",
    "check_sqlite_file",
    "explain_database_error",
    "open_memory",
]

BUSY_SECONDS = 5.0
"""How long a command that looks waits for another process's lock on a SQLite file before saying it is busy."""

_SQLITE_HEADER = b"SQLite format 3\x00"
_WHAT_TO_PASS = "pass the --db of a toolctx memory (sqlite:///path.db or postgresql://user@host/db)"
_FAILED, _BAD_VALUE, _BUSY = 1, 2, 4


class CommandRefused(Exception):
    """A command cannot go on with what it was given: ``str(exc)`` says why and what to do, ``code`` the exit code."""

    def __init__(self, message: str, code: int, *, older_layout: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.older_layout = older_layout  # (toolctx's tables, missing a column a newer toolctx added)


def _memory_url(db: str | None) -> str:
    if db is not None:
        if not db.strip():
            raise ConfigError("--db is empty; pass a database URL such as sqlite:///memory.db, or leave it out")
        return db
    return os.environ.get("TOOLCTX_MEMORY_URL") or f"sqlite:///{Path('~/.agent/memory.db').expanduser()}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device")):
        if test(mode):
            return name
    return "block device" if stat.S_ISBLK(mode) else "special file"


def check_sqlite_file(path: Path) -> None:
    """Refuse, before SQLite opens it, a path that is not a SQLite database file this process can read."""
    shown = visible(str(path))
    try:
        mode = os.stat(path).st_mode  # (a link to a database file is fine: SQLite opens what it points at)
    except FileNotFoundError:
        raise NotFoundError(f"no memory database at '{shown}'; pass --db or set $TOOLCTX_MEMORY_URL") from None
    except OSError as exc:
        raise CommandRefused(
            f"cannot reach the memory database '{shown}': {exc.strerror}; {_WHAT_TO_PASS}", _FAILED
        ) from None
    if stat.S_ISDIR(mode):
        raise CommandRefused(f"--db '{shown}' is a folder, not a database file; pass the file inside it", _BAD_VALUE)
    if not stat.S_ISREG(mode):
        raise CommandRefused(f"--db '{shown}' is a {_kind(mode)}, not a database file; {_WHAT_TO_PASS}", _BAD_VALUE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            header = os.read(fd, 100)
        finally:
            os.close(fd)
    except OSError as exc:
        raise CommandRefused(
            f"cannot read the memory database '{shown}': {exc.strerror}; run as a user who may read it, or fix "
            "its permissions",
            _FAILED,
        ) from None
    if not header:
        raise CommandRefused(f"'{shown}' is an empty file, not a toolctx memory; {_WHAT_TO_PASS}", _BAD_VALUE)
    if not header.startswith(_SQLITE_HEADER):
        raise CommandRefused(
            f"'{shown}' is not a SQLite database (it starts {visible(repr(header[:16]))}); {_WHAT_TO_PASS}", _BAD_VALUE
        )
    if len(header) < 100:
        raise CommandRefused(f"'{shown}' is a truncated SQLite file ({len(header)} bytes); {_WHAT_TO_PASS}", _BAD_VALUE)


def _message_of(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return " ".join(str(orig).split())[:200]


def _before_version_table(engine: Any) -> bool:
    """Whether ``engine`` holds a toolctx memory made before layouts had a version table (which a store upgrades)."""
    try:
        from sqlalchemy import inspect

        names = set(inspect(engine).get_table_names())
    except Exception:  # (not a database at all: said by the error being explained)
        return False
    return {"context_items", "context_agents", "context_contents"} <= names and "context_schema" not in names


def explain_database_error(exc: BaseException, shown: str, *, before_versions: bool = False) -> CommandRefused | None:
    """What a database error raised while reading ``shown`` means for the person who pointed a command at it.

    None for an error that is not the database's (so it is not dressed up as one).
    """
    try:
        from sqlalchemy.exc import DBAPIError, InvalidRequestError, OperationalError
        from sqlalchemy.exc import TimeoutError as PoolTimeoutError
    except ImportError:  # pragma: no cover - without SQLAlchemy no command reaches a database
        return None
    if isinstance(exc, PoolTimeoutError):
        return CommandRefused(f"the memory database '{shown}' is busy; retry shortly", _BUSY)
    if isinstance(exc, InvalidRequestError):  # (rows toolctx's tables always have are missing)
        return CommandRefused(
            f"'{shown}' is not a toolctx memory database of this version ({visible(str(exc))}); {_WHAT_TO_PASS}",
            _BAD_VALUE,
        )
    if not isinstance(exc, DBAPIError):
        return None
    text = _message_of(exc)
    lowered = text.lower()
    code = str(getattr(getattr(exc, "orig", None), "sqlstate", "") or "")
    missing_table = "no such table" in lowered or code == "42P01"
    if "no such column" in lowered or code == "42703" or (missing_table and before_versions):
        return CommandRefused(
            f"'{shown}' holds a toolctx memory of an older layout ({visible(text)}); `toolctx serve --db` on it, "
            "or any MemoryStore opened on it, brings it up to date",
            _BAD_VALUE,
            older_layout=True,
        )
    if missing_table:
        return CommandRefused(
            f"'{shown}' is not a toolctx memory database of this version ({visible(text)}); {_WHAT_TO_PASS}",
            _BAD_VALUE,
        )
    if "not a database" in lowered or "malformed" in lowered or "disk image" in lowered:
        return CommandRefused(f"'{shown}' is damaged or not a database ({visible(text)}); {_WHAT_TO_PASS}", _BAD_VALUE)
    if "readonly" in lowered or "read-only" in lowered or code == "25006":
        return CommandRefused(f"the memory database '{shown}' cannot be written ({visible(text)})", _FAILED)
    if "unable to open" in lowered:
        return CommandRefused(f"cannot open the memory database '{shown}' ({visible(text)})", _FAILED)
    if "locked" in lowered or "busy" in lowered or isinstance(exc.orig, OSError) or exc.connection_invalidated:
        return CommandRefused(f"the memory database '{shown}' is busy or unreachable; retry shortly", _BUSY)
    if isinstance(exc, OperationalError):
        return CommandRefused(
            f"the memory database '{shown}' is busy or unreachable; retry shortly ({visible(text)})", _BUSY
        )
    return CommandRefused(f"reading the memory database '{shown}' failed: {visible(text)}", _FAILED)


def _looked_at(url: str) -> tuple[Any, str]:
    """The parsed URL and how to name it in a message (no password), after checking a SQLite file."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if "://" not in url:
        url = f"sqlite:///{url}"
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(
            f"--db '{visible(url)[:200]}' is not a database URL; use sqlite:///path.db or postgresql://user@host/db"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or str(parsed.query.get("uri", "")).lower() in ("true", "1"):
            raise ConfigError(f"--db '{visible(url)[:200]}' is not a database file; pass sqlite:///path.db")
        check_sqlite_file(Path(database).expanduser())
        return parsed, visible(str(Path(database).expanduser()))
    return parsed, visible(parsed.render_as_string(hide_password=True))


@contextmanager
def open_memory(db: str | None, *, write: bool = False) -> Iterator[Any]:
    """The :class:`~toolctx.memory.MemoryStore` at ``db``, read-only unless ``write``; only ever toolctx's own.

    A database that is missing, not a database, or not toolctx's is refused (a
    :class:`CommandRefused` or :class:`~toolctx.errors.NotFoundError` naming it),
    never created or given tables. Errors of the database while the command runs are
    refused the same way.
    """
    try:
        from toolctx.memory import MemoryStore
    except ImportError as exc:
        raise CommandRefused(f"memory commands need SQLAlchemy: pip install 'toolctx[cli,memory]' ({exc})", 1) from None
    parsed, shown = _looked_at(_memory_url(db))
    engines: list[Any] = []
    try:
        engine = open_database(parsed, "memory stores", read_only=True, busy_timeout=BUSY_SECONDS, connect_timeout=10)
        engines.append(engine)
        with MemoryStore(engine) as looking:
            # Toolctx's tables, read: another application's database ends here, with nothing written.
            looking.revision()
            looking.agents()
            if not write:
                yield looking
                return
        writable = open_database(parsed, "memory stores", connect_timeout=10)
        engines.append(writable)
        with MemoryStore(writable) as store:
            yield store
    except Exception as exc:
        refused = explain_database_error(
            exc, shown, before_versions=bool(engines) and _before_version_table(engines[0])
        )
        if refused is None:
            raise
        raise refused from None
    finally:
        for engine in engines:
            engine.dispose()


def check_existing_memory(db: str | None) -> None:
    """Refuse a SQLite ``db`` that exists but is not a toolctx memory; a missing file (made later) passes.

    For commands that create the memory when it is missing (``toolctx serve``): they must
    not give another application's database toolctx's tables.
    """
    url = _memory_url(db)
    if "://" not in url:
        url = f"sqlite:///{url}"
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
    except Exception:  # (a malformed URL is refused with its message where it is opened)
        return
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    if not os.path.lexists(Path(parsed.database).expanduser()):
        return
    try:
        with open_memory(url):
            pass
    except CommandRefused as refused:
        if not refused.older_layout:  # (an older layout of toolctx's own is what serving brings up to date)
            raise

"""How the ``toolctx`` command answers: tables for people, ``--json`` for scripts, errors with exit codes."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import orjson
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from toolctx.errors import ConfigError, NotFoundError, SessionBusyError, SessionNotFoundError, StorageError

__all__ = [
    "BAD_VALUE",
    "BUSY",
    "FAILED",
    "NOT_FOUND",
    "ContextDirOption",
    "DbOption",
    "JsonOption",
    "emit_json",
    "err",
    "fail",
    "guarded",
    "open_memory",
    "out",
    "table",
]

FAILED, BAD_VALUE, NOT_FOUND, BUSY = 1, 2, 3, 4

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
ContextDirOption = Annotated[
    Path | None,
    typer.Option(
        "--context-dir",
        help="Folder of the sessions (default: $TOOLCTX_CONTEXT_DIR or ~/.agent/context).",
        show_default=False,
    ),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Memory database: sqlite:///path.db or postgresql://user@host/db "
        "(default: $TOOLCTX_MEMORY_URL or ~/.agent/memory.db).",
        show_default=False,
    ),
]

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str, code: int = FAILED) -> typer.Exit:
    """Print ``message`` on stderr; the exception to raise to leave with ``code``."""
    err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    return typer.Exit(code)


def _code_of(exc: BaseException) -> int | None:
    if isinstance(exc, NotFoundError | SessionNotFoundError):
        return NOT_FOUND
    if isinstance(exc, ConfigError):
        return BAD_VALUE
    if isinstance(exc, SessionBusyError):
        return BUSY
    if isinstance(exc, StorageError):
        return FAILED
    try:
        from sqlalchemy.exc import OperationalError
        from sqlalchemy.exc import TimeoutError as PoolTimeoutError
    except ImportError:  # pragma: no cover - without the memory extra no command reaches a database
        return None
    if isinstance(exc, OperationalError | PoolTimeoutError):
        return BUSY
    return None


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Turn toolctx's own errors into a message naming the value and an exit code (tracebacks are for bugs)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            code = _code_of(exc)
            if code is None:
                raise
            text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            if code == BUSY and not isinstance(exc, SessionBusyError):
                text = f"the memory database is busy or unreachable; retry shortly ({type(exc).__name__})"
            raise fail(text.replace("[", "\\["), code) from None

    return run


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def emit_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (pydantic models as their JSON form)."""
    sys.stdout.write(orjson.dumps(value, default=_default, option=orjson.OPT_INDENT_2).decode() + "\n")
    sys.stdout.flush()


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    """A Rich table; numbers are right-aligned, times shown to the second."""
    shown = Table(title=title, title_justify="left", show_lines=False)
    numeric = [bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(columns))]
    when = [bool(rows) and all(isinstance(r[i], datetime) for r in rows) for i in range(len(columns))]
    for index, name in enumerate(columns):
        # Ids, numbers and times stay on one line; free text folds.
        whole = index == 0 or numeric[index] or when[index]
        shown.add_column(name, justify="right" if numeric[index] else "left", overflow="fold", no_wrap=whole)
    for row in rows:
        shown.add_row(*(_cell(value) for value in row))
    return shown


def _cell(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "" if value is None else str(value).replace("[", "\\[")


def _memory_url(db: str | None) -> str:
    if db is not None:
        if not db.strip():
            raise ConfigError("--db is empty; pass a database URL such as sqlite:///memory.db, or leave it out")
        return db
    return os.environ.get("TOOLCTX_MEMORY_URL") or f"sqlite:///{Path('~/.agent/memory.db').expanduser()}"


@contextmanager
def open_memory(db: str | None, *, must_exist: bool = True) -> Iterator[Any]:
    """The :class:`~toolctx.memory.MemoryStore` at ``db``; a SQLite file that does not exist is refused, not made."""
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        from toolctx.memory import MemoryStore
    except ImportError as exc:
        raise fail(f"memory commands need SQLAlchemy: pip install 'toolctx[cli,memory]' ({exc})") from None
    url = _memory_url(db)
    target = url
    if "://" in url:
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ConfigError(
                f"--db {url!r:.200} is not a database URL; use sqlite:///path.db or postgresql://user@host/db"
            ) from None
        target = (parsed.database or "") if parsed.get_backend_name() == "sqlite" else ""
    if must_exist and target and target != ":memory:" and not Path(target).expanduser().is_file():
        raise NotFoundError(f"no memory database at {target!r}; pass --db or set $TOOLCTX_MEMORY_URL")
    store = MemoryStore(url)
    try:
        yield store
    finally:
        store.close()

"""How the ``toolctx`` command answers: tables for people, ``--json`` for scripts, errors with exit codes."""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import orjson
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolctx.cli._databases import CommandRefused, open_memory
from toolctx.cli._text import plain, visible, visible_json
from toolctx.errors import ConfigError, NotFoundError, SessionBusyError, SessionNotFoundError, StorageError

__all__ = [
    "BAD_VALUE",
    "BUSY",
    "FAILED",
    "NOT_FOUND",
    "CommandRefused",
    "ContextDirOption",
    "DbOption",
    "JsonOption",
    "emit_json",
    "err",
    "fail",
    "guarded",
    "open_memory",
    "out",
    "plain",
    "sessions_folder",
    "table",
    "visible",
]

FAILED, BAD_VALUE, NOT_FOUND, BUSY = 1, 2, 3, 4

# No highlighting and no :emoji: codes: what is printed is what was stored (see _text).
out = Console(highlight=False, soft_wrap=True, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

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
    """Print ``message`` on stderr, on one line and as plain text; the exception to raise to leave with ``code``."""
    err.print(Text.assemble(("error:", "bold red"), " ", visible(message)), markup=False, highlight=False)
    return typer.Exit(code)


def sessions_folder(context_dir: Path | None) -> Path | None:
    """``--context-dir`` checked: a folder this process can read, or a message naming it and an exit code."""
    if context_dir is None:
        return None
    shown = visible(str(context_dir))
    try:
        mode = os.stat(context_dir).st_mode
    except FileNotFoundError:
        raise NotFoundError(
            f"no folder at --context-dir '{shown}'; pass the folder the sessions are kept in "
            "(by default ~/.agent/context)"
        ) from None
    except OSError as exc:
        raise CommandRefused(f"cannot reach --context-dir '{shown}': {exc.strerror}", FAILED) from None
    if not stat.S_ISDIR(mode):
        raise ConfigError(f"--context-dir '{shown}' is not a folder; pass the folder the sessions are kept in")
    if not os.access(context_dir, os.R_OK | os.X_OK):
        raise CommandRefused(
            f"cannot read --context-dir '{shown}' (permission denied); run as a user who may read it", FAILED
        )
    return context_dir


def _code_of(exc: BaseException) -> int | None:
    if isinstance(exc, CommandRefused):
        return exc.code
    if isinstance(exc, NotFoundError | SessionNotFoundError):
        return NOT_FOUND
    if isinstance(exc, ConfigError):
        return BAD_VALUE
    if isinstance(exc, SessionBusyError):
        return BUSY
    if isinstance(exc, StorageError | OSError):
        return FAILED
    return None


def _message_of(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, StorageError):
        where = f" {exc.filename!r}" if exc.filename is not None else ""
        return f"cannot read{where}: {exc.strerror}"
    return str(exc)


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
            raise fail(_message_of(exc), code) from None

    return run


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def emit_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (pydantic models as their JSON form)."""
    encoded = orjson.dumps(value, default=_default, option=orjson.OPT_INDENT_2).decode()
    sys.stdout.write(visible_json(encoded) + "\n")
    sys.stdout.flush()


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    """A Rich table; numbers are right-aligned, times shown to the second, text (and the title) made :func:`visible`."""
    shown = Table(title=None if title is None else plain(title), title_justify="left", show_lines=False)
    numeric = [bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(columns))]
    when = [bool(rows) and all(isinstance(r[i], datetime) for r in rows) for i in range(len(columns))]
    for index, name in enumerate(columns):
        # Ids, numbers and times stay on one line; free text folds.
        whole = index == 0 or numeric[index] or when[index]
        shown.add_column(name, justify="right" if numeric[index] else "left", overflow="fold", no_wrap=whole)
    for row in rows:
        shown.add_row(*(_cell(value) for value in row))
    return shown


def _cell(value: Any) -> Text:
    if isinstance(value, datetime):
        return Text(value.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, float):
        return Text(f"{value:.3f}")
    if isinstance(value, int) and not isinstance(value, bool):
        return Text(f"{value:,}")
    return Text("") if value is None else plain(value)

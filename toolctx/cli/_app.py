"""The ``toolctx`` commands over sessions: ``ls``, ``show``, ``stats``, ``gc`` and ``serve``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

import toolctx
from toolctx._defaults import DEFAULT_MAX_BODY_BYTES
from toolctx._excerpt import SHOW_BYTES
from toolctx.cli._databases import check_existing_memory
from toolctx.cli._memory import memory_app
from toolctx.cli._output import (
    BAD_VALUE,
    ContextDirOption,
    DbOption,
    JsonOption,
    emit_json,
    fail,
    guarded,
    open_memory,
    out,
    plain,
    sessions_folder,
    table,
)
from toolctx.cli._show import show_context
from toolctx.errors import ConfigError
from toolctx.sessions import list_sessions, session_pointers

__all__ = ["app"]

app = typer.Typer(
    name="toolctx",
    help="Inspect and clean toolctx's kept sessions and tiered memory, or serve its dashboard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(memory_app, name="memory")

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _version(value: bool) -> None:
    if value:
        out.print(f"toolctx {toolctx.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """toolctx: persisted tool contexts and tiered agent memory."""


@app.command("ls")
@guarded
def ls(
    session_id: Annotated[str | None, typer.Argument(help="A session id: list the contexts it stored.")] = None,
    context_dir: ContextDirOption = None,
    json: JsonOption = False,
) -> None:
    """List the session folders (kept, in use, orphaned), or with an id the contexts one session stored."""
    context_dir = sessions_folder(context_dir)
    if session_id is None:
        sessions = list_sessions(context_dir)
        if json:
            emit_json(sessions)
            return
        if not sessions:
            out.print("no sessions (sessions kept with keep=True stay here for resume)")
            return
        rows = [[s.session_id, s.state, s.contexts, s.size, s.tokens, s.updated_at] for s in sessions]
        out.print(table(None, ["session", "state", "contexts", "bytes", "tokens", "updated (UTC)"], rows))
        return
    pointers = session_pointers(session_id, context_dir)
    if json:
        emit_json(pointers)
        return
    rows = [
        [p.id, p.tool_name, p.tool_description, p.size, p.tokens, "error" if p.is_error else "", p.timestamp]
        for p in pointers
    ]
    out.print(table(f"session {session_id}", ["id", "tool", "call", "bytes", "tokens", "", "at (UTC)"], rows))


@app.command("show")
@guarded
def show(
    session_id: Annotated[str, typer.Argument(help="The session id (see `toolctx ls`).")],
    context_id: Annotated[str, typer.Argument(help="The context id, or its handle ctx:<id>.")],
    context_dir: ContextDirOption = None,
    json: JsonOption = False,
    pager: Annotated[bool, typer.Option(help="Page the output on a terminal.")] = True,
    full: Annotated[bool, typer.Option("--full", help="Read and print the context whole, however large.")] = False,
    offset: Annotated[
        int | None,
        typer.Option(
            min=0, help="Print the stored document from this byte on (see the last line of a part).", show_default=False
        ),
    ] = None,
    length: Annotated[int, typer.Option(min=1, help="Bytes printed at most, without --full.")] = SHOW_BYTES,
) -> None:
    """Print one stored context: the call, its arguments, and its result or error.

    A context over --length bytes is printed in parts: the first part, and a line saying
    how much was left out and how to read on (--offset) or read it whole (--full). With
    --json such a part is {session_id, context_id, offset, end, size, text, next_offset}.
    """
    show_context(
        session_id,
        context_id,
        sessions_folder(context_dir),
        json=json,
        pager=pager,
        full=full,
        offset=offset,
        length=length,
    )


@app.command("stats")
@guarded
def stats(context_dir: ContextDirOption = None, db: DbOption = None, json: JsonOption = False) -> None:
    """Totals of the context folder by session state; with --db, of every agent's memory too."""
    sessions = list_sessions(sessions_folder(context_dir))
    by_state: dict[str, dict[str, int]] = {}
    for s in sessions:
        entry = by_state.setdefault(s.state, {"sessions": 0, "contexts": 0, "bytes": 0, "tokens": 0})
        for key, value in (("sessions", 1), ("contexts", s.contexts), ("bytes", s.size), ("tokens", s.tokens)):
            entry[key] += value
    memory: list[Any] = []
    if db is not None:
        with open_memory(db) as store:
            memory = store.agents()
    if json:
        emit_json({"sessions": by_state, "memory": memory})
        return
    rows = [[state, *totals.values()] for state, totals in sorted(by_state.items())]
    out.print(table("sessions", ["state", "sessions", "contexts", "bytes", "tokens"], rows))
    if db is not None:
        rows = [
            [
                m.agent_id,
                m.hot_count,
                m.warm_count,
                m.cold_count,
                m.archived_count,
                m.hot_tokens + m.warm_tokens + m.cold_tokens,
            ]
            for m in memory
        ]
        out.print(table("memory", ["agent", "HOT", "WARM", "COLD", "archived", "tokens (unarchived)"], rows))


def _seconds(text: str) -> float:
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"--older-than {text!r:.40} is not a duration; write seconds or e.g. 90s, 30m, 2h, 7d")
    return float(match[1]) * _UNITS[match[2]]


@app.command("gc")
@guarded
def gc(
    context_dir: ContextDirOption = None,
    older_than: Annotated[
        str, typer.Option(help="Spare folders changed more recently than this (seconds, or 30m, 2h, 7d).")
    ] = "1h",
    include_kept: Annotated[bool, typer.Option(help="Remove sessions kept with keep=True too.")] = False,
    dry_run: Annotated[bool, typer.Option(help="List what would be removed; remove nothing.")] = False,
    json: JsonOption = False,
) -> None:
    """Remove the folders of sessions whose process died (only files toolctx wrote are deleted)."""
    removed = toolctx.gc(
        sessions_folder(context_dir), older_than=_seconds(older_than), include_kept=include_kept, dry_run=dry_run
    )
    if json:
        emit_json({"dry_run": dry_run, "removed": [str(p) for p in removed]})
        return
    verb = "would remove" if dry_run else "removed"
    for path in removed:
        out.print(plain(f"{verb} {path}"))
    out.print(f"{verb} {len(removed)} session folder{'' if len(removed) == 1 else 's'}")


@app.command("serve")
@guarded
def serve(
    db: DbOption = None,
    context_dir: ContextDirOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="TOOLCTX_API_TOKEN",
            help="Token every request needs (required beyond loopback); open /?token=... once in a browser.",
            show_default=False,
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None, typer.Option(help="A Host name clients may use besides loopback names; repeat for more.")
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body accepted, in bytes; a larger one is refused with 413.")
    ] = DEFAULT_MAX_BODY_BYTES,
    item_type: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME:WEIGHT",
            help="An item type the store accepts besides TASK, PRD_SECTION, CODE, TEST_RESULT and ERROR, "
            "with its base weight in [0, 1] (or a built-in type's new weight); repeat for more.",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API and the live dashboard (http://127.0.0.1:8765/ by default)."""
    check_existing_memory(db)  # (a missing file is created; another application's database is refused)
    try:
        from toolctx.server import ServeOptions
        from toolctx.server import serve as serve_until_stopped
    except ImportError as exc:
        raise fail(f"serve needs FastAPI and uvicorn: pip install 'toolctx[cli,server]' ({exc})") from None
    options = ServeOptions.checked(
        db=db,
        context_dir=None if context_dir is None else Path(context_dir),
        host=host,
        port=port,
        token=token,
        allow_hosts=allow_host or [],
        max_body_bytes=max_body_bytes,
        item_types=item_type or [],
    )
    code = serve_until_stopped(options, announce=lambda text: out.print(plain(text, lines=True)))
    if code:
        raise typer.Exit(BAD_VALUE)

"""The ``toolctx`` command: kept sessions, tiered memory and the dashboard from a shell.

Install with ``pip install 'toolctx[cli]'`` (``toolctx[cli,server]`` for ``toolctx serve``).

=======================  ==============================================================
command                  what it does
=======================  ==============================================================
``toolctx ls [ID]``      kept sessions; with an id, the contexts that session stored
``toolctx show ID C``    one stored context, through a pager; a large one in parts
``toolctx stats``        totals of the context directory (and of a memory with --db)
``toolctx gc``           remove orphaned session folders (``--dry-run`` to look)
``toolctx memory ...``   agents, items by tier, checkpoints, flash save, restore, diff
``toolctx serve``        the HTTP API and the live dashboard
=======================  ==============================================================

Every command takes ``--json`` for scripts. Exit codes: 0 done, 1 failed, 2 a bad
value or usage (a database that is not a toolctx memory, a file where a folder is
expected), 3 nothing by that name (session, context, agent, checkpoint, folder, or a
memory database), 4 the memory database is busy or unreachable.

Stored text (arguments, results, errors, memory items) is printed with control
characters and direction overrides as escapes (``\\x1b``, ``\\u202e``), never as
markup; commands that look open the memory database read-only and create nothing.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Run the ``toolctx`` command (the console script's entry point)."""
    try:
        from toolctx.cli._app import app
    except ImportError as exc:  # pragma: no cover - exercised in an environment without Typer
        raise SystemExit(f"the toolctx command needs Typer and Rich: pip install 'toolctx[cli]' ({exc})") from None
    app()

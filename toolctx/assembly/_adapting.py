"""What the framework adapters of the assembler share: starting over after a failed ``prepare()``."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from toolctx._internal import internal_error
from toolctx.assembly._assembler import ContextAssembler
from toolctx.telemetry import events

__all__ = ["reset_after_failed_prepare"]


def reset_after_failed_prepare(
    assembler: ContextAssembler, mirrors: MutableMapping[int, Any], exc: Exception, last_try: bool
) -> None:
    """After a model call could not be assembled: forget the adapter's copy of the conversation and start over.

    For framework adapters that mirror a framework's messages into an assembler:
    ``mirrors`` maps ``id(assembler)`` to what the adapter has given it; that
    entry is dropped and the assembler's history cleared, so the next try
    mirrors the conversation again from nothing (another middleware or input
    filter may have filled the history first: one made per turn over the same
    assembler, say). On the ``last_try`` the failure ``exc`` is reported (logged
    and warned as a ToolctxWarning, never raised) and the adapter sends the model its input
    as it is: assembling is an optimisation, never the reason a model call fails.
    """
    mirrors.pop(id(assembler), None)
    try:
        assembler.clear_history()
    except Exception as cleared:
        internal_error("could not clear the assembler's history", cleared)
    if last_try:
        events.compaction_failed("could not assemble the model's input; sending it as it is", exc)

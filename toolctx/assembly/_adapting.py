"""What the framework adapters of the assembler share: starting over after a failure."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from toolctx._internal import internal_error
from toolctx.assembly._assembler import ContextAssembler

__all__ = ["start_over"]


def start_over(assembler: ContextAssembler, mirrors: MutableMapping[int, Any], exc: Exception, last_try: bool) -> None:
    """After a model call could not be assembled: rebuild the assembler's copy of the conversation from the start.

    Another middleware or input filter may have filled the assembler's history
    first (one made per turn over the same assembler, say), so the adapter tries
    once more from nothing. If that fails too (``last_try``), the model gets its
    input as it is: assembling is an optimisation, never the reason a model call
    fails.
    """
    mirrors.pop(id(assembler), None)
    try:
        assembler.clear_history()
    except Exception as cleared:
        internal_error("could not clear the assembler's history", cleared)
    if last_try:
        internal_error("could not assemble the model's input; sending it as it is", exc)

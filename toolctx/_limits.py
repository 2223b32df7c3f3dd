"""Tools' own output limits: what ``@persist_context(max_output_tokens=...)`` declares, found by tool name.

The compaction policy knows tools by name (``exclude_tools``, ``tool_limits``),
and so does every host it runs in: a framework's tool call carries the name, not
the function. A decorated tool's declared limit is therefore kept here under the
name the decorator records, for as long as the tool exists (held weakly: a tool
that is garbage collected takes its limit with it), and the settings look it up
in :data:`DECLARED` with one dict read per call.
"""

from __future__ import annotations

import sys
import weakref
from typing import Literal, TypeAlias

__all__ = [
    "ALWAYS",
    "DECLARED",
    "NEVER",
    "DeclaredLimit",
    "OutputLimit",
    "declare_limit",
    "limit_tokens",
]

OutputLimit: TypeAlias = int | Literal["never", "always"]
"""A tool's output limit: tokens over which its output gets a stand-in, ``"never"`` or ``"always"``."""

NEVER = sys.maxsize
"""``"never"`` in tokens: no output is over it."""

ALWAYS = 0
"""``"always"`` in tokens: every output is over it (and gets a stand-in when that is shorter)."""


def limit_tokens(limit: OutputLimit) -> int:
    """A checked limit (``toolctx._checks.output_limit``) in tokens: :data:`NEVER`, :data:`ALWAYS` or itself."""
    if limit == "never":
        return NEVER
    if limit == "always":
        return ALWAYS
    return limit


class DeclaredLimit:
    """A decorated tool's output limit, registered under its name while the tool holds this object."""

    __slots__ = ("__weakref__", "limit", "tokens")

    def __init__(self, limit: OutputLimit) -> None:
        self.limit = limit
        self.tokens = limit_tokens(limit)


DECLARED: dict[str, int] = {}
"""Tool name -> the limit in tokens its live decorated tool declared (read on every tool call: a plain dict)."""

_owners: dict[str, weakref.ref[DeclaredLimit]] = {}  # (which declaration DECLARED holds, for each name)


def declare_limit(tool: str, limit: OutputLimit) -> DeclaredLimit:
    """Register ``limit`` for the tool named ``tool`` (the last declared wins); the tool keeps what this returns."""
    declared = DeclaredLimit(limit)

    def gone(ref: weakref.ref[DeclaredLimit]) -> None:
        if _owners.get(tool) is ref:  # (not a limit declared since under the same name)
            DECLARED.pop(tool, None)
            _owners.pop(tool, None)

    _owners[tool] = weakref.ref(declared, gone)
    DECLARED[tool] = declared.tokens
    return declared

from __future__ import annotations

from typing import Any

from toolctx import ContextPointer, ContextSession

BIG = "x" * 40_000  # over the 32 KiB default threshold


def held_in_memory(s: ContextSession) -> int:
    """Bytes of argument and result JSON the session's records hold right now."""
    return sum(len(r.call.args_json) + len(r.payload[0]) for r in s._saver.records.values() if r.payload)


def save(s: ContextSession, tool: str = "search", result: Any = "r", **args: Any) -> ContextPointer:
    return s.save_context(tool, args or {"q": tool}, result)

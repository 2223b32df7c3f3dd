"""Shared helpers for the assembler's tests: a session, a character counter, a recount of rendered output."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import toolctx
from toolctx.assembly import ContextAssembler, HistoryMessage
from toolctx.tokens import count_request

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class CharCounter:
    """One token per character: exact, and any change of text changes the count."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


@pytest.fixture
def s(tmp_path: Path) -> Iterator[toolctx.ContextSession]:
    with toolctx.session(tmp_path / "ctx") as opened:
        yield opened


def recount(messages: list[dict[str, Any]], tools: list[dict[str, Any]], counter: Any) -> int:
    """The tokens of rendered OpenAI messages and tools, counted from the rendered output alone."""
    return count_request(messages, tools=tools, counter=counter)


def orphans(messages: list[dict[str, Any]]) -> int:
    """Tool results without a call right before, and calls without exactly one result right after (OpenAI's rules)."""
    errors = 0
    open_calls: list[str] = []
    made: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            if open_calls and m["tool_call_id"] == open_calls[0]:
                open_calls.pop(0)
            elif m["tool_call_id"] in open_calls:
                open_calls.remove(m["tool_call_id"])
            else:
                errors += 1
            continue
        errors += len(open_calls)
        open_calls = []
        for call in m.get("tool_calls") or ():
            errors += call["id"] in made
            made.add(call["id"])
            open_calls.append(call["id"])
    return errors + len(open_calls)


def tool_turn(ctx: ContextAssembler, n: int, output: str, args: dict[str, Any] | None = None) -> list[HistoryMessage]:
    """An assistant message making one call, and its result."""
    call = ctx.add_message(
        "assistant", f"step {n}", tool_calls=[{"id": f"c{n}", "name": "shell", "arguments": args or {"cmd": f"ls {n}"}}]
    )
    return [call, ctx.add_tool_result(f"c{n}", output)]

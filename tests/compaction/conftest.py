"""A tiny message format for testing the compaction policy without a framework."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from toolctx.compaction import Item, ToolCall
from toolctx.tokens import estimate_tokens

Message = dict[str, Any]


class DictAdapter:
    """Messages are dicts: {"id", "role": "user"|"assistant"|"tool", "text", "calls", "call_id", "name", "error"}."""

    def fingerprint(self, item: Message) -> Hashable:
        return (item["role"], item["id"])

    def describe(self, item: Message) -> Item:
        text = item.get("text", "")
        if item["role"] == "tool":
            return Item(
                estimate_tokens(text),
                result_of=item["call_id"],
                tool=item.get("name", ""),
                text=text,
                is_error=item.get("error", False),
            )
        if item["role"] == "assistant":
            calls = tuple(ToolCall(c["id"], c["name"], c["args"]) for c in item.get("calls", ()))
            size = sum(estimate_tokens(str(c.args)) for c in calls)
            return Item(estimate_tokens(text) + size, calls=calls, text=text)
        return Item(estimate_tokens(text), question=text)

    def apply(self, item: Message, text: str | None, args: Mapping[str, Mapping[str, Any]]) -> Message:
        if item["role"] == "tool" and text is not None:
            return {**item, "text": text}
        if item["role"] == "assistant":
            if args:
                item = {
                    **item,
                    "calls": [{**c, "args": dict(args[c["id"]])} if c["id"] in args else c for c in item["calls"]],
                }
            if text is not None:
                item = {**item, "text": text}
        return item


def user(n: int, text: str) -> Message:
    return {"id": f"u{n}", "role": "user", "text": text}


def asks(n: int, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> Message:
    return {
        "id": f"a{n}",
        "role": "assistant",
        "text": text,
        "calls": [{"id": i, "name": name, "args": a} for i, name, a in calls],
    }


def says(n: int, text: str) -> Message:
    return {"id": f"a{n}", "role": "assistant", "text": text, "calls": []}


def answer(call_id: str, text: str, name: str = "shell", error: bool = False) -> Message:
    return {"id": f"t{call_id}", "role": "tool", "call_id": call_id, "name": name, "text": text, "error": error}

"""PrefixSize: the estimated system prompt and tool definitions a model call sends before its messages."""

from __future__ import annotations

import pytest

from toolctx import ToolctxWarning
from toolctx.compaction import PrefixSize
from toolctx.tokens import estimate_tokens

SYSTEM = "You help customers change their flights. " * 40


class Tool:
    def __init__(self, name: str, schema: str) -> None:
        self.name, self.schema = name, schema


def test_the_size_is_the_system_prompt_and_every_tool() -> None:
    tools = [Tool("search", '{"query": "string"}' * 20), Tool("book", '{"flight": "string"}' * 5)]
    prefix: PrefixSize[str, Tool] = PrefixSize(str, lambda t: t.name + t.schema)
    expected = estimate_tokens(SYSTEM) + sum(estimate_tokens(t.name + t.schema) for t in tools)
    assert prefix(SYSTEM, tools) == expected
    assert prefix(SYSTEM, tools) == expected  # the same again from what it remembers
    assert prefix(None, []) == 0
    assert prefix(None, tools[:1]) == estimate_tokens(tools[0].name + tools[0].schema)


def test_each_tool_is_read_once_and_a_new_or_changed_set_is_read_again() -> None:
    read: list[str] = []

    def text(tool: Tool) -> str:
        read.append(tool.name)
        return tool.name + tool.schema

    search, book = Tool("search", "{}" * 50), Tool("book", "{}" * 10)
    prefix: PrefixSize[str, Tool] = PrefixSize(str, text)
    for _ in range(5):
        prefix(SYSTEM, [search, book])
    assert read == ["search", "book"]
    other = Tool("search", "{}" * 400)  # a new tool object under the same name: read, and counted as itself
    assert prefix(SYSTEM, [other, book]) == estimate_tokens(SYSTEM) + estimate_tokens("search" + "{}" * 400) + (
        estimate_tokens("book" + "{}" * 10)
    )
    assert read == ["search", "book", "search"]
    # instructions made per call are new strings with the same text: counted the same
    assert prefix("".join([SYSTEM]), [search]) == estimate_tokens(SYSTEM) + estimate_tokens("search" + "{}" * 50)


def test_a_part_that_cannot_be_read_counts_as_empty() -> None:
    def text(tool: Tool) -> str:
        if tool.name == "odd":
            raise TypeError("no schema")
        return tool.name

    prefix: PrefixSize[str, Tool] = PrefixSize(str, text)
    with pytest.warns(ToolctxWarning, match="estimate its size"):
        assert prefix(SYSTEM, [Tool("odd", ""), Tool("fine", "")]) == estimate_tokens(SYSTEM) + estimate_tokens("fine")

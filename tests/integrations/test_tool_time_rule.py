"""One tool-time rule for every host: the same output gets the same treatment in each, and one read_context."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agents import FunctionTool, function_tool
from agents.tool_context import ToolContext
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from toolctx_langchain import persist_tool
from toolctx_langchain import read_context_tool as langchain_read_context
from toolctx_openai_agents import persist_tools
from toolctx_openai_agents import read_context_tool as agents_read_context

import toolctx
from toolctx import session
from toolctx.assembly import ToolCallSpec, ToolOutputPlugin
from toolctx.compaction import (
    READ_CONTEXT_DEFINITION,
    READ_CONTEXT_DESCRIPTION,
    READ_CONTEXT_PARAMETERS,
    CompactionSettings,
    at_tool_time,
    handle_of,
    is_stand_in,
    notes,
    read_context,
)

BIG = "".join(f"row {i}: sensor {i % 13} read {i * 7 % 1000} units\n" for i in range(2_000))  # ~70 KB
SMALL = "3 matches"


def test_read_context_is_defined_once_and_every_host_sends_that_definition() -> None:
    assert READ_CONTEXT_DEFINITION["function"]["description"] == READ_CONTEXT_DESCRIPTION
    assert READ_CONTEXT_DEFINITION["function"]["parameters"] == READ_CONTEXT_PARAMETERS
    assert convert_to_openai_tool(langchain_read_context()) == READ_CONTEXT_DEFINITION
    sdk = agents_read_context()
    assert (sdk.name, sdk.description, sdk.params_json_schema) == (
        "read_context",
        READ_CONTEXT_DESCRIPTION,
        READ_CONTEXT_PARAMETERS,
    )
    plugin = ToolOutputPlugin()
    plugin._offer = True  # (what a stand-in in the history does)
    assert plugin.tool_definitions() == [READ_CONTEXT_DEFINITION]


def test_settings_or_options_not_both() -> None:
    chosen = CompactionSettings(max_output_tokens=200)
    assert CompactionSettings.of(chosen) is chosen
    assert CompactionSettings.of(max_output_tokens=300).max_output_tokens == 300
    with pytest.raises(TypeError, match=r"not both \(got \['keep'\]\)"):
        CompactionSettings.of(chosen, keep=2)
    with pytest.raises(TypeError, match=r"must be a toolctx\.compaction\.CompactionSettings"):
        CompactionSettings.of({"keep": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not both"):
        persist_tool(tool(lambda: "x", description="x"), chosen, keep=2)  # type: ignore[arg-type]


def shown_by_every_host(context_dir: Path, output: str) -> dict[str, str]:
    """What the model is shown of one output of tool ``probe`` through each host, each in its own session."""
    shown: dict[str, str] = {}

    @tool
    def probe(query: str) -> str:
        """Probe the sensors."""
        return output

    with session(context_dir):
        shown["langchain persist_tool"] = persist_tool(probe).invoke({"query": "all"})

    async def sdk_probe(query: str) -> str:
        return output

    [wrapped] = persist_tools([function_tool(sdk_probe, name_override="probe")])
    assert isinstance(wrapped, FunctionTool)
    with session(context_dir):
        ctx = ToolContext(context=None, tool_name="probe", tool_call_id="c1", tool_arguments='{"query": "all"}')
        shown["agents persist_tools"] = asyncio.run(wrapped.on_invoke_tool(ctx, '{"query": "all"}'))

    with session(context_dir) as s:
        plugin = ToolOutputPlugin(session=s)
        shown["assembler plugin"] = plugin.record(
            ToolCallSpec(id="c1", name="probe", arguments={"query": "all"}), output
        )[0]

    with session(context_dir) as s:
        shown["at_tool_time"] = (
            at_tool_time(CompactionSettings(), s, "probe", {"query": "all"}, output, output).shown or output
        )
    return shown


def test_a_small_output_is_shown_whole_by_every_host(context_dir: Path) -> None:
    assert set(shown_by_every_host(context_dir, SMALL).values()) == {SMALL}


def test_a_big_output_is_the_same_stand_in_in_every_host_and_reads_back(context_dir: Path) -> None:
    shown = shown_by_every_host(context_dir, BIG)
    assert all(is_stand_in(text) for text in shown.values()), shown
    # the same stand-in but for its handle (each host stored the call in its own session)
    without_handles = {text.replace(handle_of(text) or "", "ctx:<id>") for text in shown.values()}
    assert len(without_handles) == 1
    with session(context_dir) as s:
        result = at_tool_time(CompactionSettings(), s, "probe", {}, BIG, BIG)
        assert result.saved is not None
        assert result.shown is not None
        assert handle_of(result.shown) == result.saved.id
        assert notes(s).offer_read_context  # the model is offered read_context with its first stand-in
        assert read_context(s, result.saved.handle, limit=len(BIG)).endswith(BIG)


def test_an_error_is_stored_as_an_error_and_shown_whole(context_dir: Path) -> None:
    with session(context_dir) as s:
        result = at_tool_time(CompactionSettings(), s, "probe", {}, BIG, BIG, error=RuntimeError("sensor offline"))
        assert result.shown is None  # shown whole
        assert result.saved is not None
        assert result.saved.is_error
        [context] = s.load_contexts([result.saved.id])
        assert context.error is not None
        assert "sensor offline" in context.error.message


def test_a_small_output_is_stored_by_every_host_even_when_queued(context_dir: Path) -> None:
    """Queued calls (persist_tool queues too now) are stored as soon as anything reads the session."""

    @tool
    def probe(query: str) -> str:
        """Probe the sensors."""
        return SMALL

    with session(context_dir) as s:
        persisted = persist_tool(probe)
        persisted.invoke({"query": "a"})
        assert len(s._saver._later) == 1  # queued, as the middleware and the Agents SDK's tools queue theirs
        persisted.invoke({"query": "b"})
        stored = s.load_contexts(s.get_all_pointers())
    assert [(c.tool_name, c.args, c.result) for c in stored] == [
        ("probe", {"query": "a"}, SMALL),
        ("probe", {"query": "b"}, SMALL),
    ]


def test_the_sdk_read_context_reads_back_and_answers_bad_arguments_in_words(context_dir: Path) -> None:
    sdk = agents_read_context()
    with session(context_dir) as s:
        saved = s.record_call("probe", {}, BIG)
        ctx = ToolContext(context=None, tool_name="read_context", tool_call_id="r1", tool_arguments="")
        text = asyncio.run(sdk.on_invoke_tool(ctx, json.dumps({"id": saved.handle, "limit": 50})))
        assert text.startswith(f"[{saved.handle} characters 0-50 of {len(BIG):,}.")
        assert asyncio.run(sdk.on_invoke_tool(ctx, json.dumps({"id": saved.handle, "offset": "x"}))).startswith(
            "offset must be a whole number"
        )
        found = asyncio.run(sdk.on_invoke_tool(ctx, json.dumps({"id": saved.handle, "search": "row 1234:"})))
        assert found.partition("\n")[2] == "\n".join(
            f"{n + 1}{'-:'[n == 1234]}{BIG.splitlines()[n]}" for n in range(1232, 1237)
        )
        assert "read_context needs the id" in asyncio.run(sdk.on_invoke_tool(ctx, "{}"))


def test_the_langchain_read_context_answers_bad_arguments_in_words(context_dir: Path) -> None:
    """The shared JSON schema reaches the function unvalidated: a bad call must not end the agent's run."""
    read = langchain_read_context()
    with session(context_dir) as s:
        saved = s.record_call("probe", {}, BIG)
        assert read.invoke({"id": saved.handle, "limit": 50}).startswith(f"[{saved.handle} characters 0-50 of")
        assert "read_context needs the id" in read.invoke({})
        assert read.invoke({"id": saved.handle, "offset": "x"}).startswith("offset must be a whole number")
        assert read.invoke({"ref": saved.handle}) == (
            "read_context takes id, offset, limit, part, lines, search, regex, context, path; got ['ref']."
        )
        assert (
            read.invoke({"id": saved.handle, "search": "x", "regex": "yes"})
            == "regex must be true or false, got 'yes'."
        )
        lines = read.invoke({"id": saved.handle, "lines": "10-12"})
        assert lines.partition("\n")[2] == "".join(BIG.splitlines(keepends=True)[9:12])


def test_at_tool_time_never_raises_into_the_tool_call(context_dir: Path) -> None:
    with session(context_dir) as s:
        odd = ["not", "text"]  # (not a str: a host's mistake)
        with pytest.warns(toolctx.ToolctxWarning, match="could not (tell how to show|make a stand-in)"):
            result = at_tool_time(CompactionSettings(), s, "probe", {}, odd, odd)  # type: ignore[arg-type]
        assert result.shown is None  # the model gets the output as it is
        assert result.saved is not None  # and the call is stored

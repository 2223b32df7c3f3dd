"""Handles as arguments in the real agent loops: a file read in one turn is written back by its handle later."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import persist_tools, record_tool_errors

from tests.integrations.test_langchain import call, chat
from toolctx import persist_context, session

# Tabs, accents, trailing spaces, CRLF line ends and no newline at the end: what a copy by value gets wrong.
ORIGINAL = "".join(f"{i:04d}\tcafé ünïcode «line» {i}  \r\n" for i in range(1, 1201)) + "the end, no newline"
SECRET = "config:\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n" + "padding line\n" * 2000
HANDLE = re.compile(r"ctx:[0-9a-z]+")


def exact(path: Path) -> str:
    """A file's text as it is on disk (no newline translation)."""
    with path.open(encoding="utf-8", newline="") as file:
        return file.read()


def file_tools(root: Path, *, decorated: bool = False) -> list[BaseTool]:
    """``read_file`` and ``write_file`` over ``root`` (byte-exact: no newline translation)."""

    def read_file(path: str) -> str:
        """Read a text file."""
        return exact(root / path)

    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        (root / path).write_text(content, encoding="utf-8", newline="")
        return f"wrote {len(content)} characters to {path}"

    if decorated:
        write_file = persist_context(by_reference=("content",))(write_file)
    return [tool(read_file), tool(write_file)]


def handle_of_read(messages: list[BaseMessage]) -> str:
    """The handle the model was shown for the read_file output (its stand-in, or a later marker)."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == "read_file":
            found = HANDLE.search(str(message.content))
            assert found, message.content
            return found.group(0)
    raise AssertionError("no read_file result in the conversation")


def last_tool_message(messages: list[BaseMessage]) -> ToolMessage:
    return [m for m in messages if isinstance(m, ToolMessage)][-1]


class Turns:
    """An agent with a checkpointer, run a turn at a time on a thread."""

    def __init__(self, root: Path, middleware: ToolContextMiddleware, *steps: Any, decorated: bool = False) -> None:
        self.model = chat(*steps)
        self.agent = create_agent(
            self.model, file_tools(root, decorated=decorated), middleware=[middleware], checkpointer=InMemorySaver()
        )

    def turn(self, text: str, thread: str = "t1", use_async: bool = False) -> dict[str, Any]:
        payload = {"messages": [HumanMessage(text)]}
        config: Any = {"configurable": {"thread_id": thread}}
        if use_async:
            return asyncio.run(self.agent.ainvoke(payload, config))  # type: ignore[no-any-return]
        return self.agent.invoke(payload, config)  # type: ignore[no-any-return]


def write_by_handle(path: str, suffix: str = "") -> Callable[[list[BaseMessage]], AIMessage]:
    return lambda messages: call("write_file", "w1", path=path, content=handle_of_read(messages) + suffix)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_langchain_a_file_read_in_turn_one_is_written_back_by_handle_in_turn_three(
    tmp_path: Path, context_dir: Path, use_async: bool
) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    middleware = ToolContextMiddleware(max_output_tokens=500, by_reference={"write_file": ["content"]})
    turns = Turns(
        tmp_path,
        middleware,
        call("read_file", "r1", path="source.txt"),
        AIMessage("I have read it."),
        AIMessage("Noted."),
        write_by_handle("copy.txt"),
        AIMessage("Copied."),
    )
    with session(context_dir) as s:
        turns.turn("Read source.txt", use_async=use_async)
        turns.turn("Thanks.", use_async=use_async)
        result = turns.turn("Write it back to copy.txt", use_async=use_async)
        [write] = [p for p in s.get_all_pointers() if p.tool_name == "write_file"]
        [stored] = s.load_contexts([write])

    assert exact(tmp_path / "copy.txt") == ORIGINAL
    assert result["messages"][-1].content == "Copied."
    shown = last_tool_message(result["messages"])
    assert shown.status != "error"
    assert shown.content == f"wrote {len(ORIGINAL)} characters to copy.txt"
    # The model wrote the handle, not the file; the call is stored with the handle, and says so.
    handle = HANDLE.fullmatch(stored.args["content"])
    assert handle is not None
    assert stored.args == {"path": "copy.txt", "content": handle.group(0)}
    assert stored.notes == [f"arguments: content passed by reference: {handle.group(0)}"]
    emitted = next(
        m for m in result["messages"] if isinstance(m, AIMessage) and m.tool_calls and m.tool_calls[0]["id"] == "w1"
    )
    assert emitted.tool_calls[0]["args"]["content"] == handle.group(0)


def test_langchain_lines_of_a_stored_output_are_passed_exactly(tmp_path: Path, context_dir: Path) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    middleware = ToolContextMiddleware(max_output_tokens=500, by_reference={"write_file": True})
    turns = Turns(
        tmp_path,
        middleware,
        call("read_file", "r1", path="source.txt"),
        write_by_handle("part.txt", "#lines=10-40"),
        AIMessage("Done."),
    )
    with session(context_dir):
        turns.turn("Copy lines 10 to 40 of source.txt to part.txt")
    assert exact(tmp_path / "part.txt") == "".join(ORIGINAL.splitlines(keepends=True)[9:40])


@pytest.mark.parametrize("decorated", [False, True], ids=["middleware-setting", "decorated-tool"])
def test_langchain_another_threads_handle_is_refused_as_the_tools_error(
    tmp_path: Path, context_dir: Path, decorated: bool
) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    shown: dict[str, str] = {}

    def remember(messages: list[BaseMessage]) -> AIMessage:
        shown["handle"] = handle_of_read(messages)
        return AIMessage("Read.")

    middleware = ToolContextMiddleware(
        max_output_tokens=500, by_reference=None if decorated else {"write_file": ["content"]}
    )
    turns = Turns(
        tmp_path,
        middleware,
        call("read_file", "r1", path="source.txt"),
        remember,
        lambda messages: call("write_file", "w1", path="stolen.txt", content=shown["handle"]),
        AIMessage("I could not."),
        decorated=decorated,
    )
    with session(context_dir) as s:  # (one session for both threads: the thread is the conversation)
        turns.turn("Read source.txt", thread="alice")
        result = turns.turn("Write alice's file", thread="mallory")
        [write] = [p for p in s.get_all_pointers() if p.tool_name == "write_file" and p.task_id == "mallory"]
    refusal = last_tool_message(result["messages"])
    assert refusal.status == "error"
    assert f"no stored output {shown['handle']} in this conversation" in str(refusal.content)
    assert result["messages"][-1].content == "I could not."  # (the loop went on)
    assert not (tmp_path / "stolen.txt").exists()
    assert write.is_error


def test_langchain_a_redacted_copys_handle_is_refused_and_the_file_is_not_written(
    tmp_path: Path, context_dir: Path
) -> None:
    (tmp_path / "secrets.env").write_text(SECRET, encoding="utf-8")
    middleware = ToolContextMiddleware(max_output_tokens=500, by_reference={"write_file": ["content"]})
    turns = Turns(
        tmp_path,
        middleware,
        call("read_file", "r1", path="secrets.env"),
        write_by_handle("backup.env"),
        AIMessage("I will paste it instead."),
    )
    with session(context_dir):
        result = turns.turn("Back up secrets.env")
    refusal = last_tool_message(result["messages"])
    assert refusal.status == "error"
    assert "secrets redacted" in str(refusal.content)
    assert "Pass the value itself" in str(refusal.content)
    assert not (tmp_path / "backup.env").exists()


def test_langchain_a_string_starting_with_ctx_passes_unchanged_where_not_opted_in(
    tmp_path: Path, context_dir: Path
) -> None:
    turns = Turns(
        tmp_path,
        ToolContextMiddleware(),
        call("write_file", "w1", path="note.txt", content="ctx:abcdefghij"),
        AIMessage("Done."),
    )
    with session(context_dir):
        turns.turn("Write the note")
    assert (tmp_path / "note.txt").read_text() == "ctx:abcdefghij"


# -- the OpenAI Agents SDK ---------------------------------------------------------------------------------------


def sdk_tools(root: Path) -> list[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a text file."""
        return exact(root / path)

    @function_tool
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        (root / path).write_text(content, encoding="utf-8", newline="")
        return f"wrote {len(content)} characters to {path}"

    return [read_file, write_file]


def sdk_handle(call: Any) -> str:
    """The handle of the read_file output in the model's input (the history carried from turn to turn)."""
    for item in call.input:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            found = HANDLE.search(str(item.get("output")))
            if found:
                return found.group(0)
    raise AssertionError("no handle in the model's input")


def sdk_outputs(call: Any) -> list[str]:
    return [str(i["output"]) for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]


def sdk_turns(agent: Agent[Any], texts: list[str], group: str, **options: Any) -> list[Any]:
    """Run ``texts`` as turns of one conversation, each carrying the history before it; the history after."""
    items: list[Any] = []
    for text in texts:
        config = RunConfig(tracing_disabled=True, group_id=group, **options)
        result = asyncio.run(Runner.run(agent, [*items, {"role": "user", "content": text}], run_config=config))
        items = result.to_input_list()
    return items


def test_agents_sdk_a_file_read_in_turn_one_is_written_back_by_handle_in_turn_three(
    tmp_path: Path, context_dir: Path
) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "source.txt"}, call_id="r1")],
            [assistant_message("I have read it.")],
            [assistant_message("Noted.")],
            ModelStep.respond(
                lambda call: [
                    function_call("write_file", {"path": "copy.txt", "content": sdk_handle(call)}, call_id="w1")
                ]
            ),
            ModelStep.respond(
                lambda call: [
                    function_call(
                        "write_file", {"path": "part.txt", "content": sdk_handle(call) + "#lines=10-40"}, call_id="w2"
                    )
                ]
            ),
            [assistant_message("Copied.")],
        ]
    )
    tools = persist_tools(sdk_tools(tmp_path), max_output_tokens=500, by_reference={"write_file": ["content"]})
    agent = Agent(name="editor", model=model, tools=tools)
    with session(context_dir) as s:
        sdk_turns(agent, ["Read source.txt", "Thanks.", "Write it back to copy.txt"], "conv-1")
        writes = [p for p in s.get_all_pointers() if p.tool_name == "write_file"]
        stored = s.load_contexts(writes)
    assert exact(tmp_path / "copy.txt") == ORIGINAL
    assert exact(tmp_path / "part.txt") == "".join(ORIGINAL.splitlines(keepends=True)[9:40])
    assert sdk_outputs(model.calls[-1])[-2:] == [
        f"wrote {len(ORIGINAL)} characters to copy.txt",
        f"wrote {len(''.join(ORIGINAL.splitlines(keepends=True)[9:40]))} characters to part.txt",
    ]
    handle = stored[0].args["content"]
    assert HANDLE.fullmatch(handle)
    assert stored[0].notes == [f"arguments: content passed by reference: {handle}"]
    assert stored[1].args["content"] == f"{handle}#lines=10-40"


def test_agents_sdk_another_conversations_handle_and_a_redacted_copys_are_refused(
    tmp_path: Path, context_dir: Path
) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    (tmp_path / "secrets.env").write_text(SECRET, encoding="utf-8")
    shown: dict[str, str] = {}

    def remember(call: Any) -> list[Any]:
        shown["handle"] = sdk_handle(call)
        return [assistant_message("Read.")]

    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "source.txt"}, call_id="r1")],
            ModelStep.respond(remember),
            ModelStep.respond(
                lambda call: [
                    function_call("write_file", {"path": "stolen.txt", "content": shown["handle"]}, call_id="w1")
                ]
            ),
            [assistant_message("I could not.")],
            [function_call("read_file", {"path": "secrets.env"}, call_id="r2")],
            ModelStep.respond(
                lambda call: [
                    function_call("write_file", {"path": "backup.env", "content": sdk_handle(call)}, call_id="w2")
                ]
            ),
            [assistant_message("I will paste it instead.")],
        ]
    )
    tools = persist_tools(sdk_tools(tmp_path), max_output_tokens=500, by_reference={"write_file": True})
    agent = Agent(name="editor", model=model, tools=tools)
    with session(context_dir) as s:
        sdk_turns(agent, ["Read source.txt"], "alice")
        sdk_turns(agent, ["Write alice's file"], "mallory")
        sdk_turns(agent, ["Back up secrets.env"], "bob")
        [refused] = [p for p in s.get_all_pointers() if p.tool_name == "write_file" and p.task_id == "mallory"]
        [stored] = s.load_contexts([refused])
    assert refused.is_error
    assert stored.error is not None
    assert stored.error.type == "HandleError"
    assert stored.result == str(stored.error.message)
    foreign = sdk_outputs(model.calls[3])[-1]
    assert f"no stored output {shown['handle']} in this conversation" in foreign
    redacted = sdk_outputs(model.calls[6])[-1]
    assert "secrets redacted" in redacted
    assert "Pass the value itself" in redacted
    assert not (tmp_path / "stolen.txt").exists()
    assert not (tmp_path / "backup.env").exists()


def test_agents_sdk_a_decorated_tool_resolves_its_own_handles_within_the_conversation(
    tmp_path: Path, context_dir: Path
) -> None:
    (tmp_path / "source.txt").write_text(ORIGINAL, encoding="utf-8", newline="")
    read_file = sdk_tools(tmp_path)[0]

    @function_tool
    @persist_context(by_reference=("content",))
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        (tmp_path / path).write_text(content, encoding="utf-8", newline="")
        return "written"

    shown: dict[str, str] = {}

    def remember(call: Any) -> list[Any]:
        shown["handle"] = sdk_handle(call)
        return [function_call("write_file", {"path": "copy.txt", "content": shown["handle"]}, call_id="w1")]

    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "source.txt"}, call_id="r1")],
            ModelStep.respond(remember),
            [assistant_message("Copied.")],
            ModelStep.respond(
                lambda call: [
                    function_call("write_file", {"path": "stolen.txt", "content": shown["handle"]}, call_id="w2")
                ]
            ),
            [assistant_message("I could not.")],
        ]
    )
    agent = Agent(name="editor", model=model, tools=persist_tools([read_file, write_file], max_output_tokens=500))
    with session(context_dir):
        sdk_turns(agent, ["Copy source.txt"], "alice", tool_error_formatter=record_tool_errors())
        sdk_turns(agent, ["Copy alice's file"], "mallory", tool_error_formatter=record_tool_errors())
    assert exact(tmp_path / "copy.txt") == ORIGINAL
    assert f"no stored output {shown['handle']} in this conversation" in sdk_outputs(model.calls[4])[-1]
    assert not (tmp_path / "stolen.txt").exists()

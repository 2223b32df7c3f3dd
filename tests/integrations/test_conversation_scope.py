"""A ``Conversations`` session is one conversation's: the adapters read back every call it holds.

What the application stored in the conversation's session itself (an upload, saved
untagged), or an assembler under its own id, is read back by the model's
``read_context`` and resolved when the model passes its handle as an argument, as the
calls the middleware stored under the thread are.
"""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware

from tests.integrations.test_langchain import ScriptedChat
from toolctx import Conversations

UPLOAD = "quarter,revenue\n" + "".join(f"q{i},{i * 1000}\n" for i in range(1, 5))
received: dict[str, str] = {}


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    received[path] = content
    return "written"


def test_the_model_reads_and_passes_on_what_the_application_stored_in_the_conversation(tmp_path: Path) -> None:
    conversations = Conversations(tmp_path / "ctx")
    try:
        upload = conversations.get("t1").save_context("upload", {"name": "q.csv"}, UPLOAD).handle
        steps = [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "read_context", "args": {"id": upload}, "id": "r0"},
                    {"name": "write_file", "args": {"path": "q.csv", "content": upload}, "id": "w0"},
                ],
            ),
            AIMessage(content="done"),
        ]
        model = ScriptedChat(responses=[AIMessage(content="")], steps=steps, received=[])
        middleware = ToolContextMiddleware(session=conversations, by_reference={"write_file": ["content"]})
        agent = create_agent(model, [write_file], middleware=[middleware])
        out = agent.invoke({"messages": [HumanMessage("Save the upload.")]}, {"configurable": {"thread_id": "t1"}})
        [read] = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "read_context"]
        assert str(read.content).partition("\n")[2] == UPLOAD
        assert received["q.csv"] == UPLOAD
    finally:
        conversations.close()

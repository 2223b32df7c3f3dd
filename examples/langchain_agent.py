"""toolctx with a LangChain agent, offline: a big tool output, the stand-in, reading it back.

A scripted chat model stands in for an LLM so the example runs anywhere: it asks
for a sales report (a 50 KB output), reads part of it back through the
``read_context`` tool the middleware adds, and answers from what it read.

    python examples/langchain_agent.py      (needs: pip install 'toolctx[langchain]')
"""

from __future__ import annotations

import re
import tempfile
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware

import toolctx

REPORT = "".join(
    f"2026-{month:02d}: region {region}, revenue {1000 + 37 * region + month} k€\n"
    for region in range(120)
    for month in range(1, 13)
)


@tool
def sales_report(year: int) -> str:
    """The monthly sales report of a year, every region."""
    return REPORT


class ScriptedChat(FakeMessagesListChatModel):
    """Plays an LLM: each reply is computed from the conversation it is sent."""

    seen: list[list[BaseMessage]]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            reply = AIMessage(content="", tool_calls=[{"name": "sales_report", "args": {"year": 2026}, "id": "c1"}])
        elif len(results) == 1:
            handle = re.search(r"ctx:[0-9a-z]+", str(results[0].content)).group(0)  # type: ignore[union-attr]
            reply = AIMessage(
                content="",
                tool_calls=[{"name": "read_context", "args": {"id": handle, "offset": 0, "limit": 400}, "id": "c2"}],
            )
        else:
            figure = re.search(r"2026-01: region 0, revenue (\d+)", str(results[-1].content))
            reply = AIMessage(content=f"Region 0 made {figure.group(1) if figure else '?'} k€ in January 2026.")
        self.responses = [reply]
        self.i = 0
        return super()._generate(messages, stop, run_manager, **kwargs)


def main() -> None:
    model = ScriptedChat(responses=[AIMessage(content="")], seen=[])
    agent = create_agent(model, [sales_report], middleware=[ToolContextMiddleware(max_output_tokens=1000)])
    with tempfile.TemporaryDirectory(prefix="toolctx-langchain-") as context_dir:
        with toolctx.session(context_dir) as s:
            result = agent.invoke({"messages": [HumanMessage("How much did region 0 make in January?")]})
            [pointer] = s.get_all_pointers()
            print(f"sales_report returned {len(REPORT):,} characters; toolctx stored them as {pointer.handle}")
            print(f"  on disk: {pointer.filename}" if pointer.filepath else "  in memory")
            stand_in = next(m for m in model.seen[1] if isinstance(m, ToolMessage)).content
            print(f"\nWhat the model saw instead ({len(str(stand_in)):,} characters):\n")
            print("  " + str(stand_in)[:400].replace("\n", "\n  ") + "\n  ...")
            read_back = [m for m in model.seen[2] if isinstance(m, ToolMessage)][-1].content
            print("\nThe model called read_context and got:\n")
            print("  " + str(read_back)[:300].replace("\n", "\n  "))
            print(f"\nAnswer: {result['messages'][-1].content}")
            session_dir = s.session_dir
        print(f"\nSession ended: {session_dir} exists afterwards? {session_dir.exists()}")


if __name__ == "__main__":
    main()

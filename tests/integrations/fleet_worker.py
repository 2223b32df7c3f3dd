"""One worker process of the fleet tests: it serves any turn of any conversation it is handed.

A worker keeps its ``Conversations`` (and so the conversations it served) open between
turns, as a long-lived server process does; the conversation's outputs live in the
object store every worker reaches (``TOOLCTX_FLEET_STORE``), its history with the
client (LangChain, a thread id per conversation) or in a shared SQLite file (the
Agents SDK's session). Each turn: the tool returns a big output; from the second turn
on the model first reads back the handle turn 1 was shown.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

HANDLE = re.compile(r"ctx:[0-9a-z]+")
_conversations: Any = None


def big(conversation: str, turn: int) -> str:
    return "".join(f"{conversation} turn {turn} line {i}: figures\n" for i in range(1500))


def conversations() -> Any:
    global _conversations
    if _conversations is None:
        import toolctx

        _conversations = toolctx.Conversations(
            os.environ["TOOLCTX_FLEET_LOCAL"], store=os.environ["TOOLCTX_FLEET_STORE"]
        )
    return _conversations


def langchain_turn(conversation: str, turn: int, history: str) -> dict[str, Any]:
    """One turn through LangChain's real loop; the client's history comes in and goes back out as JSON."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_from_dict, messages_to_dict
    from langchain_core.tools import tool
    from toolctx_langchain import ToolContextMiddleware

    @tool
    def fetch(conversation: str, turn: int) -> str:
        """Fetch a report."""
        return big(conversation, turn)

    seen: list[list[Any]] = []

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            seen.append(list(messages))
            done = sum(isinstance(m, ToolMessage) for m in messages[len(earlier) :])
            step: AIMessage
            if done == 0:
                step = AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "fetch",
                            "args": {"conversation": conversation, "turn": turn},
                            "id": f"{conversation}-{turn}-f",
                        }
                    ],
                )
            elif done == 1 and turn > 1:
                first = next(
                    str(m.content) for m in messages if isinstance(m, ToolMessage) and HANDLE.search(str(m.content))
                )
                handle = HANDLE.search(first).group(0)  # type: ignore[union-attr]
                step = AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "read_context",
                            "args": {"id": handle, "limit": 10**6},
                            "id": f"{conversation}-{turn}-r",
                        }
                    ],
                )
            else:
                step = AIMessage("done")
            self.responses = [step]
            self.i = 0
            return super()._generate(messages, stop, run_manager, **kwargs)

    earlier = messages_from_dict(json.loads(history)) if history else []
    model = Scripted(responses=[AIMessage("")])
    agent = create_agent(model, [fetch], middleware=[ToolContextMiddleware(session=conversations())])
    state = agent.invoke(
        {"messages": [*earlier, HumanMessage(f"turn {turn}")]}, {"configurable": {"thread_id": conversation}}
    )
    new = state["messages"][len(earlier) :]
    tools = [m for m in new if isinstance(m, ToolMessage)]
    return {
        "history": json.dumps(messages_to_dict(state["messages"])),
        "pid": os.getpid(),
        "stood_in": HANDLE.search(str(tools[0].content)) is not None,
        "read_back": next((str(m.content) for m in tools if m.name == "read_context"), None),
        "inputs": [" ".join(str(m.content) for m in messages) for messages in seen],
    }


def sdk_turn(conversation: str, turn: int, history_db: str) -> dict[str, Any]:
    """One turn through the Agents SDK's real loop; the history in a SQLite session every worker opens."""
    from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
    from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

    @function_tool
    def fetch(conversation: str, turn: int) -> str:
        """Fetch a report."""
        return big(conversation, turn)

    def reads(data: Any) -> list[Any]:
        outputs = [
            str(i["output"]) for i in data.input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        handle = next(HANDLE.search(o).group(0) for o in outputs if HANDLE.search(o))  # type: ignore[union-attr]
        return [function_call("read_context", {"id": handle, "limit": 10**6}, call_id=f"{conversation}-{turn}-r")]

    steps: list[Any] = [
        [function_call("fetch", {"conversation": conversation, "turn": turn}, call_id=f"{conversation}-{turn}-f")]
    ]
    if turn > 1:
        steps.append(ModelStep.respond(reads))
    steps.append([assistant_message("done")])
    model = ScriptedModel(steps)
    agent = Agent(name="analyst", model=model, tools=[*persist_tools([fetch]), read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs())
    history = SQLiteSession(conversation, history_db)
    try:
        with conversations().open(history):
            result = asyncio.run(Runner.run(agent, f"turn {turn}", session=history, run_config=config))
    finally:
        history.close()
    items = [i.to_input_item() for i in result.new_items]
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    fetched = next(str(i["output"]) for i in outputs if str(i.get("call_id", "")).endswith("-f"))
    answer = next((str(i["output"]) for i in outputs if str(i.get("call_id", "")).endswith("-r")), None)
    return {
        "pid": os.getpid(),
        "stood_in": HANDLE.search(fetched) is not None,
        "read_back": answer,
        "inputs": [json.dumps(call.input, default=str) for call in model.calls],
    }

"""The same plan-executing loop on LangChain: create_agent's model input prepared by toolctx's context assembler.

``AssemblerMiddleware`` hands every model call of the agent to the assembler:
the plan rides along as a component, big tool outputs become restorable
stand-ins, and the conversation is compacted when it would not fit the budget.
The agent's own state keeps every message whole. Set ``MODEL`` (for example
``openai:gpt-4o-mini``, with its LangChain integration installed) to use a real
model; without it the example runs offline with a scripted chat model.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import AssemblerMiddleware

import toolctx
from toolctx.assembly import ContextAssembler, PlanPlugin, ToolOutputPlugin

LOG = "".join(
    f"2026-11-25 10:{i // 60:02d}:{i % 60:02d} worker-{i % 4} handled request {i} in {i % 97} ms\n" for i in range(600)
)


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return LOG if path.endswith(".log") else f"# {path}\nTIMEOUT_MS = 250\n"


class ScriptedChat(FakeMessagesListChatModel):
    """Answers like a model: one tool call per task, reading a stand-in back once, then a reply."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        task = next(
            str(m.content)
            for m in reversed(messages)
            if isinstance(m, HumanMessage) and str(m.content).startswith("Task")
        )
        turn = messages[[i for i, m in enumerate(messages) if m.content == task][-1] + 1 :]
        results = [m for m in turn if isinstance(m, ToolMessage)]
        if not results:
            path = "service.log" if "log" in task else "config.py"
            reply = AIMessage(
                content="", tool_calls=[{"name": "read_file", "args": {"path": path}, "id": f"call-{len(messages)}"}]
            )
        elif len(results) == 1 and str(results[0].content).startswith("[toolctx stand-in]"):
            handle = re.search(r"ctx:[0-9a-z]+", str(results[0].content)).group(0)  # type: ignore[union-attr]
            args = {"id": handle, "offset": 0, "limit": 60}
            reply = AIMessage(
                content="", tool_calls=[{"name": "read_context", "args": args, "id": f"call-{len(messages)}"}]
            )
        else:
            reply = AIMessage(content=f"Done: {task.split(': ', 1)[1]}.")
        self.responses = [reply]
        self.i = 0
        return super()._generate(messages, stop, run_manager, **kwargs)


def model() -> Any:
    if os.environ.get("MODEL"):
        from langchain.chat_models import init_chat_model

        return init_chat_model(os.environ["MODEL"])
    print("No MODEL: running with a scripted chat model, offline.")
    return ScriptedChat(responses=[AIMessage(content="")])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp):
        ctx = ContextAssembler(max_tokens=1_600, preserve_recent=2, context_role="user")
        plan = ctx.register_plugin(
            PlanPlugin(
                {
                    "goal": "Explain the slow requests",
                    "tasks": [
                        {"id": "1", "description": "read the service log"},
                        {"id": "2", "description": "read the timeout setting", "depends_on": ["1"]},
                    ],
                }
            )
        )
        ctx.register_plugin(ToolOutputPlugin(keep=1))
        ctx.on(
            "prepared", lambda e: print(f"Model call: {e.data['budget'].used:,} of {e.data['budget'].limit:,} tokens")
        )
        ctx.on("compacted", lambda e: print(f"Compacted: freed {e.data['freed']:,} tokens"))
        agent = create_agent(
            model(),
            [read_file],
            system_prompt="You are a careful engineer. Use the tools.",
            middleware=[AssemblerMiddleware(ctx, max_output_tokens=500)],
        )
        messages: list[BaseMessage] = []
        while tasks := plan.executable_tasks():
            task = tasks[0]
            plan.update_task_status(task.id, "in_progress")
            result = agent.invoke({"messages": [*messages, HumanMessage(f"Task {task.id}: {task.description}")]})
            messages = result["messages"]
            print(f"Answer: {messages[-1].content}")
            plan.update_task_status(task.id, "completed")
        stand_ins = [
            m for m in messages if isinstance(m, ToolMessage) and str(m.content).startswith("[toolctx stand-in]")
        ]
        print(f"The agent's state: {len(messages)} messages, {len(stand_ins)} tool output shown as a stand-in")
        print("Plan:", (plan.get_component() or "").replace("\n", " | "))


if __name__ == "__main__":
    main()

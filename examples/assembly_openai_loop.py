"""A plan-executing agent loop over an OpenAI-compatible client, with toolctx's context assembler.

The assembler prepares every model call: system prompt, the plan (its statuses
change as the loop works), the history with big tool outputs as restorable
stand-ins, all measured against a token budget and compacted when it would not
fit. Run it with ``OPENAI_API_KEY`` set (and ``OPENAI_BASE_URL`` for another
OpenAI-compatible server, ``MODEL`` for the model) to use a real model; without
a key it runs offline against a scripted client that answers as a model would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from types import SimpleNamespace
from typing import Any

import toolctx
from toolctx.assembly import ContextAssembler, PlanPlugin, ToolOutputPlugin

LOG = "".join(
    f"2026-11-25 10:{i // 60:02d}:{i % 60:02d} worker-{i % 4} handled request {i} in {i % 97} ms\n" for i in range(600)
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the project.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


def read_file(path: str) -> str:
    return LOG if path.endswith(".log") else f"# {path}\nTIMEOUT_MS = 250\n"


class ScriptedClient:
    """Answers like a model: per task, one tool call, then (for the log) reading part of it back, then a reply."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self.calls = 0

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Any:
        self.calls += 1
        task = next(m["content"] for m in reversed(messages) if m["role"] == "user" and m["content"].startswith("Task"))
        last = messages[-1] if messages[-1]["role"] != "system" else messages[-2]
        if last["role"] == "user":
            path = "service.log" if "log" in task else "config.py"
            return _reply(None, [(f"call{self.calls}", "read_file", {"path": path})])
        if last["role"] == "tool" and last["content"].startswith("[toolctx stand-in]"):
            handle = re.search(r"ctx:[0-9a-z]+", last["content"]).group(0)  # type: ignore[union-attr]
            return _reply(None, [(f"call{self.calls}", "read_context", {"id": handle, "offset": 0, "limit": 60})])
        return _reply(f"Done: {task.split(': ', 1)[1]}.", [])


def _reply(text: str | None, calls: list[tuple[str, str, dict[str, Any]]]) -> Any:
    tool_calls = [
        SimpleNamespace(id=i, function=SimpleNamespace(name=n, arguments=json.dumps(a))) for i, n, a in calls
    ] or None
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text, tool_calls=tool_calls))])


async def run(client: Any, model: str) -> None:
    ctx = ContextAssembler(
        max_tokens=1_600, preserve_recent=2, system_prompt="You are a careful engineer. Use the tools.", tools=TOOLS
    )
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
    outputs = ctx.register_plugin(ToolOutputPlugin(max_output_tokens=500, keep=1))
    ctx.on("compacted", lambda event: print(f"Compacted: freed {event.data['freed']:,} tokens"))
    while tasks := plan.executable_tasks():
        task = tasks[0]
        plan.update_task_status(task.id, "in_progress")
        ctx.set_current_input(f"Task {task.id}: {task.description}")
        while True:
            prepared = await ctx.prepare()
            print(
                f"Model call: {prepared.budget.used:,} of {prepared.budget.limit:,} tokens ({prepared.budget.status})"
            )
            reply = client.chat.completions.create(
                model=model, messages=prepared.to_openai(), tools=prepared.openai_tools() or None
            )
            message = reply.choices[0].message
            calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in message.tool_calls or []
            ]
            ctx.add_message("assistant", message.content or "", tool_calls=calls)
            if not calls:
                print(f"Answer: {message.content}")
                break
            for call in calls:
                args = json.loads(call["arguments"])
                if call["name"] == "read_context":
                    result = outputs.read(args["id"], args.get("offset", 0), args.get("limit", 4000))
                    print(f"read_context {args['id']} -> {result.splitlines()[0]}")
                else:
                    result = read_file(**args)
                shown = ctx.add_tool_result(call["id"], result)
                if shown.content.startswith("[toolctx stand-in]"):
                    size = f"{len(result):,} characters; the model sees a stand-in of {len(shown.content):,}"
                    print(f"{call['name']} returned {size}")
        plan.update_task_status(task.id, "completed")
    print("Plan:", (plan.get_component() or "").replace("\n", " | "))
    state = ctx.get_state()
    print(
        f"State: version {state.version}, {len(state.history)} messages, {len(state.model_dump_json()):,} bytes of JSON"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp):
        if os.environ.get("OPENAI_API_KEY"):
            from openai import OpenAI

            asyncio.run(run(OpenAI(), os.environ.get("MODEL", "gpt-4o-mini")))
        else:
            print("No OPENAI_API_KEY: running against a scripted client, offline.")
            asyncio.run(run(ScriptedClient(), "scripted"))


if __name__ == "__main__":
    main()

"""Replaying a recorded session through LangChain's ``create_agent`` loop.

The agent is the real one (``langchain.agents.create_agent``: model node, tool
node, middleware, an ``InMemorySaver`` checkpointer); each recorded turn is one
``agent.invoke`` with the user's message on the same ``thread_id``. The chat model
is scripted: on every call it records the messages and the tools bound to it, then
answers with the recorded step (text and tool calls) or the turn's final reply.
Each tool answers with the recorded output of the call.
"""

from __future__ import annotations

import json
import tempfile
import time
from typing import Any

from _replay_measure import (
    ASSISTANT_TEXT,
    CALL_ARGUMENTS,
    READ_ALL,
    SYSTEM_AND_USER,
    TOOL_DEFINITIONS,
    TOOL_RESULTS,
    TOOLCTX_DEFINITIONS,
    Figures,
    HookClock,
    ModelInput,
    TokenCounter,
    Unit,
    measure,
    read_back_text,
    stored_after,
)
from _replay_needs import needed_values
from _replay_trace import OutputBook, Trace, args_schemas, recorded_texts
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from toolctx_langchain import ToolContextMiddleware

import toolctx
from toolctx.compaction import output_text

__all__ = ["replay_langchain"]

FRAMEWORK = "langchain"


class ScriptedChatModel(BaseChatModel):
    """A chat model that hands every call to its replay (``bind_tools`` returns the same model)."""

    replay: Any

    @property
    def _llm_type(self) -> str:
        return "scripted-replay"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.replay.bound = list(tools)
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        cpu = time.thread_time()
        try:
            return ChatResult(generations=[ChatGeneration(message=self.replay.respond(messages))])
        finally:
            self.replay.recording_cpu += time.thread_time() - cpu


class _Replay:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.book = OutputBook(trace)
        self.bound: list[Any] = []
        self.inputs: list[ModelInput] = []
        self.replies: list[tuple[AIMessage, bool]] = []
        for turn in trace.turns:
            for step in turn.steps:
                calls = [{"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in step.calls]
                self.replies.append((AIMessage(content=step.text, tool_calls=calls), False))
            self.replies.append((AIMessage(content=turn.final or ""), turn.final is None))
        self._units: dict[int, tuple[Any, Unit]] = {}  # id(message or tool) -> (it, its unit): kept alive
        self.recording_cpu = 0.0  # seconds of thread CPU recording the inputs (left out of the loop's CPU)

    def tools(self) -> list[BaseTool]:
        def make(name: str, schema: dict[str, Any]) -> BaseTool:
            def run(**kwargs: Any) -> str:
                return self.book.by_args(name, kwargs)

            return StructuredTool(name=name, description=f"Recorded tool {name}.", args_schema=schema, func=run)

        return [make(name, schema) for name, schema in args_schemas(self.trace).items()]

    def respond(self, messages: list[BaseMessage]) -> AIMessage:
        if len(self.inputs) >= len(self.replies):
            raise RuntimeError(f"{self.trace.id}: the agent called the model more often than the recording")
        reply, extra = self.replies[len(self.inputs)]
        units = [self._tools_unit(), *(self._unit(m) for m in messages)]
        self.inputs.append(ModelInput(tuple(units), extra))
        return reply

    def _tools_unit(self) -> Unit:
        parts = []
        for tool in self.bound:
            definition = self._cached(tool, lambda t: json.dumps(convert_to_openai_tool(t), ensure_ascii=False))
            name = getattr(tool, "name", "")
            parts.append((TOOLCTX_DEFINITIONS if name == "read_context" else TOOL_DEFINITIONS, definition))
        return Unit("tools", tuple(parts))

    def _cached(self, key: Any, make: Any) -> Any:
        found = self._units.get(id(key))
        if found is None or found[0] is not key:
            found = self._units[id(key)] = (key, make(key))
        return found[1]

    def _unit(self, message: BaseMessage) -> Unit:
        return self._cached(message, _message_unit)  # type: ignore[no-any-return]


def _message_unit(message: BaseMessage) -> Unit:
    text = output_text(message.content)
    if isinstance(message, SystemMessage):
        return Unit("system", ((SYSTEM_AND_USER, text),))
    if isinstance(message, HumanMessage):
        return Unit("user", ((SYSTEM_AND_USER, text),))
    if isinstance(message, ToolMessage):
        return Unit("tool", ((TOOL_RESULTS, text),), answers=message.tool_call_id)
    if isinstance(message, AIMessage):
        parts = [(ASSISTANT_TEXT, text)] if text else []
        for call in message.tool_calls:
            parts += [(CALL_ARGUMENTS, call["name"]), (CALL_ARGUMENTS, json.dumps(call["args"], ensure_ascii=False))]
        return Unit("assistant", tuple(parts), calls=tuple(str(call["id"]) for call in message.tool_calls))
    raise TypeError(f"unexpected message in the model input: {type(message).__name__}")


def _timed(middleware: ToolContextMiddleware, clock: HookClock) -> ToolContextMiddleware:
    """The middleware with its two sync hooks timed (``agent.invoke`` runs the sync hooks)."""
    tool_hook, model_hook = middleware.wrap_tool_call, middleware.wrap_model_call

    def wrap_tool_call(request: Any, handler: Any) -> Any:
        return clock.around("tool", tool_hook, request, handler)

    def wrap_model_call(request: Any, handler: Any) -> Any:
        return clock.around("model", model_hook, request, handler)

    middleware.wrap_tool_call = wrap_tool_call  # type: ignore[method-assign]
    middleware.wrap_model_call = wrap_model_call  # type: ignore[method-assign]
    return middleware


def replay_langchain(
    trace: Trace, with_toolctx: bool, count: TokenCounter, options: dict[str, Any] | None = None
) -> Figures:
    """Replay ``trace`` through ``create_agent``, with ``ToolContextMiddleware(**options)`` or without."""
    started = time.perf_counter()
    replay = _Replay(trace)
    figures = Figures(trace.id, trace.source, FRAMEWORK, with_toolctx, tool_calls=len(trace.calls))
    clock = HookClock()
    middleware = _timed(ToolContextMiddleware(**(options or {})), clock) if with_toolctx else None
    agent = create_agent(
        ScriptedChatModel(replay=replay),
        replay.tools(),
        system_prompt=trace.system or None,
        middleware=[middleware] if middleware is not None else [],
        checkpointer=InMemorySaver(),
    )
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as session:
        loop_cpu = time.process_time()
        for turn in trace.turns:
            config: Any = {"configurable": {"thread_id": trace.id}, "recursion_limit": 2 * len(turn.steps) + 10}
            agent.invoke({"messages": [HumanMessage(turn.user)]}, config)
        figures.loop_cpu = time.process_time() - loop_cpu - replay.recording_cpu
        if len(replay.inputs) != len(replay.replies):
            raise RuntimeError(f"{trace.id}: {len(replay.inputs)} model calls, the recording has {len(replay.replies)}")
        figures.stored_after = stored_after(session)

        def read(handle: str, part: str = "result") -> str | None:
            assert middleware is not None
            answer = middleware.tools[0].invoke({"id": handle, "offset": 0, "limit": READ_ALL, "part": part})
            return read_back_text(str(answer))

        redactor = session.redactor
        measure(
            figures,
            replay.inputs,
            replay.book.by_id,
            count,
            read if middleware is not None else None,
            redactor.redact_text if redactor is not None else None,
            {call.id: call.args for call in trace.calls},
            recorded_texts(trace),
            needed_values(trace),
        )
    clock.fill(figures)
    figures.run_seconds = time.perf_counter() - started
    return figures

"""Replaying a recorded session through the OpenAI Agents SDK's ``Runner.run``.

The run is the real one (``Runner.run`` with an ``Agent`` and a ``RunConfig``); each
recorded turn is one ``Runner.run`` with the user's message and the same in-memory
``SQLiteSession``, the SDK's own way to carry a conversation across runs. The model
is scripted: on every call it records what it was given (instructions, input items,
tools) and answers with the recorded step (an assistant message and function calls,
built with ``agents.testing``'s helpers) or the turn's final reply. It is a plain
``Model`` rather than ``agents.testing.ScriptedModel``, which keeps two deep copies
of every call's input: quadratic in a long session. Each tool answers with the
recorded output of its call id.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
    argument_stand_ins,
    measure,
    read_back_text,
    stored_after,
    text_stand_ins,
)
from _replay_needs import needed_values
from _replay_trace import OutputBook, Trace, args_schemas, recorded_texts
from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, SQLiteSession, Tool, Usage
from agents.models.openai_responses import Converter
from agents.testing import assistant_message, function_call
from agents.tool_context import ToolContext
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

import toolctx
from toolctx.compaction import handle_of

__all__ = ["replay_agents"]

FRAMEWORK = "agents"


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _text(content: Any) -> str:
    """The text of a message's content or a function call's output: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_get(part, "text") or "") for part in content)
    return str(content)


def _item_unit(item: Any) -> Unit:
    kind = _get(item, "type")
    if kind == "function_call":
        name, arguments = str(_get(item, "name")), str(_get(item, "arguments") or "")
        return Unit(
            "assistant", ((CALL_ARGUMENTS, name), (CALL_ARGUMENTS, arguments)), calls=(str(_get(item, "call_id")),)
        )
    if kind == "function_call_output":
        return Unit("tool", ((TOOL_RESULTS, _text(_get(item, "output"))),), answers=str(_get(item, "call_id")))
    role = _get(item, "role")
    if kind in (None, "message") and role in ("user", "system", "developer"):
        return Unit("user" if role == "user" else "system", ((SYSTEM_AND_USER, _text(_get(item, "content"))),))
    if kind in (None, "message") and role == "assistant":
        text = _text(_get(item, "content"))
        return Unit("assistant", ((ASSISTANT_TEXT, text),) if text else ())
    raise TypeError(f"unexpected input item in the model call: {kind!r} {role!r}")


class RecordingModel(Model):
    """Answers each call with the next scripted output and hands the call to ``record`` first."""

    def __init__(self, record: Callable[[str | None, Any, list[Tool], bool], None]) -> None:
        self.record = record
        self.script: list[tuple[list[Any], bool]] = []  # (output items, a call the recording never made)
        self.recording_cpu = 0.0  # seconds of thread CPU recording the inputs (left out of the loop's CPU)

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Tool],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        if not self.script:
            raise RuntimeError("the agent called the model more often than the recording")
        output, extra = self.script.pop(0)
        cpu = time.thread_time()
        self.record(system_instructions, input, tools, extra)
        self.recording_cpu += time.thread_time() - cpu
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the replay does not stream")


class _Replay:
    def __init__(self, trace: Trace, clock: HookClock, with_toolctx: bool) -> None:
        self.trace = trace
        self.book = OutputBook(trace)
        self.clock = clock
        self.with_toolctx = with_toolctx
        self.inputs: list[ModelInput] = []
        self.model = RecordingModel(self.record)
        self._definitions: dict[int, tuple[Tool, str]] = {}
        self._inner_cpu = self._inner_wall = 0.0  # the recorded tool's own time, inside a timed call
        self.filter_inputs: list[tuple[list[Any], Any]] | None = None  # (items, instructions) the filter got
        self.options: dict[str, Any] = {}  # CompactionSettings options for the tools and the filter (defaults)

    def script(self, index: int) -> list[tuple[list[Any], bool]]:
        """The model's answers for turn ``index``: one per recorded step, then the final reply."""
        turn = self.trace.turns[index]
        answers: list[tuple[list[Any], bool]] = []
        for n, step in enumerate(turn.steps):
            items: list[Any] = [assistant_message(step.text, item_id=f"msg_{index}_{n}")] if step.text else []
            items += [function_call(c.name, c.args, call_id=c.id) for c in step.calls]
            answers.append((items, False))
        answers.append(([assistant_message(turn.final or "", item_id=f"msg_{index}_final")], turn.final is None))
        return answers

    def record(self, system_instructions: str | None, model_input: Any, tools: list[Tool], extra: bool) -> None:
        units = [self._tools_unit(tools)]
        if system_instructions:
            units.append(Unit("system", ((SYSTEM_AND_USER, system_instructions),)))
        items = model_input if isinstance(model_input, list) else [{"role": "user", "content": model_input}]
        units += [_item_unit(item) for item in items]
        self.inputs.append(ModelInput(tuple(units), extra))

    def _tools_unit(self, tools: list[Tool]) -> Unit:
        parts = []
        for tool in tools:
            found = self._definitions.get(id(tool))
            if found is None or found[0] is not tool:
                [definition] = Converter.convert_tools([tool], []).tools
                found = self._definitions[id(tool)] = (tool, json.dumps(definition, ensure_ascii=False))
            parts.append((TOOLCTX_DEFINITIONS if tool.name == "read_context" else TOOL_DEFINITIONS, found[1]))
        return Unit("tools", tuple(parts))

    def tools(self) -> list[Tool]:
        async def recorded(ctx: ToolContext[Any], arguments: str) -> str:
            cpu, wall = time.thread_time(), time.perf_counter()
            output = self.book.by_call_id(ctx.tool_call_id)
            self._inner_cpu += time.thread_time() - cpu
            self._inner_wall += time.perf_counter() - wall
            return output

        tools: list[Tool] = [
            FunctionTool(
                name=name,
                description=f"Recorded tool {name}.",
                params_json_schema=schema,
                on_invoke_tool=recorded,
                strict_json_schema=False,
            )
            for name, schema in args_schemas(self.trace).items()
        ]
        if not self.with_toolctx:
            return tools
        persisted = persist_tools(tools, **self.options)
        for tool in persisted:
            assert isinstance(tool, FunctionTool)
            tool.on_invoke_tool = self._timed_tool(tool.on_invoke_tool)
        return [*persisted, read_context]

    def _timed_tool(self, invoke: Callable[[ToolContext[Any], str], Awaitable[Any]]) -> Any:
        """The persisted tool's invoker, timed; the recorded tool inside it is timed apart and subtracted.

        The recorded tool never suspends, so no other task runs inside the measured span.
        """

        async def timed(ctx: ToolContext[Any], arguments: str) -> Any:
            self._inner_cpu = self._inner_wall = 0.0
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return await invoke(ctx, arguments)
            finally:
                self.clock.add(
                    "tool",
                    time.thread_time() - cpu - self._inner_cpu,
                    time.perf_counter() - wall - self._inner_wall,
                )

        return timed

    def input_filter(self) -> Any:
        if not self.with_toolctx:
            return None
        compact = compact_tool_outputs(**self.options)

        def timed(data: Any) -> Any:
            if self.filter_inputs is not None:
                self.filter_inputs.append((list(data.model_data.input), data.model_data.instructions))
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return compact(data)
            finally:
                self.clock.add("model", time.thread_time() - cpu, time.perf_counter() - wall)

        return timed


async def _read(handle: str, part: str = "result") -> str | None:
    arguments = json.dumps({"id": handle, "offset": 0, "limit": READ_ALL, "part": part})
    context = ToolContext(None, tool_name="read_context", tool_call_id="restore", tool_arguments=arguments)
    answer = await read_context.on_invoke_tool(context, arguments)
    return read_back_text(str(answer))


async def _run(replay: _Replay, figures: Figures, count: TokenCounter) -> None:
    trace = replay.trace
    agent = Agent(name="replay", instructions=trace.system or None, model=replay.model, tools=replay.tools())
    config = RunConfig(tracing_disabled=True, call_model_input_filter=replay.input_filter())
    conversation = SQLiteSession(trace.id)
    try:
        loop_cpu = time.process_time()
        for index, turn in enumerate(trace.turns):
            replay.model.script.extend(replay.script(index))
            await Runner.run(agent, turn.user, session=conversation, run_config=config, max_turns=len(turn.steps) + 2)
        figures.loop_cpu = time.process_time() - loop_cpu - replay.model.recording_cpu
        if replay.model.script:
            raise RuntimeError(f"{trace.id}: {len(replay.model.script)} recorded model answers were not asked for")
    finally:
        conversation.close()
    figures.stored_after = stored_after(toolctx.current_session())
    restored: dict[tuple[str, str], str | None] = {}
    if replay.with_toolctx:
        for handle in sorted(_handles(replay.inputs)):
            restored[handle, "result"] = await _read(handle)
        for model_input in replay.inputs:
            for _, name, text in argument_stand_ins(model_input.units):
                key = (f"ctx:{handle_of(text)}", f"args.{name}")
                if key not in restored:
                    restored[key] = await _read(*key)
            for text in text_stand_ins(model_input.units):
                key = (f"ctx:{handle_of(text)}", "result")
                if key not in restored:
                    restored[key] = await _read(*key)
    session = toolctx.current_session()
    redact = session.redactor.redact_text if session.redactor is not None else None

    def read(handle: str, part: str = "result") -> str | None:
        return restored.get((handle, part))

    arguments = {call.id: call.args for call in trace.calls}
    reader = read if replay.with_toolctx else None
    texts, needs = recorded_texts(trace), needed_values(trace)
    measure(figures, replay.inputs, replay.book.by_id, count, reader, redact, arguments, texts, needs)


def _handles(inputs: list[ModelInput]) -> set[str]:
    found = set()
    for model_input in inputs:
        for unit in model_input.units:
            if unit.role == "tool":
                pointer_id = handle_of(unit.parts[0][1])
                if pointer_id:
                    found.add(f"ctx:{pointer_id}")
    return found


def replay_agents(
    trace: Trace,
    with_toolctx: bool,
    count: TokenCounter,
    filter_inputs: list[tuple[list[Any], Any]] | None = None,
    options: dict[str, Any] | None = None,
) -> Figures:
    """Replay ``trace`` through ``Runner.run``, with ``persist_tools`` + ``read_context`` +
    ``compact_tool_outputs()`` or without.

    ``filter_inputs``: a list that gets each model call's input as the filter is
    handed it, ``(items, instructions)``; ``options``: ``CompactionSettings`` options.
    """
    started = time.perf_counter()
    clock = HookClock()
    replay = _Replay(trace, clock, with_toolctx)
    replay.filter_inputs = filter_inputs
    replay.options = dict(options or {})
    figures = Figures(trace.id, trace.source, FRAMEWORK, with_toolctx, tool_calls=len(trace.calls))
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as conversation:
        # One session serves this one conversation (its turns are runs of one SQLiteSession): said so, its
        # turns store and read under the conversation, as Conversations.open(sdk_session) would do.
        conversation.conversation = trace.id
        asyncio.run(_run(replay, figures, count))
    clock.fill(figures)
    figures.run_seconds = time.perf_counter() - started
    return figures

"""AssemblerMiddleware: a LangChain agent's model input, prepared by a toolctx ContextAssembler.

Before every model call (``wrap_model_call`` and ``awrap_model_call``) the
agent's messages are mirrored into the assembler's history (only the new ones),
``prepare()`` measures and compacts them with the assembler's plugins and
strategy, and the model is sent what it prepared: the system prompt, the history
as shown (stand-ins, markers of compacted history) and the plugins' components.
Messages the assembler did not change are sent as the agent's own objects; the
agent's state is never changed, so its checkpoints keep every message. Tool calls
(``wrap_tool_call`` and ``awrap_tool_call``) are stored as by
:class:`~toolctx_langchain.ToolContextMiddleware`, with big outputs shown as
stand-ins and ``read_context`` offered once the conversation has one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, TypeVar

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from toolctx.assembly import (
    CONTEXT_ID,
    SYSTEM_ID,
    ContextAssembler,
    HistoryMessage,
    PreparedContext,
    reset_after_failed_prepare,
)
from toolctx.compaction import READ_CONTEXT, CompactionSettings, is_stand_in, output_text
from toolctx_langchain._messages import MessageAdapter
from toolctx_langchain.middleware import ToolContextMiddleware
from toolctx_langchain.tools import thread_of

__all__ = ["AssemblerMiddleware"]

T = TypeVar("T")
AssemblerSource = ContextAssembler | Callable[[str | None], ContextAssembler]
_EDIT = MessageAdapter()  # applies stand-ins to a LangChain message as the compaction policy does


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to the end from synchronous code, inside a running event loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a sync call made inside a loop: run it beside it
        return pool.submit(asyncio.run, coroutine).result()


class _MessageMirror:
    """What one assembler has been given of the agent's messages."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.shown: dict[str, HistoryMessage] = {}
        self.originals: dict[str, AnyMessage] = {}


def _key(message: AnyMessage, position: int) -> str:
    return str(message.id) if message.id else f"lc-{position}-{message.type}"


def _history_message(assembler: ContextAssembler, message: AnyMessage, key: str, current: bool) -> HistoryMessage:
    text = output_text(message.content)
    if isinstance(message, ToolMessage):
        meta = {"is_error": True} if message.status == "error" else None
        return assembler.add_message("tool", text, meta, tool_call_id=message.tool_call_id, name=message.name, id=key)
    if isinstance(message, AIMessage):
        calls = [
            {"id": str(c.get("id")), "name": c["name"], "arguments": c.get("args") or {}} for c in message.tool_calls
        ]
        return assembler.add_message("assistant", text, tool_calls=calls, id=key)
    if isinstance(message, SystemMessage):
        return assembler.add_message("system", text, id=key)
    return assembler.add_message("user", text, id=key, current_input=current)


class AssemblerMiddleware(AgentMiddleware):
    """Lets ``create_agent`` use a :class:`~toolctx.assembly.ContextAssembler` for its model input.

    ``assembler``: one assembler (one conversation), or a function of the
    LangGraph thread id returning the assembler of that conversation. The agent's
    ``system_prompt`` is used when the assembler has none. ``settings`` (or its
    options by keyword): how tool outputs are stored and shown when a tool
    returns (:class:`~toolctx.compaction.CompactionSettings`); model-time
    compaction is the assembler's (register a
    :class:`~toolctx.assembly.ToolOutputPlugin` for old tool outputs).
    """

    def __init__(
        self,
        assembler: AssemblerSource,
        settings: CompactionSettings | None = None,
        *,
        read_tool: bool = True,
        **options: Any,
    ) -> None:
        super().__init__()
        if not isinstance(assembler, ContextAssembler) and not callable(assembler):
            raise TypeError(f"assembler must be a ContextAssembler or a function of a thread id, got {assembler!r:.80}")
        self.assembler = assembler
        self._tool_calls = ToolContextMiddleware(settings, read_tool=read_tool, **options)
        # (the assembler's markers of old history are stored under its conversation id, not the thread's)
        self._tool_calls.reads_also = lambda: self._assembler().conversation_id
        self.tools = self._tool_calls.tools
        self._mirrors: dict[int, tuple[ContextAssembler, _MessageMirror]] = {}
        self._definitions: dict[Hashable, tuple[Any, dict[str, Any]]] = {}

    # -- tool calls: stored as ToolContextMiddleware stores them -----------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        return self._tool_calls.wrap_tool_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await self._tool_calls.awrap_tool_call(request, handler)

    # -- model calls ------------------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        assembler = self._assembler()
        sent = request
        for last_try in (False, True):
            try:
                self._mirror(assembler, request)
                sent = self._request(assembler, request, run_sync(assembler.prepare()))
                break
            except Exception as exc:
                reset_after_failed_prepare(assembler, self._mirrors, exc, last_try)
        return handler(sent)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        assembler = self._assembler()
        sent = request
        for last_try in (False, True):
            try:
                self._mirror(assembler, request)
                sent = self._request(assembler, request, await assembler.prepare())
                break
            except Exception as exc:
                reset_after_failed_prepare(assembler, self._mirrors, exc, last_try)
        return await handler(sent)

    def _assembler(self) -> ContextAssembler:
        if isinstance(self.assembler, ContextAssembler):
            return self.assembler
        found = self.assembler(thread_of())
        if not isinstance(found, ContextAssembler):
            raise TypeError(f"the assembler function returned {found!r:.80}, not a ContextAssembler")
        return found

    def _mirror(self, assembler: ContextAssembler, request: ModelRequest) -> None:
        """Add the agent's new messages to the assembler's history (all of them for a new conversation)."""
        held = self._mirrors.get(id(assembler))
        mirror = held[1] if held is not None and held[0] is assembler else _MessageMirror()
        messages = request.messages
        keys = [_key(m, i) for i, m in enumerate(messages)]
        n = len(mirror.ids)
        if n > len(keys) or (n and (keys[0] != mirror.ids[0] or keys[n - 1] != mirror.ids[n - 1])):
            assembler.clear_history()  # another conversation, or a history edited by someone else
            mirror, n = _MessageMirror(), 0
        self._mirrors[id(assembler)] = (assembler, mirror)
        last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        for i in range(n, len(messages)):
            mirror.shown[keys[i]] = _history_message(assembler, messages[i], keys[i], i == last_human)
            mirror.originals[keys[i]] = messages[i]
            mirror.ids.append(keys[i])
        if request.system_message is not None and not assembler.get_system_prompt():
            assembler.set_system_prompt(output_text(request.system_message.content))
        tools = [t for t in request.tools if _name(t) != READ_CONTEXT]
        definitions = [self._definition(t) for t in tools]
        # (a tool the provider defines, {"type": "web_search_preview"} say, has no function to count)
        assembler.set_tools([d for d in definitions if isinstance(d.get("function", d).get("name"), str)])

    def _definition(self, tool: Any) -> dict[str, Any]:
        key: Hashable = id(tool)
        found = self._definitions.get(key)
        if found is None or found[0] is not tool:
            found = self._definitions[key] = (tool, convert_to_openai_tool(tool))
        return found[1]

    def _request(self, assembler: ContextAssembler, request: ModelRequest, prepared: PreparedContext) -> ModelRequest:
        mirror = self._mirrors[id(assembler)][1]
        system: SystemMessage | None = None
        messages: list[AnyMessage] = []
        converted = {m.id: m for m in prepared.to_langchain()}
        for shown in prepared.messages:
            if shown.id == SYSTEM_ID:
                system = SystemMessage(content=shown.content)
                continue
            original = mirror.originals.get(shown.id)
            if original is not None and mirror.shown.get(shown.id) is shown:
                messages.append(original)
            elif isinstance(original, ToolMessage):
                messages.append(_EDIT.apply(original, shown.content, {}))
            elif isinstance(original, AIMessage):
                before = mirror.shown.get(shown.id)
                text = shown.content if before is None or shown.content != before.content else None
                messages.append(_EDIT.apply(original, text, {c.id: c.arguments for c in shown.tool_calls}))
            else:
                made = converted[shown.id]
                messages.append(made if shown.id != CONTEXT_ID else made.model_copy(update={"id": None}))
        # read_context: where the assembler offers it (its ToolOutputPlugin), or once the model is shown a stand-in
        # the tool hook made (with no such plugin, nothing else would let it read that back)
        offer = READ_CONTEXT in {t.get("function", t).get("name") for t in prepared.tools} or any(
            isinstance(m, ToolMessage) and is_stand_in(m.content) for m in messages
        )
        tools = [t for t in request.tools if _name(t) != READ_CONTEXT or offer]
        return request.override(system_message=system, messages=messages, tools=tools)


def _name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        return tool.get("name") or (tool.get("function") or {}).get("name")
    return getattr(tool, "name", None)

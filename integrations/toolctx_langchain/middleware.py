"""ToolContextMiddleware: store tool calls, stand in for big outputs, compact old ones restorably."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from toolctx import ContextPointer, ContextSession, ErrorInfo, hash_query
from toolctx._checks import fraction, whole_number
from toolctx._internal import WARNING, internal_error, log
from toolctx.standins import ResultEntry, compactable, is_stand_in, output_text, stand_in, stored_text
from toolctx.tokens import estimate_tokens
from toolctx_langchain.tools import READ_CONTEXT, SessionSource, read_context_tool, resolver

__all__ = ["ToolContextMiddleware"]

TokenCounter = Callable[[Sequence[BaseMessage]], int]
_META = "toolctx"


def _latest_question(messages: Sequence[Any]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return output_text(message.content)
    return None


def _run_tag(request: ToolCallRequest) -> str | None:
    config = getattr(request.runtime, "config", None) or {}
    configurable = config.get("configurable") or {}
    tag = configurable.get("thread_id") or config.get("run_id")
    return None if tag is None else str(tag)


class _ToolCall:
    """One tool call going through the middleware: what to store it with, and how."""

    def __init__(self, middleware: ToolContextMiddleware, request: ToolCallRequest) -> None:
        self.middleware = middleware
        self.call = request.tool_call
        self.session = middleware.session()
        messages = (request.state or {}).get("messages", []) if isinstance(request.state, dict) else []
        question = _latest_question(messages)
        self.query_id = None if question is None else hash_query(question)
        self.task_id = _run_tag(request)

    def save(self, result: Any, error: BaseException | ErrorInfo | None, name: str | None = None) -> ContextPointer:
        return self.session.save_context(
            name or self.call["name"],
            self.call.get("args") or {},
            result,
            self.task_id,
            self.query_id,
            error=error,
            call_id=self.call.get("id"),
        )

    def failed(self, error: Exception) -> None:
        try:
            self.save(None, error)
        except Exception as exc:
            internal_error(f"could not store the failed call of tool {self.call['name']!r}", exc)

    def finished(self, result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
        try:
            if isinstance(result, ToolMessage):
                return self._message(result)
            if isinstance(result, Command) and isinstance(result.update, dict):
                messages = result.update.get("messages")
                if isinstance(messages, list):
                    shown = [
                        self._message(m) if isinstance(m, ToolMessage) and m.tool_call_id == self.call.get("id") else m
                        for m in messages
                    ]
                    return dataclasses.replace(result, update={**result.update, "messages": shown})
            self.save(result, None)
        except Exception as exc:
            internal_error(f"could not store a call of tool {self.call['name']!r}", exc)
        return result

    def _message(self, message: ToolMessage) -> ToolMessage:
        content = message.content
        stored = content if message.artifact is None else {"content": content, "artifact": message.artifact}
        error = None
        if message.status == "error":
            error = ErrorInfo(type="ToolError", message=output_text(content)[:20_000])
        pointer = self.save(stored, error, message.name)
        meta = {**message.response_metadata, _META: {"id": pointer.id}}
        text = output_text(content)
        if error is None and estimate_tokens(text) > self.middleware.max_output_tokens:
            meta[_META]["stand_in"] = True
            content = stand_in(pointer, text, self.middleware.head_chars, self.middleware.tail_chars)
        return message.model_copy(update={"content": content, "response_metadata": meta})


class ToolContextMiddleware(AgentMiddleware):
    """Stores every tool call in toolctx; stands in for big and old outputs; adds ``read_context``.

    Tool calls (``wrap_tool_call`` and ``awrap_tool_call``): the call's arguments and
    the ToolMessage's content (with its artifact, if any) are saved in the session,
    tagged with the latest human message as the query and the thread (or run) id as
    the task. An output over ``max_output_tokens`` reaches the model as a stand-in:
    its first ``head_chars`` and last ``tail_chars`` characters and a handle the
    model can pass to ``read_context``. Error results are stored and shown as they are.

    Model calls (``wrap_model_call``): once the conversation is over
    ``trigger_tokens`` (or ``trigger_fraction`` of the model's input window, from
    its profile), tool results older than the ``keep`` most recent are replaced by
    stand-ins of ``compact_chars`` characters. Tool calls and results always stay
    paired; error results and ``exclude_tools`` are never replaced. With
    ``write_back`` the replacements are also written to the agent state, so they
    are not recomputed each turn.

    ``session``: a ContextSession, or a function returning one; by default the
    session current when the agent runs (``with toolctx.session():``).
    """

    def __init__(
        self,
        *,
        max_output_tokens: int = 1000,
        head_chars: int = 1500,
        tail_chars: int = 500,
        trigger_tokens: int | None = 20_000,
        trigger_fraction: float | None = None,
        keep: int = 3,
        exclude_tools: Sequence[str] = (),
        compact_chars: int = 200,
        write_back: bool = True,
        token_counter: TokenCounter | None = None,
        session: SessionSource = None,
        read_tool: bool = True,
    ) -> None:
        super().__init__()
        self.max_output_tokens = whole_number("max_output_tokens", max_output_tokens, minimum=1)
        self.head_chars = whole_number("head_chars", head_chars)
        self.tail_chars = whole_number("tail_chars", tail_chars)
        if trigger_tokens is not None:
            whole_number("trigger_tokens", trigger_tokens, minimum=1)
        if trigger_fraction is not None:
            fraction("trigger_fraction", trigger_fraction, zero=False)
        self.trigger_tokens = trigger_tokens
        self.trigger_fraction = trigger_fraction
        self.keep = whole_number("keep", keep)
        if isinstance(exclude_tools, str):
            exclude_tools = (exclude_tools,)
        self.exclude_tools = frozenset(exclude_tools) | {READ_CONTEXT}
        self.compact_chars = whole_number("compact_chars", compact_chars)
        self.write_back = bool(write_back)
        self.token_counter: TokenCounter = token_counter or count_tokens_approximately
        self.session = resolver(session)
        self.tools = [read_context_tool(self.session)] if read_tool else []

    # -- tool calls ------------------------------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        if request.tool_call["name"] == READ_CONTEXT:
            return handler(request)
        call = _ToolCall(self, request)
        try:
            result = handler(request)
        except Exception as exc:
            call.failed(exc)
            raise
        return call.finished(result)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        if request.tool_call["name"] == READ_CONTEXT:
            return await handler(request)
        call = _ToolCall(self, request)
        try:
            result = await handler(request)
        except Exception as exc:
            call.failed(exc)
            raise
        return call.finished(result)

    # -- model calls -------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        edited, replaced = self._compact(request)
        if not replaced:
            return handler(request)
        return self._written_back(handler(request.override(messages=edited)), replaced)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[Any]],
    ) -> Any:
        edited, replaced = self._compact(request)
        if not replaced:
            return await handler(request)
        return self._written_back(await handler(request.override(messages=edited)), replaced)

    def _trigger(self, request: ModelRequest) -> int | None:
        if self.trigger_fraction is not None:
            profile = getattr(request.model, "profile", None)
            window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
            if isinstance(window, int):
                return int(window * self.trigger_fraction)
            if self.trigger_tokens is None:
                log(WARNING, "compaction_off", reason="the model's profile has no max_input_tokens")
        return self.trigger_tokens

    def _compact(self, request: ModelRequest) -> tuple[list[AnyMessage], list[ToolMessage]]:
        """The messages to send, and the tool results replaced in them (empty: nothing to do)."""
        messages = list(request.messages)
        try:
            trigger = self._trigger(request)
            if trigger is None or not messages or self.token_counter(messages) <= trigger:
                return messages, []
            calls: dict[str, dict[str, Any]] = {
                str(call["id"]): dict(call)
                for message in messages
                if isinstance(message, AIMessage)
                for call in message.tool_calls
                if call.get("id")
            }
            entries = [
                ResultEntry(
                    position=i,
                    tool_name=m.name or calls.get(m.tool_call_id, {}).get("name", ""),
                    is_error=m.status == "error",
                    already_stand_in=bool(m.response_metadata.get(_META, {}).get("compacted")),
                )
                for i, m in enumerate(messages)
                if isinstance(m, ToolMessage)
            ]
            session = self.session()
            replaced: list[ToolMessage] = []
            for entry in compactable(entries, keep=self.keep, exclude=self.exclude_tools):
                message = messages[entry.position]
                assert isinstance(message, ToolMessage)
                pointer = self._pointer(session, message, calls)
                text = output_text(message.content)
                if is_stand_in(text):  # a stand-in from the tool call: shorten it, same handle
                    text = stored_text(session, pointer.id) or text
                shorter = stand_in(pointer, text, self.compact_chars, 0, brief=True)
                if len(shorter) >= len(output_text(message.content)):
                    continue  # already as short as a stand-in would be
                compacted = message.model_copy(
                    update={
                        "content": shorter,
                        "artifact": None,
                        "response_metadata": {
                            **message.response_metadata,
                            _META: {"id": pointer.id, "compacted": True},
                        },
                    }
                )
                messages[entry.position] = compacted
                replaced.append(compacted)
            return messages, replaced
        except Exception as exc:  # compaction is an optimisation: never break the model call
            internal_error("could not compact the conversation; sending it unchanged", exc)
            return list(request.messages), []

    def _pointer(self, session: ContextSession, message: ToolMessage, calls: dict[str, Any]) -> ContextPointer:
        stored_id = message.response_metadata.get(_META, {}).get("id")
        pointer = session.get_pointer(stored_id) if stored_id else session.find_call(message.tool_call_id)
        if pointer is not None:
            return pointer
        call = calls.get(message.tool_call_id, {})  # a result from before the middleware: store it now
        return session.save_context(
            message.name or call.get("name", "tool"),
            call.get("args") or {},
            message.content,
            call_id=message.tool_call_id,
        )

    def _written_back(self, response: Any, replaced: list[ToolMessage]) -> Any:
        if not self.write_back or not isinstance(response, ModelResponse):
            return response
        keep_ids = [m for m in replaced if m.id]  # the state's reducer replaces messages by id
        if not keep_ids:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": keep_ids}))

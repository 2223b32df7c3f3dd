"""The read_context tool for LangChain, and persist_tool for tools used without the middleware."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.config import get_config
from langgraph.types import Command

from toolctx import ContextSession, ErrorInfo
from toolctx.compaction import (
    READ_CONTEXT,
    READ_CONTEXT_DESCRIPTION,
    READ_CONTEXT_PARAMETERS,
    CompactionSettings,
    Resolver,
    SessionSource,
    answer_read_context,
    at_tool_time,
    output_text,
    session_resolver,
)
from toolctx.telemetry import events
from toolctx_langchain._messages import model_arguments

__all__ = ["READ_CONTEXT", "persist_tool", "read_back", "read_context_tool", "thread_and_task", "thread_of"]


def run_config() -> dict[str, Any]:
    """The config of the running graph (empty outside a graph run)."""
    try:
        return get_config()  # type: ignore[return-value]
    except RuntimeError:  # called outside a graph run
        return {}


def thread_of(config: Any = None, *, or_run: bool = False) -> str | None:
    """The LangGraph thread id of ``config`` (else of the running graph), or with ``or_run`` its run id.

    The thread is the conversation: it picks the session of a
    :class:`~toolctx.Conversations` and scopes what ``read_context`` may read.
    """
    if not isinstance(config, dict):
        config = run_config()
    tag = (config.get("configurable") or {}).get("thread_id")
    if tag is None and or_run:
        tag = config.get("run_id")
    return None if tag is None else str(tag)


def thread_and_task(config: Any = None) -> tuple[str | None, str | None]:
    """:func:`thread_of` ``config``, and the task its calls are stored under: the thread, else the run id.

    (Both from one read of the config, for the tool hooks.)
    """
    if not isinstance(config, dict):
        config = run_config()
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is not None:
        thread = str(thread)
        return thread, thread
    run = config.get("run_id")
    return None, None if run is None else str(run)


class _PersistedTool:
    """The body of a :func:`persist_tool` copy: runs the tool, stores the call, shows a stand-in for a big output."""

    def __init__(self, tool: BaseTool, settings: CompactionSettings, get_session: Resolver) -> None:
        self.tool = tool
        self.settings = settings
        self.get_session = get_session
        self.call_id_key = _tool_call_id_key(tool)
        # A tool that returns content and an artifact hands the artifact on only when invoked with a tool call.
        self.artifact = tool.response_format == "content_and_artifact"
        # Errors reach the wrapper to be stored as errors; the copy's handlers (the tool's own) format them.
        self.inner = tool.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})

    def run(self, config: RunnableConfig, **kwargs: Any) -> Any:
        try:
            output = self.inner.invoke(self._given(kwargs), config=config)
        except Exception as exc:
            self._stored(config, kwargs, None, exc, None)
            raise
        return self._returned(self._finished(config, kwargs, output))

    async def arun(self, config: RunnableConfig, **kwargs: Any) -> Any:
        try:
            output = await self.inner.ainvoke(self._given(kwargs), config=config)
        except Exception as exc:
            self._stored(config, kwargs, None, exc, None)
            raise
        return self._returned(self._finished(config, kwargs, output))

    def _returned(self, shown: Any) -> Any:
        """What the copy returns: for a tool of content and artifact, the pair its own tool message would carry."""
        if self.artifact and isinstance(shown, ToolMessage):
            return shown.content, shown.artifact
        return shown

    def _given(self, kwargs: dict[str, Any]) -> Any:
        """What the tool is invoked with: the whole tool call when it takes the call's id (LangChain's rule)
        or returns content and an artifact (LangChain hands the artifact on only then)."""
        key = self.call_id_key
        call_id = kwargs.get(key) if key is not None else None
        if not isinstance(call_id, str):
            if not self.artifact:
                return kwargs
            call_id = "toolctx"  # (only the tool's own message carries it; the copy's message has the real one)
        return {"args": kwargs, "name": self.tool.name, "type": "tool_call", "id": call_id}

    def _finished(self, config: RunnableConfig, kwargs: dict[str, Any], output: Any) -> Any:
        """What the model gets: the output or its stand-in. A tool call's message and a Command keep their form."""
        if isinstance(output, ToolMessage):  # the tool was invoked with a tool call
            return self._message(config, kwargs, output)
        if not isinstance(output, Command):
            return self._stored(config, kwargs, output, None, output)
        call_id = kwargs.get(self.call_id_key) if self.call_id_key is not None else None
        update = output.update if isinstance(output.update, dict) else {}
        messages = update.get("messages")
        if call_id is not None and isinstance(messages, list):
            ours = [isinstance(m, ToolMessage) and m.tool_call_id == call_id for m in messages]
            if any(ours):
                shown = [
                    self._message(config, kwargs, m) if mine else m for m, mine in zip(messages, ours, strict=True)
                ]
                return dataclasses.replace(output, update={**update, "messages": shown})
        self._stored(config, kwargs, output, None, output, stand_in=False)  # it updates the graph's state
        return output

    def _message(self, config: RunnableConfig, kwargs: dict[str, Any], message: ToolMessage) -> ToolMessage:
        content, artifact = message.content, message.artifact
        whole = content if artifact is None else {"content": content, "artifact": artifact}
        if message.status == "error":  # stored as an error, and shown whole
            failure = ErrorInfo(type="ToolError", message=output_text(content)[:20_000])
            self._stored(config, kwargs, whole, failure, content)
            return message
        shown = self._stored(config, kwargs, whole, None, content)
        return message if shown is content else message.model_copy(update={"content": shown})

    def _stored(
        self,
        config: RunnableConfig,
        kwargs: dict[str, Any],
        output: Any,
        error: BaseException | ErrorInfo | None,
        text: Any,
        *,
        stand_in: bool = True,
    ) -> Any:
        """Store the call; ``text`` (what the model reads) or its stand-in, None after an error."""
        tool = self.tool
        try:
            thread, task = thread_and_task(config)
            current = self.get_session(thread)
            args = model_arguments(tool, kwargs)
            outcome = at_tool_time(
                self.settings,
                current,
                tool.name,
                args,
                output,
                output_text(text),  # measured as the model reads it (a str output: the very same object)
                error=error,
                task_id=task,
                shown_as_text=stand_in,
            )
        except Exception as exc:  # a session that cannot be opened, say: the model gets the output whole
            events.save_failed("store", f"could not store a call of tool {tool.name!r}", exc)
            return text if error is None else None
        if error is not None or not stand_in:
            return None
        return text if outcome.shown is None else outcome.shown


def _tool_call_id_key(tool: BaseTool) -> str | None:
    """The parameter of ``tool`` annotated ``InjectedToolCallId``, if any (its schema's field metadata)."""
    schema = tool.args_schema
    fields = getattr(schema, "model_fields", None) if isinstance(schema, type) else None
    for name, field in (fields or {}).items():
        for mark in getattr(field, "metadata", ()):
            if mark is InjectedToolCallId or isinstance(mark, InjectedToolCallId):
                return str(name)
    return None


def read_context_tool(session: SessionSource = None) -> BaseTool:
    """The ``read_context`` tool, reading from ``session`` (the current toolctx session by default).

    Inside a LangGraph thread it reads only outputs stored in that thread, so a
    handle from another conversation reads as unknown even in a shared session.
    (With :class:`~toolctx_langchain.ToolContextMiddleware`, a run without a thread
    reads only its own run's outputs: the middleware answers the calls.)
    """
    get_session = session_resolver(session)

    def read_context_fn(**given: Any) -> str:
        thread = thread_of()
        return read_back(get_session(thread), given, thread)

    return StructuredTool.from_function(
        read_context_fn, name=READ_CONTEXT, description=READ_CONTEXT_DESCRIPTION, args_schema=READ_CONTEXT_PARAMETERS
    )


def read_back(session: ContextSession, given: Mapping[str, Any], scope: str | tuple[str, ...] | None) -> str:
    """The answer to a ``read_context`` call with the arguments ``given``, reading only calls of ``scope``.

    (The schema is the shared JSON one, which LangChain hands on unvalidated: a
    missing id, a wrong type or a stray key is answered in words, as the other
    hosts answer it, never raised into the run.)
    """
    return answer_read_context(session, given, scope=scope)


def persist_tool(
    tool: BaseTool,
    settings: CompactionSettings | None = None,
    *,
    session: SessionSource = None,
    **options: Any,
) -> BaseTool:
    """A copy of ``tool`` whose calls are stored in toolctx, with big outputs replaced by stand-ins.

    For tools used without :class:`~toolctx_langchain.ToolContextMiddleware`: give
    the agent :func:`read_context_tool` too, so the model can read the stand-ins
    back. The wrapped tool keeps the name, description, argument schema and error handling;
    parameters LangChain injects (runtime, state, store, call id) are passed on but
    never stored. A failure to store is logged and warned, and the model gets the
    whole output. Options: those of :class:`~toolctx.compaction.CompactionSettings`
    (``max_output_tokens``, ``tool_limits``, ``head_chars``, ``tail_chars``). Plain functions need no
    wrapper: decorate them with ``@persist_context`` before ``@tool``.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(
            f"persist_tool takes a LangChain tool, got {type(tool).__name__}; for a plain function, "
            "decorate it with @toolctx.persist_context before @tool"
        )
    chosen = CompactionSettings.of(settings, **options)
    persisted = _PersistedTool(tool, chosen, session_resolver(session))
    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema if tool.args_schema is not None else tool.get_input_schema(),
        func=persisted.run,
        coroutine=persisted.arun,
        return_direct=tool.return_direct,
        response_format=tool.response_format,
        handle_tool_error=tool.handle_tool_error,
        handle_validation_error=tool.handle_validation_error,
        tags=tool.tags,
        metadata=tool.metadata,
    )

"""persist_tools and the read_context function tool for the Agents SDK."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import secrets
import weakref
from collections.abc import Awaitable, Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from importlib import metadata
from typing import Any

import orjson
from agents import FunctionTool, Tool
from agents.run_config import ToolErrorFormatter, ToolErrorFormatterArgs
from agents.tool_context import ToolContext
from agents.tracing import get_current_trace

from toolctx import ContextSession, HandleError
from toolctx.compaction import (
    READ_CONTEXT,
    READ_CONTEXT_DESCRIPTION,
    READ_CONTEXT_PARAMETERS,
    CompactionSettings,
    HandleParameters,
    Resolver,
    SessionSource,
    answer_read_context,
    at_tool_time,
    notes,
    output_text,
    reference_scope,
    session_resolver,
)
from toolctx.diagnostics import WARNING, internal_error, log
from toolctx.telemetry import events

__all__ = [
    "conversation_of",
    "parse_arguments",
    "persist_tools",
    "read_context",
    "read_context_tool",
    "read_scope",
    "record_tool_errors",
    "run_of",
]


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The tool call's arguments: they arrive as a JSON string, which may be empty or broken."""
    try:
        parsed = orjson.loads(arguments)  # (faster than json, above all the first time in a while)
        plain = _plain(parsed)
    except orjson.JSONDecodeError:  # what orjson refuses and json may read: NaN, lone surrogates
        if not arguments or arguments.isspace():  # (no arguments at all: checked only here, off the usual path)
            return {}
        plain = False
    if not plain:  # read as json reads it, or kept as it came if json cannot
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):  # (not JSON, or nested deeper than Python's parser goes)
            return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


class _Arguments(Mapping[str, Any]):
    """A function call's arguments, parsed from the model's JSON (:func:`parse_arguments`) when first read.

    The policy reads a call's arguments only to stand in for long ones (or to
    store a call no persisted tool saw): those of most calls never are. A queued
    call's are read when the queue is stored, with the calls before it.
    """

    __slots__ = ("_json", "_parsed")

    def __init__(self, arguments: str) -> None:
        self._json = arguments
        self._parsed: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = parse_arguments(self._json)
        return self._parsed

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return f"_Arguments({self._json!r:.80})"


def arguments_json(args: Mapping[str, Any]) -> str:
    """Arguments as the JSON string a function call carries (what :func:`parse_arguments` reads back)."""
    plain = dict(args)
    if _plain(plain):  # (orjson writes NaN as null: floats go through json, which keeps them)
        with contextlib.suppress(TypeError):  # (orjson's JSONEncodeError): an integer past 64 bits, say
            return orjson.dumps(plain).decode()
    return json.dumps(plain, ensure_ascii=False)


def _plain(value: Any) -> bool:
    """Whether orjson reads and writes ``value`` as json does: no float anywhere (orjson reads an
    integer past 64 bits as one), and no deeper than orjson writes. Walked without recursion."""
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        kind = type(item)
        if kind is float or depth > _DEEPEST:
            return False
        if kind is dict:
            pending.extend((v, depth + 1) for v in item.values())
        elif kind is list:
            pending.extend((v, depth + 1) for v in item)
    return True


_DEEPEST = 250  # (orjson writes at most 254 nested arrays and objects)


class Run:
    """One run of the SDK, as toolctx scopes it: a random scope, and the ``group_id`` its tools were run with."""

    __slots__ = ("__weakref__", "group", "scope")

    def __init__(self) -> None:
        self.scope = f"run:{secrets.token_hex(16)}"
        self.group: str | None = None


_RUNS: weakref.WeakKeyDictionary[Any, Run] = weakref.WeakKeyDictionary()  # the SDK's trace of a run -> the run
_last: tuple[Any, Run | None] = (None, None)  # the trace and run asked for last (a run asks many times)


def run_of() -> Run | None:
    """The run going on, known by the trace the SDK opens for it (a no-op one when tracing is off); None
    outside a run. Runs inside one ``agents.trace()`` block are one workflow, so one run here."""
    global _last
    trace = get_current_trace()
    last_trace, run = _last
    if trace is last_trace:
        return run
    if trace is None:
        return None
    try:
        run = _RUNS.get(trace)
        if run is None:
            run = _RUNS[trace] = Run()
    except TypeError:  # (a trace of another provider that cannot be weakly referenced)
        return None
    _last = (trace, run)
    return run


def conversation_of(context: object, session: ContextSession | None = None) -> str | None:
    """The task a tool call is stored under: the conversation ``session`` serves alone
    (``ContextSession.conversation``), else the run's ``RunConfig.group_id`` (the SDK's
    conversation id), else the run itself (a random scope for each), so a run without either reads back
    only its own calls."""
    if session is not None and session.conversation is not None:
        return session.conversation
    group = getattr(getattr(context, "run_config", None), "group_id", None)
    run = run_of()
    if isinstance(group, str) and group:
        if run is not None:
            run.group = group  # (the input filter, which is not told the group, learns it here)
        return group
    return None if run is None else run.scope


def read_scope(context: object, session: ContextSession) -> str | tuple[str, ...] | None:
    """What ``read_context`` may read in this run: calls of its conversation, and those the input filter
    stored for the run before it knew the run's group."""
    task = conversation_of(context, session)
    if session.conversation is not None:
        return task  # (the filter stores under the session's conversation too)
    run = run_of()
    if run is None or task is None or task == run.scope:
        return task
    return (task, run.scope)


def read_context_tool(session: SessionSource = None) -> FunctionTool:
    """The ``read_context`` function tool, reading from ``session`` (the current one by default).

    With a ``RunConfig.group_id`` it reads only outputs stored under that group, and
    without one only those of its own run, so a handle from another conversation
    reads as unknown even in a shared session.
    """
    get_session = session_resolver(session)

    async def read_back(ctx: ToolContext[Any], arguments: str) -> str:
        given = parse_arguments(arguments)
        session = get_session(None)
        return answer_read_context(session, given, scope=read_scope(ctx, session))

    def offered(context: Any, agent: Any) -> bool:
        """Offered once the conversation has a stand-in, or the call before its first batch of them."""
        try:
            return notes(get_session(None)).offer_read_context
        except Exception as exc:
            internal_error("could not tell whether to offer read_context; offering it", exc)
            return True

    return FunctionTool(
        name=READ_CONTEXT,
        description=READ_CONTEXT_DESCRIPTION,
        params_json_schema=READ_CONTEXT_PARAMETERS,
        on_invoke_tool=read_back,
        strict_json_schema=False,  # (offset, limit and part have defaults: the model may leave them out)
        is_enabled=offered,
    )


read_context = read_context_tool()
"""The ``read_context`` tool over the current toolctx session."""


_handled: ContextVar[tuple[object, list[Exception]] | None] = ContextVar("toolctx_handled_tool_error", default=None)
"""Set by a persisted tool while it runs: its call's context, and where :func:`record_tool_errors` puts
the exception the SDK shows for that call (not for a call of an agent this tool runs in turn)."""


def record_tool_errors(formatter: ToolErrorFormatter | None = None) -> ToolErrorFormatter:
    """A ``RunConfig.tool_error_formatter`` with which :func:`persist_tools` stores handled errors as errors.

    When a function tool raises, the SDK answers the model with its failure
    message and the exception stays inside the SDK; the run config's
    ``tool_error_formatter`` is the public place it shows it (kind
    ``"tool_exception"``, ``openai-agents`` 0.24 and later). With this formatter a
    persisted tool's call is stored as an error (the exception's type and
    message, redacted like everything else), so compaction leaves it whole;
    without it, or on an older SDK, the call is stored with the failure message
    as its output (on an older SDK this logs a ``record_tool_errors_inactive``
    warning, once). Errors the SDK lets through (``failure_error_function=None``)
    are stored as errors either way, and a tool's own ``failure_error_function``
    is not shown to the formatter by the SDK, so its answer is stored as output.

    ``formatter``: your own formatter, which still decides what the model is
    told (return None for the SDK's default message). Without one, a handle a
    decorated tool refused (:class:`~toolctx.HandleError`) is answered with its
    message, which tells the model what to pass instead.
    """
    if formatter is not None and not callable(formatter):
        raise TypeError(f"formatter must be a RunConfig.tool_error_formatter (a function), got {formatter!r:.80}")
    _say_if_errors_go_unseen()

    def record(args: ToolErrorFormatterArgs[Any]) -> str | Awaitable[str | None] | None:
        watched = _handled.get()
        error = getattr(args, "error", None)
        if (
            watched is not None
            and watched[0] is getattr(args, "run_context", None)
            and getattr(args, "kind", None) == "tool_exception"
            and isinstance(error, Exception)
        ):
            watched[1].append(error)
        if formatter is None:  # (a refused handle's message is written for the model: it is what it reads)
            return str(error) if isinstance(error, HandleError) else None
        return formatter(args)

    return record


_told: list[str] = []  # the SDK version already told about, once per process


def _say_if_errors_go_unseen() -> None:
    """Log (once) when the installed SDK never shows a tool's exception to a tool_error_formatter."""
    try:
        installed = metadata.version("openai-agents")
        release = tuple(int(part) for part in installed.split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):  # (a build without metadata, a version not numbered so)
        return
    if release >= (0, 24) or _told:
        return
    _told.append(installed)
    log(
        WARNING,
        "record_tool_errors_inactive",
        openai_agents=installed,
        reason="the SDK shows tool exceptions to RunConfig.tool_error_formatter from openai-agents 0.24 on; "
        "until then calls whose error it handles are stored with its failure message as their output",
    )


class _Persisted:
    """The on_invoke_tool of a persisted FunctionTool."""

    def __init__(
        self, tool: FunctionTool, get_session: Resolver, settings: CompactionSettings, references: HandleParameters
    ) -> None:
        self.name = tool.name
        self.get_session = get_session
        self.settings = settings
        self.invoke = tool.on_invoke_tool
        self.references = references if tool.name in references else None
        self.properties = tool.params_json_schema.get("properties")

    async def __call__(self, ctx: ToolContext[Any], arguments: str) -> Any:
        # The arguments are the model's JSON: the SDK passes its RunContextWrapper/ToolContext apart.
        run_with, notes = arguments, tuple[str, ...]()
        resolved: Collection[str] = ()
        if self.references is not None:
            referenced = self._referenced(ctx, arguments)
            if isinstance(referenced, HandleError):  # (refused: the model is told, the tool does not run)
                message = str(referenced)
                self._stored(ctx, arguments, message, referenced)  # (as a handled error: what the model read)
                return message
            run_with, notes, resolved = referenced
        handled: list[Exception] = []  # what record_tool_errors sees the SDK answer the model for
        watching = _handled.set((ctx, handled))
        try:
            with reference_scope(functools.partial(self._where, ctx), self.name, resolved):
                output = await self.invoke(ctx, run_with)
        except (Exception, asyncio.CancelledError) as exc:  # (cancelled: the SDK's tool timeout, say)
            self._stored(ctx, arguments, None, exc, notes)
            raise
        finally:
            _handled.reset(watching)
        shown = self._stored(ctx, arguments, output, handled[-1] if handled else None, notes)
        return output if shown is None else shown

    def _where(self, ctx: ToolContext[Any]) -> tuple[ContextSession, str | tuple[str, ...] | None]:
        """The session and scope this run's handles resolve in (its conversation's, as read_context's)."""
        session = self.get_session(None)
        return session, read_scope(ctx, session)

    def _referenced(
        self, ctx: ToolContext[Any], arguments: str
    ) -> tuple[str, tuple[str, ...], Collection[str]] | HandleError:
        """The arguments to run with (the handles in the tool's ``by_reference`` parameters resolved), the
        notes to store the call with and the parameters resolved; or the refusal the model is answered with."""
        assert self.references is not None
        try:
            session, scope = self._where(ctx)
            found = self.references.resolve(session, self.name, parse_arguments(arguments), self.properties, scope)
        except HandleError as exc:
            return exc
        except Exception as exc:  # (the run could not be told: said, and the tool does not run blind)
            events.handle_unreadable(f"could not resolve the handles passed to tool {self.name!r}", exc)
            return HandleError(
                f"the handles passed to {self.name} could not be looked up ({type(exc).__name__}); "
                "pass the values themselves.",
                reason="unreadable",
            )
        if found is None:
            return arguments, (), ()
        args, notes, names = found
        return arguments_json(args), notes, names

    def _stored(
        self,
        ctx: ToolContext[Any],
        arguments: str,
        output: Any,
        error: BaseException | None,
        notes: tuple[str, ...] = (),
    ) -> str | None:
        """Store the call in the run's session; the stand-in the model gets instead of ``output``, if any."""
        try:
            session = self.get_session(None)
            args = _Arguments(arguments)  # (parsed when stored: a queued call's with the calls before it)
            call_id = getattr(ctx, "tool_call_id", None)  # (a plain RunContextWrapper, invoked directly, has none)
            group = conversation_of(ctx, session)
            text = output_text(output)
        except Exception as exc:
            events.save_failed("store", f"could not store a call of tool {self.name!r}", exc)
            return None
        return at_tool_time(
            self.settings,
            session,
            self.name,
            args,
            output,
            text,
            error=error,
            call_id=call_id,
            task_id=group,
            argument_notes=notes,
        ).shown


def persist_tools(
    tools: Sequence[Tool],
    settings: CompactionSettings | None = None,
    *,
    session: SessionSource = None,
    by_reference: Mapping[str, bool | Collection[str]] | None = None,
    **options: Any,
) -> list[Tool]:
    """Copies of ``tools`` whose function tools store every call in toolctx.

    Each FunctionTool's ``on_invoke_tool`` is wrapped: the call's arguments (the
    model's JSON string, parsed; the SDK's context object is never stored) and
    output are saved with the tool call id, tagged with the latest user message
    when :func:`compact_tool_outputs` runs too; an output over
    ``max_output_tokens`` (``json_output_tokens`` for a JSON object or array, or the tool's own
    limit: ``tool_limits``, or its ``@persist_context(max_output_tokens=...)``) reaches the model as a
    stand-in with a ``ctx:<id>`` handle, once a stand-in pays for the cache break the first one causes,
    and unless it is short enough (``head_chars + tail_chars``) for the stand-in to show it whole
    (options: those of :class:`~toolctx.compaction.CompactionSettings`).
    Errors are stored, and the SDK's own error handling still decides what the
    model sees (for the SDK to show toolctx the errors it handles, run with
    ``RunConfig(tool_error_formatter=record_tool_errors())``: see
    :func:`record_tool_errors`); a call the SDK cancels (its tool timeout) is
    stored as an error too. An output that could not be stored reaches the model
    whole. A successful call whose string output is certainly shown whole
    (:func:`~toolctx.compaction.shown_whole`) is queued and stored with the next
    ones as soon as anything reads the session (or when it ends), which costs the
    tool call less. Other tools (hosted, computer, ...) are returned unchanged.

    ``by_reference``: tools whose parameters take a handle in place of a value, as
    ``{"write_file": ["content"]}`` (or ``{"write_file": True}``: every string
    parameter). The model passes ``content="ctx:<id>"`` (or ``#args.<name>``,
    ``#lines=10-40``, ``#path=...``) and the tool runs with the stored value of this
    conversation (read as ``read_context`` reads: the conversation's, else the run's),
    the call stored with the handle. A refused handle (malformed, unknown or another
    conversation's, a failed call's, a redacted copy's) is the tool's output, the
    tool not run. Tools decorated with ``@persist_context(by_reference=...)`` resolve
    their handles within the same conversation.
    """
    chosen = CompactionSettings.of(settings, **options)
    get_session = session_resolver(session)
    references = HandleParameters(by_reference)
    wrapped: list[Tool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool) and tool.name != READ_CONTEXT:
            references.check(tool.name, tool.params_json_schema.get("properties"))
            persisted = copy.copy(tool)
            persisted.on_invoke_tool = _Persisted(tool, get_session, chosen, references)
            wrapped.append(persisted)
        else:
            wrapped.append(tool)
    return wrapped

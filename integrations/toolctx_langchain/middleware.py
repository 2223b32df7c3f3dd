"""ToolContextMiddleware: store tool calls, stand in for big outputs, compact old calls restorably."""

from __future__ import annotations

import dataclasses
import functools
import operator
import secrets
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AnyMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from toolctx import ContextSession, Conversations, ErrorInfo, HandleError
from toolctx.compaction import (
    READ_CONTEXT,
    BeforeModelCall,
    CompactionSettings,
    Compactor,
    HandleParameters,
    PrefixSize,
    SavedCall,
    SessionSource,
    at_tool_time,
    notes,
    output_text,
    persist_call,
    reference_scope,
    session_resolver,
)
from toolctx.compaction import before_model_call as run_hook
from toolctx.diagnostics import internal_error
from toolctx.telemetry import events
from toolctx_langchain._messages import MessageAdapter, as_sent, model_arguments, stand_in_metadata
from toolctx_langchain.tools import read_back, read_context_tool, thread_and_task

__all__ = ["ToolContextMiddleware"]

_RUN = "toolctx_run"


class _RunState(AgentState[Any]):
    """The agent's state with the run a conversation without a thread is scoped to (never input or output)."""

    toolctx_run: NotRequired[Annotated[str, PrivateStateAttr]]


class ToolContextMiddleware(AgentMiddleware):
    """Stores every tool call in toolctx; stands in for big and old outputs and arguments; adds ``read_context``.

    Tool calls (``wrap_tool_call`` and ``awrap_tool_call``): the call's arguments
    (without the parameters LangChain injects, such as ``ToolRuntime``, state,
    store or the call id) and the ToolMessage's content (with its artifact, if
    any) are saved in the session, tagged with the latest human message as the
    query and the conversation as the task: the thread, else the run id in the
    config, else the conversation the session serves
    (``ContextSession.conversation``), else a random id the middleware
    gives each run at its first model call (``agent.invoke`` without a config),
    kept in the run's state, so a run without a thread reads back only its own
    outputs. A big output reaches the model
    as a stand-in cut from the stored copy; error results, and any result that
    could not be stored, reach it whole. A successful call whose text content is
    certainly shown whole (:func:`~toolctx.compaction.shown_whole`), without an
    artifact, is queued (its arguments encoded as they are now) and stored with
    the next ones as soon as anything reads the session (or when it ends), which
    costs the tool call less.

    Model calls (``wrap_model_call`` and ``awrap_model_call``): the compaction
    policy of :class:`toolctx.compaction.Compactor` replaces old results and long
    string arguments by stand-ins, in batches (see
    :class:`~toolctx.compaction.CompactionSettings` for every option, passed here
    by keyword, and their defaults, per-tool ``tool_limits`` among them). Calls and
    results stay paired; error results, ``exclude_tools``, tools whose limit is
    ``"never"`` and ``read_context`` are left alone. The ``read_context`` tool
    is offered to the model only once the conversation has a stand-in (the first
    batch waits one model call so that the tool list and the messages change in
    the same call), so a short conversation costs nothing.

    ``write_back`` (on): the stand-ins also go into the agent state, so a
    checkpointed conversation stays small. ``session``: a ContextSession, or a
    function returning one; by default the session current when the agent runs.
    ``read_tool`` (on): register the ``read_context`` tool with the agent.
    ``before_model_call``: called before each model call with the estimated tokens
    of the prompt sent (system prompt, tools and messages), for a tiered memory's trigger:
    ``before_model_call=lambda tokens: store.before_model_call(agent_id, tokens, window)``.
    ``by_reference``: tools whose parameters take a handle in place of a value, as
    ``{"write_file": ["content"]}`` (or ``{"write_file": True}``: every string
    parameter). The model passes ``content="ctx:<id>"`` (or ``#args.<name>``,
    ``#lines=10-40``, ``#path=...``) and the tool runs with the stored value of this
    conversation, the call stored with the handle. A refused handle (malformed,
    unknown or another conversation's, a failed call's, a redacted copy's) is answered
    as the tool's error result, and the tool does not run; so is a refusal raised by a
    tool decorated with ``@persist_context(by_reference=...)``, whose handles resolve
    within the conversation too.
    """

    state_schema = _RunState

    def __new__(cls, *args: Any, session: SessionSource = None, **kwargs: Any) -> ToolContextMiddleware:
        # Only a run of a Conversations index holds a lease, from its start to its end: only then does the agent get
        # the hooks around the run (LangGraph runs each as a node of the graph, twice a turn, at a cost of its own).
        leased = isinstance(session, Conversations) and not issubclass(cls, _Leasing)
        return super().__new__(_leased(cls) if leased else cls)

    def __init__(
        self,
        settings: CompactionSettings | None = None,
        *,
        session: SessionSource = None,
        write_back: bool = True,
        read_tool: bool = True,
        before_model_call: BeforeModelCall | None = None,
        by_reference: Mapping[str, bool | Collection[str]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if before_model_call is not None and not callable(before_model_call):
            raise TypeError(
                f"before_model_call must be a function of the prompt's tokens, got {before_model_call!r:.80}"
            )
        self.before_model_call = before_model_call
        self.settings = CompactionSettings.of(settings, **options)
        self.by_reference = HandleParameters(by_reference)
        self.write_back = bool(write_back)
        self.session = session_resolver(session)
        # With an index, a run holds its conversation's lease from its start to its end (see Conversations).
        self._conversations = session if isinstance(session, Conversations) else None
        self.compactor = Compactor(MessageAdapter(), self.settings, self.session)
        self._prefix: PrefixSize[SystemMessage, BaseTool | dict[str, Any]] = PrefixSize(_system_text, _tool_text)
        self.tools = [read_context_tool(self.session)] if read_tool else []
        # another tag the conversation's calls are stored under (an assembler's conversation id), read back too
        self.reads_also: Callable[[], str | None] | None = None

    # -- the conversation --------------------------------------------------------------

    def _release(self) -> None:
        if self._conversations is None:
            return
        try:
            thread = thread_and_task()[0]
            if thread is not None:
                self._conversations.release(thread)
        except Exception as exc:
            internal_error("could not give up the conversation's lease", exc)

    def _in_turn(self, request: ToolCallRequest | ModelRequest) -> None:
        """A hook of the run: its lease stays renewed (taken again if a step that ended the run's hold before,
        an error another middleware retried, gave it up)."""
        if self._conversations is None:
            return
        thread = thread_and_task(getattr(request.runtime, "config", None))[0]
        if thread is not None:
            self._conversations.seen(thread)

    # -- tool calls ------------------------------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        if request.tool_call["name"] == READ_CONTEXT:
            return self._read(request) if self.tools else handler(request)
        self._in_turn(request)
        run, notes, resolved = self._referenced(request)
        if isinstance(run, ToolMessage):  # (a handle refused: the model is told, the tool does not run)
            return run
        try:
            with reference_scope(functools.partial(self._where, request), request.tool_call["name"], resolved):
                result = handler(run)
        except HandleError as exc:  # (a decorated tool refused a handle passed to it)
            return self._refused(request, exc, notes)
        except BaseException as exc:  # (the run may end, or pause on an interrupt and resume on another worker)
            if isinstance(exc, Exception):
                self._failed(request, exc, notes)
            self._release()  # (a run that goes on, the error shown to the model, takes the lease again)
            raise
        return self._finished(request, result, notes)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        if request.tool_call["name"] == READ_CONTEXT:
            return self._read(request) if self.tools else await handler(request)
        self._in_turn(request)
        run, notes, resolved = self._referenced(request)
        if isinstance(run, ToolMessage):
            return run
        try:
            with reference_scope(functools.partial(self._where, request), request.tool_call["name"], resolved):
                result = await handler(run)
        except HandleError as exc:
            return self._refused(request, exc, notes)
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._failed(request, exc, notes)
            self._release()
            raise
        return self._finished(request, result, notes)

    def _referenced(
        self, request: ToolCallRequest
    ) -> tuple[ToolCallRequest | ToolMessage, tuple[str, ...], Collection[str]]:
        """The request to run (its handles resolved, for a tool of ``by_reference``), the notes to store the call
        with, and the parameters resolved; or the error result answering a refused handle."""
        call = request.tool_call
        if call["name"] not in self.by_reference:
            return request, (), ()
        try:
            session, task = self._where(request)
            tool = getattr(request, "tool", None)
            properties = tool.args if isinstance(tool, BaseTool) else None
            found = self.by_reference.resolve(session, call["name"], call.get("args") or {}, properties, task)
        except HandleError as exc:
            return self._refused(request, exc, ()), (), ()
        except Exception as exc:  # (the conversation could not be told: said, and the tool does not run blind)
            events.handle_unreadable(f"could not resolve the handles passed to tool {call['name']!r}", exc)
            failure = HandleError(
                f"the handles passed to {call['name']} could not be looked up ({type(exc).__name__}); "
                "pass the values themselves.",
                reason="unreadable",
            )
            return self._refused(request, failure, ()), (), ()
        if found is None:
            return request, (), ()
        args, notes, names = found
        return request.override(tool_call={**call, "args": args}), notes, names

    def _refused(self, request: ToolCallRequest, error: HandleError, notes: tuple[str, ...]) -> ToolMessage:
        """The error result that tells the model its handle was refused (stored as the call's error)."""
        call = request.tool_call
        message = ToolMessage(content=str(error), tool_call_id=call.get("id") or "", name=call["name"], status="error")
        shown = self._finished(request, message, notes)
        return shown if isinstance(shown, ToolMessage) else message

    def _save(
        self, where: _Where, request: ToolCallRequest, result: Any, error: Any, notes: tuple[str, ...] = ()
    ) -> SavedCall | None:
        call = request.tool_call
        args = model_arguments(getattr(request, "tool", None), call.get("args") or {})
        return persist_call(
            where[0],
            call["name"],
            args,
            result,
            error=error,
            call_id=call.get("id"),
            task_id=where[1],
            argument_notes=notes,
        )

    def _where(self, request: ToolCallRequest | ModelRequest) -> _Where:
        """The session a call is stored in, and its task (the thread, else the run id, else the run's scope)."""
        thread, task = thread_and_task(getattr(request.runtime, "config", None))
        session = self.session(thread)
        if task is None:
            task = session.conversation
        if task is None:
            state = getattr(request, "state", None)
            run = state.get(_RUN) if isinstance(state, Mapping) else None
            task = run if isinstance(run, str) else None
        return session, task

    def _read(self, request: ToolCallRequest) -> ToolMessage:
        """The middleware's own ``read_context``: it knows the conversation, even one without a thread."""
        call = request.tool_call
        try:
            session, task = self._where(request)
            scope: str | tuple[str, ...] | None = task
            if task is not None and self.reads_also is not None and (also := self.reads_also()) not in (None, task):
                scope = (task, also)
            given = call.get("args")
            text = read_back(session, given if isinstance(given, Mapping) else {}, scope)
        except Exception as exc:
            events.read_back_failed("read_context could not read the session", exc)
            text = "read_context could not read the stored outputs just now; go on without them."
        return ToolMessage(content=text, tool_call_id=call.get("id") or "", name=READ_CONTEXT)

    def _failed(self, request: ToolCallRequest, error: Exception, notes: tuple[str, ...] = ()) -> None:
        try:
            self._save(self._where(request), request, None, error, notes)
        except Exception as exc:
            events.save_failed("store", f"could not store the failed call of tool {request.tool_call['name']!r}", exc)

    def _finished(
        self, request: ToolCallRequest, result: ToolMessage | Command[Any], notes: tuple[str, ...] = ()
    ) -> ToolMessage | Command[Any]:
        try:
            where = self._where(request)
            if isinstance(result, ToolMessage):
                return self._message(where, request, result, notes)
            call_id = request.tool_call.get("id")
            if isinstance(result, Command) and isinstance(result.update, dict):
                messages = result.update.get("messages")
                if isinstance(messages, list):
                    shown = [
                        self._message(where, request, m, notes)
                        if isinstance(m, ToolMessage) and m.tool_call_id == call_id
                        else m
                        for m in messages
                    ]
                    return dataclasses.replace(result, update={**result.update, "messages": shown})
            self._save(where, request, result, None, notes)
        except Exception as exc:
            events.save_failed("store", f"could not store a call of tool {request.tool_call['name']!r}", exc)
        return result

    def _message(
        self, where: _Where, request: ToolCallRequest, message: ToolMessage, notes: tuple[str, ...] = ()
    ) -> ToolMessage:
        content, artifact = message.content, message.artifact
        call = request.tool_call
        # (a copy of the call's arguments in the graph's state, taken now: later changes there are not stored)
        args = _snapshot(model_arguments(getattr(request, "tool", None), call.get("args") or {}))
        text = output_text(content)
        error = ErrorInfo(type="ToolError", message=text[:20_000]) if message.status == "error" else None
        stored = content if artifact is None else {"content": content, "artifact": artifact}
        outcome = at_tool_time(
            self.settings,
            where[0],
            message.name or call["name"],
            args,
            stored,
            text,
            error=error,
            call_id=call.get("id"),
            task_id=where[1],
            argument_notes=notes,
        )
        if outcome.shown is None or outcome.saved is None:
            return message  # (shown as it is; found again by its tool call id: session.find_call)
        meta = stand_in_metadata(message.response_metadata, id=outcome.saved.id, stand_in=True)
        return message.model_copy(update={"content": outcome.shown, "response_metadata": meta})

    # -- model calls -------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        self._in_turn(request)
        prepared, changed, run = self._prepared(request)
        try:
            response = handler(prepared)
        except BaseException:  # (the run ends here unless a middleware around retries: then it is taken again)
            self._release()
            raise
        return self._written_back(response, changed, run)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[Any]],
    ) -> Any:
        self._in_turn(request)
        prepared, changed, run = self._prepared(request)
        try:
            response = await handler(prepared)
        except BaseException:
            self._release()
            raise
        return self._written_back(response, changed, run)

    def _prepared(self, request: ModelRequest) -> tuple[ModelRequest, list[AnyMessage], str | None]:
        """The request to send, the messages whose shown form changed in this call, and the scope made for a run
        that had none (None if it had one)."""
        run = None
        try:
            session, task = self._where(request)
            if task is None:  # a run without a thread, a run id or a conversation: its own scope from its first
                task = run = secrets.token_hex(16)  # model call on (kept in its state by _written_back)
            session_notes = notes(session)
            session_notes.prefix_tokens = self._prefix(request.system_message, request.tools)
            offer = session_notes.offer_read_context  # as the Agents SDK does: decided before this call's edits
            messages, edits = self.compactor.view(request.messages, task, session)
            changed = (
                [m for m, before in zip(messages, request.messages, strict=True) if m is not before] if edits else []
            )
            run_hook(self.before_model_call, session)
            tools = request.tools
            if not offer:
                tools = [t for t in tools if getattr(t, "name", None) != READ_CONTEXT]
            elif not edits and _same(messages, request.messages):
                return request, changed, run  # the usual call once compacted forms are written back: no copy
            return request.override(messages=messages, tools=tools), changed, run
        except Exception as exc:  # compaction is an optimisation: never break the model call
            events.compaction_failed("could not compact the conversation; sending it unchanged", exc)
            return request, [], run

    def _written_back(self, response: Any, changed: list[AnyMessage], run: str | None = None) -> Any:
        """The response, with what goes into the agent state: the messages' compacted forms (``write_back``) and
        the scope of a run that had none (``run``)."""
        update: dict[str, Any] = {} if run is None else {_RUN: run}
        if self.write_back:
            keep_ids = [m for m in changed if m.id]  # the state's reducer replaces messages by id
            if keep_ids:
                update["messages"] = keep_ids
        if not update:
            return response
        if not isinstance(response, ModelResponse):  # (LangChain hands every layer a ModelResponse: commands of the
            return response  # layers inside are gathered apart, and both go in)
        return ExtendedModelResponse(model_response=response, command=Command(update=update))


_Where = tuple[ContextSession, str | None]  # a tool call's session and its task
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _snapshot(args: dict[str, Any]) -> Mapping[str, Any]:
    """The model's arguments (a fresh dict) as a call is queued with them: encoded now unless nothing in them
    can change later (``queue_call`` encodes a plain dict at once, and reads another mapping when it stores it)."""
    for value in args.values():
        if type(value) not in _SCALARS:
            return args  # (a list or dict of the graph's state: encoded now)
    return MappingProxyType(args)


def _system_text(message: SystemMessage) -> str:
    return output_text(message.content)


def _tool_text(tool: BaseTool | dict[str, Any]) -> bytes:
    """What the model is sent for a tool, near enough: its name, description and arguments' schema.

    (Not ``convert_to_openai_tool``: on a tool made per conversation, building the
    exact definition costs milliseconds.) Nothing for ``read_context``: what
    matters is the prompt before it is offered. A tool given as a dict (one the
    provider defines, say) counts as its JSON.
    """
    if isinstance(tool, BaseTool):
        if tool.name == READ_CONTEXT:
            return b""
        return as_sent([tool.name, tool.description, tool.args])
    return as_sent(tool)


def _same(shown: list[AnyMessage], sent: Sequence[AnyMessage]) -> bool:
    """Whether the policy left every message of the request as it is (the very same objects)."""
    return len(shown) == len(sent) and all(map(operator.is_, shown, sent))


class _Leasing(AgentMiddleware):
    """Over a :class:`~toolctx.Conversations` index, a run of a thread holds its conversation's lease from its
    start (another worker's turn under way: it waits, then SessionBusyError) to its end, when it goes to the next
    turn, on whichever worker. Mixed in before the middleware's class: a subclass's own hooks still run."""

    _conversations: Conversations | None
    _release: Callable[[], None]

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        try:
            thread = thread_and_task()[0]
        except Exception as exc:
            internal_error("could not read the run's config", exc)
            thread = None
        if thread is not None and self._conversations is not None:
            self._conversations.hold(thread)
        return super().before_agent(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        try:
            return super().after_agent(state, runtime)
        finally:
            self._release()


_LEASED: dict[type[ToolContextMiddleware], type[ToolContextMiddleware]] = {}


def _leased(middleware: type[ToolContextMiddleware]) -> type[ToolContextMiddleware]:
    """``middleware`` (the class, or a subclass of it) with the lease hooks, under the same name (the graph's nodes
    are named after it); one class for each."""
    found = _LEASED.get(middleware)
    if found is None:
        names = {"__module__": middleware.__module__, "__qualname__": middleware.__qualname__}
        found = _LEASED.setdefault(middleware, type(middleware.__name__, (_Leasing, middleware), names))
    return found

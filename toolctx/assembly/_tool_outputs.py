"""ToolOutputPlugin: tool results stored in the session and shown restorably, in the history or in a window.

Two ways in. A result of a call the history makes (``add_tool_result``, which
calls :meth:`ToolOutputPlugin.record`) lives in the history, next to its call:
the plugin hands the history to :class:`toolctx.compaction.Compactor`, the
policy the framework adapters use, which replaces old results and long arguments
by restorable stand-ins in cache-friendly batches. A result added on its own
(:meth:`ToolOutputPlugin.add_output`, seed 004's ``addOutput``) goes to a window
of recent outputs, the plugin's component. Either way the result is stored when
it arrives and a big one is shown as a stand-in at once. When the assembler needs
room, the window keeps its newest half, then the plugin makes a history batch of
everything the policy allows (never the ``keep`` most recent results, error
results or excluded tools). Nothing is dropped: every output is in the session,
and every stand-in names the handle ``read_context`` reads back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from toolctx._naming import handle
from toolctx.assembly._measure import arguments_json
from toolctx.assembly._types import Component, HistoryMessage, ToolCallSpec, config_error
from toolctx.compaction import (
    DEFAULT_READ_LIMIT,
    READ_CONTEXT_DEFINITION,
    CompactionSettings,
    Compactor,
    Item,
    ToolCall,
    at_tool_time,
    is_stand_in,
    notes,
    output_text,
    read_context,
)
from toolctx.errors import ConfigError
from toolctx.models import ErrorInfo
from toolctx.sessions import ContextSession, current_session
from toolctx.tokens import TokenCounter, estimate_tokens

__all__ = ["READ_CONTEXT_DEFINITION", "HistoryItemAdapter", "ToolOutput", "ToolOutputPlugin", "resolve_session"]


def resolve_session(session: ContextSession | Callable[[], ContextSession] | None) -> Callable[[], ContextSession]:
    """A function giving the session: a fixed one, a function returning one, or (None) the current one."""
    if session is None:
        return current_session
    if isinstance(session, ContextSession):
        return lambda: session
    if callable(session):
        return session
    raise ConfigError(
        f"session must be a toolctx ContextSession, a function returning one, or None; got {session!r:.80}"
    )


class HistoryItemAdapter:
    """The compaction policy's view of :class:`HistoryMessage` objects.

    Pinned messages, and the results of a pinned message's calls, are described
    as the policy describes error results: left alone. Sizes are estimated as the
    framework adapters estimate theirs (arguments as compact JSON), so the policy
    decides the same batches at the same calls for the assembler as for them.
    """

    def __init__(self) -> None:
        self.pinned_calls: set[str] = set()

    def fingerprint(self, item: HistoryMessage) -> Hashable:
        return (item.role, item.id, hash(item.content), item.pinned)

    def describe(self, item: HistoryMessage) -> Item:
        if item.role == "tool":
            return Item(
                estimate_tokens(item.content),
                result_of=item.tool_call_id,
                tool=item.name or "",
                text=item.content,
                is_error=item.metadata.get("is_error") is True or item.pinned or item.tool_call_id in self.pinned_calls,
            )
        if item.pinned:
            self.pinned_calls.update(c.id for c in item.tool_calls)
        said = item.content if item.role == "assistant" and not item.pinned else ""
        if item.tool_calls:
            tokens = estimate_tokens(item.content)
            calls = []
            for c in item.tool_calls:
                sent = orjson.dumps(c.arguments, default=str)
                sent_tokens = estimate_tokens(sent)
                tokens += sent_tokens + estimate_tokens(c.name)
                calls.append(ToolCall(c.id, c.name, c.arguments, len(sent), sent_tokens))
            return Item(tokens, calls=tuple(calls), text=said)
        return Item(estimate_tokens(item.content), text=said, question=item.content if item.role == "user" else None)

    def apply(self, item: HistoryMessage, text: str | None, args: Mapping[str, Mapping[str, Any]]) -> HistoryMessage:
        if item.role == "tool" and text is not None:
            return item.model_copy(update={"content": text})
        update: dict[str, Any] = {}
        if item.tool_calls and args:
            update["tool_calls"] = tuple(
                c.model_copy(update={"arguments": dict(args[c.id])}) if c.id in args else c for c in item.tool_calls
            )
        if text is not None and item.role == "assistant":
            update["content"] = text
        return item.model_copy(update=update) if update else item


class ToolOutput(BaseModel):
    """One result added with :meth:`ToolOutputPlugin.add_output`, as its window keeps it.

    ``output``: what the model is shown (the whole text, or a stand-in naming the
    handle when it is big); ``handle``: ``ctx:<id>`` of the stored copy, None if
    storing it failed (the output is then shown whole); ``timestamp``: when it was added.
    """

    model_config = ConfigDict(frozen=True)

    tool: str
    output: str
    handle: str | None = None
    is_error: bool = False
    timestamp: float = 0.0


class ToolOutputPlugin:
    """Stores tool results and shows them restorably with the core policy (see the module docstring).

    ``settings`` (or its options by keyword): :class:`~toolctx.compaction.CompactionSettings`;
    at its defaults the policy compacts on its own once the conversation passes
    5,000 estimated tokens, as the framework adapters do; with a high
    ``high_water`` it compacts only when the assembler needs room. ``session``: a
    ContextSession or a function returning one (the current session by default).
    ``max_outputs`` (10, seed 004's ``maxOutputs``): how many of the outputs added
    with :meth:`add_output` the component shows, newest last; the plugin holds up to
    twice as many, then keeps the newest ``max_outputs`` (all stay in the session).
    """

    compactable = True

    def __init__(
        self,
        settings: CompactionSettings | None = None,
        *,
        session: ContextSession | Callable[[], ContextSession] | None = None,
        name: str = "tool_outputs",
        priority: int = 10,
        max_outputs: int = 10,
        **options: Any,
    ) -> None:
        if isinstance(max_outputs, bool) or not isinstance(max_outputs, int) or max_outputs < 1:
            raise ConfigError(f"max_outputs must be a whole number >= 1, got {max_outputs!r:.80}")
        self.max_outputs = max_outputs
        self._outputs: list[ToolOutput] = []  # added with add_output, oldest first
        self.settings = CompactionSettings.of(settings, **options)
        self.name = name
        self.priority = priority
        self.session = resolve_session(session)
        self.adapter = HistoryItemAdapter()
        self.compactor: Compactor[HistoryMessage] = Compactor(self.adapter, self.settings, self.session)
        # The conversation this plugin serves (an assembler's, once registered with one): its calls are stored
        # under it, and only its calls read back.
        self._key = uuid.uuid4().hex
        self._last: Sequence[HistoryMessage] = ()
        self._shown: list[HistoryMessage] = []  # what the last history_view() returned for them
        self._offer = False  # read_context in this call's tool list

    def __repr__(self) -> str:
        compacted = len(self.compactor.decisions(self._key)["results"])
        return f"ToolOutputPlugin({self.name!r}, outputs={len(self._outputs)}, compacted={compacted})"

    @property
    def conversation(self) -> str:
        """The conversation the plugin serves: the calls it stores go under it, and only its calls read back."""
        return self._key

    def join(self, conversation: str) -> None:
        """Serve ``conversation`` (an assembler's ``conversation_id``; the assembler calls this when the plugin
        is registered): the decisions made so far go with the plugin."""
        if conversation != self._key:
            self.compactor.adopt(conversation, self.compactor.decisions(self._key))
            self._key = conversation

    def get_component(self) -> Component | None:
        """The window of recent outputs added with :meth:`add_output` (None while there are none).

        Results of calls in the history are not in it: they are shown in the history, next to their calls.
        """
        window = self.recent_outputs()
        if not window:
            return None
        text = "\n\n".join(_entry(o) for o in window)
        return Component(name=self.name, content=text, priority=self.priority, compactable=self.compactable)

    def add_output(
        self,
        tool_name: str,
        result: Any,
        *,
        arguments: Mapping[str, Any] | None = None,
        error: bool | BaseException = False,
    ) -> ToolOutput:
        """Add a tool's result to the window of recent outputs: stored, shown as a stand-in if big.

        For results that answer no tool call in the history (use the assembler's
        ``add_tool_result`` for those). The output is stored exactly as
        :meth:`record` stores a call's result; the component shows the newest
        ``max_outputs``.
        """
        if not isinstance(tool_name, str) or not tool_name.strip():
            raise ConfigError(f"tool_name must be a non-empty str, got {tool_name!r:.80}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ConfigError(f"arguments must be a dict of the call's arguments or None, got {arguments!r:.80}")
        text, meta = self._store_and_show(tool_name, dict(arguments or {}), result, error, None)
        stored = meta.get("toolctx")
        added = ToolOutput(
            tool=tool_name,
            output=text,
            handle=None if stored is None else handle(stored),
            is_error=meta.get("is_error") is True,
            timestamp=time.time(),
        )
        self._outputs.append(added)
        if len(self._outputs) > 2 * self.max_outputs:  # hold a bounded number (seed 004's rule)
            del self._outputs[: -self.max_outputs]
        return added

    def recent_outputs(self) -> list[ToolOutput]:
        """The outputs the component shows: the newest ``max_outputs`` added with :meth:`add_output`, oldest first."""
        return self._outputs[-self.max_outputs :]

    def record(
        self, call: ToolCallSpec, output: Any, *, error: bool | BaseException = False
    ) -> tuple[str, dict[str, Any]]:
        """Store one result; the text the model is shown (a stand-in if big) and metadata for its message."""
        return self._store_and_show(call.name, call.arguments, output, error, call.id)

    def _store_and_show(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        output: Any,
        error: bool | BaseException,
        call_id: str | None,
    ) -> tuple[str, dict[str, Any]]:
        """Store a result and decide what the model is shown: the one tool-time step of both ways in."""
        session = self.session()
        text = output_text(output)
        failure: BaseException | ErrorInfo | None = None
        if isinstance(error, BaseException):
            failure = error
        elif error:
            failure = ErrorInfo(type="ToolError", message=text[:20_000])
        # (stored now, never queued: the plugin hands the call's id on at once)
        outcome = at_tool_time(
            self.settings,
            session,
            tool,
            arguments,
            output,
            text,
            error=failure,
            call_id=call_id,
            task_id=self._key,
            queue=False,
        )
        meta: dict[str, Any] = {"is_error": True} if failure is not None else {}
        if outcome.saved is not None:
            meta["toolctx"] = outcome.saved.id
        return (text if outcome.shown is None else outcome.shown), meta

    def prompt_prefix(self, tokens: int) -> None:
        """The tokens of the system message and the tool definitions the assembler sends before the history:
        the policy weighs the conversation's first stand-in against re-sending them, as in the adapters."""
        notes(self.session()).prefix_tokens = tokens

    def history_view(self, messages: Sequence[HistoryMessage]) -> list[HistoryMessage]:
        """The history with the policy's stand-ins (making a batch when the policy says so).

        Whether this call offers ``read_context`` is decided as the adapters decide
        it: before the policy looks at the history. The policy says it is needed one
        call before its first batch, so the tool list and the messages change in
        the same call (one prompt-cache break, not two). A stand-in shown in the
        very call that first asked for it (a compaction the assembler forced, or an
        output that reached the history whole) brings the tool in at once.
        """
        self._last = messages
        session = self.session()
        session_notes = notes(session)
        offered = session_notes.offer_read_context
        shown, _ = self.compactor.view(messages, self._key, session)
        self._offer = offered or (session_notes.offer_read_context and any(map(_shows_stand_in, shown)))
        self._shown = shown
        return list(shown)

    def pinned(self, messages: Sequence[HistoryMessage]) -> None:
        """``messages`` were pinned: their calls' results and arguments are shown whole again, and never compacted."""
        ids = []
        for message in messages:
            ids += [c.id for c in message.tool_calls] + ([message.tool_call_id] if message.tool_call_id else [])
        self.adapter.pinned_calls.update(ids)
        self.compactor.forget(self._key, ids)  # (the policy reads the history again, with the pins)

    def tool_definitions(self) -> list[dict[str, Any]]:
        """``read_context``, once the conversation (or the window of recent outputs) shows a stand-in."""
        offer = self._offer or any(is_stand_in(o.output) for o in self.recent_outputs())
        return [READ_CONTEXT_DEFINITION] if offer else []

    def compact(self, target_tokens: int, counter: TokenCounter) -> int:
        """Make room; the tokens it freed.

        The window of recent outputs keeps its newest half (seed 004's rule); if
        the component still needs more than ``target_tokens``, or there was no
        window, the plugin makes a history batch now, of every old result,
        argument and text the policy allows.
        """
        freed = 0
        if self._outputs:
            before = self.get_component()
            del self._outputs[: max(0, len(self._outputs) - self.max_outputs // 2)]
            after = self.get_component()
            freed = counter.count(before.content if before else "") - counter.count(after.content if after else "")
            if counter.count(after.content if after else "") <= target_tokens:
                return freed
        shown = self._shown  # this call's view, made just before: the policy is not asked twice
        made, _ = self.compactor.view(self._last, self._key, self.session(), now=True)
        if len(shown) != len(made):
            return freed  # the history changed since the view: the assembler measures what was freed anyway
        return freed + sum(
            _tokens(a, counter) - _tokens(b, counter) for a, b in zip(shown, made, strict=True) if a is not b
        )

    def read(self, ref: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT, part: str = "result") -> str:
        """The body of a ``read_context`` tool call: the stored text behind a handle.

        See :func:`toolctx.compaction.read_context` for the arguments. It reads only
        what its conversation stored: its calls and the assembler's compacted history.
        """
        return read_context(self.session(), ref, offset, limit, part, scope=self._key)

    def get_state(self) -> dict[str, Any]:
        return {
            "conversation": self._key,
            **self.compactor.decisions(self._key),
            "offered": notes(self.session()).offer_read_context,
            "outputs": [o.model_dump(mode="json") for o in self._outputs],
        }

    def restore_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise ConfigError(f"a tool-output plugin state is a dict (see get_state), got {state!r:.80}")
        # Everything is read before anything changes: a bad state leaves the plugin as it was.
        conversation = state.get("conversation", self._key)
        if not isinstance(conversation, str) or not conversation:
            raise ConfigError(f"a tool-output plugin state names its conversation by a str, got {conversation!r:.80}")
        decisions = {name: state.get(name) for name in ("results", "args")}
        if any(isinstance(made, dict) for made in decisions.values()):
            decisions = {}  # (a state saved before decisions named their content: the policy decides again)
        try:
            outputs = [ToolOutput.model_validate(o) for o in state.get("outputs") or ()]
            self.compactor.adopt(conversation, decisions)
        except ValidationError as exc:
            raise config_error("tool-output plugin state", exc) from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"a tool-output plugin state has results and args as lists: {exc}") from None
        self._key = conversation
        self._outputs = outputs
        if state.get("offered"):
            notes(self.session()).offer_read_context = True


def _entry(output: ToolOutput) -> str:
    """One output of the window: a header naming the tool and the handle, then what the model is shown."""
    header = " ".join(p for p in (output.tool, output.handle, "error" if output.is_error else None) if p)
    return f"[{header}]\n{output.output}"


def _shows_stand_in(message: HistoryMessage) -> bool:
    return is_stand_in(message.content) or any(
        isinstance(v, str) and is_stand_in(v) for c in message.tool_calls for v in c.arguments.values()
    )


def _tokens(message: HistoryMessage, counter: TokenCounter) -> int:
    return counter.count(message.content) + sum(counter.count(arguments_json(c.arguments)) for c in message.tool_calls)

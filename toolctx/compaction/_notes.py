"""What the adapters of one session tell each other: stand-ins shown, the conversation's size, the question."""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from toolctx._hashing import hash_query
from toolctx._internal import internal_error
from toolctx.sessions import ContextSession, Conversations, current_session

__all__ = ["BeforeModelCall", "Notes", "Resolver", "SessionSource", "before_model_call", "notes", "session_resolver"]

SessionSource = ContextSession | Conversations | Callable[..., ContextSession] | None
"""Where an adapter finds its session: a fixed one, :class:`~toolctx.Conversations` (one per conversation),
a function of the conversation key or of nothing, or None for the current one."""

Resolver = Callable[[str | None], ContextSession]
"""The session for a conversation key (None when the framework gives none)."""


def session_resolver(session: SessionSource) -> Resolver:
    """A function giving the session for a conversation key; decided once, here, not per call.

    - None: the current session (``with toolctx.session()``, else the default);
    - a :class:`ContextSession`: always that one;
    - :class:`~toolctx.Conversations`: the conversation's session, or the current
      one when the framework names no conversation;
    - a function taking one argument: called with the key (a LangGraph thread id,
      or None); a function taking none: called as it is.
    """
    if session is None:
        return lambda key: current_session()
    if isinstance(session, ContextSession):
        return lambda key: session
    if isinstance(session, Conversations):
        return lambda key: current_session() if key is None else session.get(key)
    if callable(session):
        if _takes_key(session):
            return session
        factory = session
        return lambda key: factory()
    raise TypeError(
        "session must be a toolctx ContextSession, toolctx.Conversations, a function returning a session "
        f"(of the conversation key, or of nothing), or None; got {session!r:.80}"
    )


def _takes_key(factory: Callable[..., ContextSession]) -> bool:
    """Whether ``factory`` can be called with one positional argument (the conversation key)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called as it is
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return True
    return any(p.kind in positional for p in parameters)


@dataclass(init=False)
class Notes:
    """Per session: whether the model may need ``read_context``, the question tool calls answer, the prompt's size.

    The adapters set ``prefix_tokens`` on each model call: the first stand-in
    brings ``read_context`` into the tool list, which comes first in the prompt,
    so the whole prompt is sent again uncached once, not only the messages.
    Once offered, ``read_context`` is noted with the session itself, so a later
    turn that resumes it (in a new process, say) offers it from its first call.
    """

    _offer: bool = False
    _shared = False  # (the session is in a store other workers write)
    _session: weakref.ref[ContextSession] | None = None
    query_id: str | None = None
    shown_tokens: int = 0  # the conversation as the model was last shown it, estimated
    prefix_tokens: int = 0  # what the model is sent before it (tool definitions, system prompt), estimated
    model_calls: int = 0  # model calls the conversation has had

    def __init__(
        self,
        offer_read_context: bool = False,
        query_id: str | None = None,
        shown_tokens: int = 0,
        prefix_tokens: int = 0,
        model_calls: int = 0,
        *,
        session: ContextSession | None = None,
    ) -> None:
        """``session``: the session whose first offer of ``read_context`` is noted with it."""
        self._offer = offer_read_context
        self._session = None if session is None else weakref.ref(session)
        self._shared = session is not None and session.store.shared  # (others may offer it: asked of the store)
        self.query_id, self.shown_tokens, self.prefix_tokens, self.model_calls = (
            query_id,
            shown_tokens,
            prefix_tokens,
            model_calls,
        )

    @property
    def offer_read_context(self) -> bool:
        """Whether the model is offered ``read_context`` (a stand-in exists, or is about to).

        In a shared store, another worker may have offered it since: asked of the store until it has."""
        if not self._offer and self._shared and self._session is not None:
            session = self._session()
            if session is not None and session.noted(_OFFERED):
                self._offer = True
        return self._offer

    @offer_read_context.setter
    def offer_read_context(self, value: bool) -> None:
        if value and not self._offer:
            session = self._session() if self._session is not None else None
            if session is not None:
                session.note(_OFFERED)  # (once per session: it only ever goes from False to True)
        self._offer = bool(value)

    def question(self, text: str | None) -> None:
        self.query_id = None if text is None else hash_query(text)


_OFFERED = "read_context_offered"  # noted with a session once it offered read_context


def notes(session: ContextSession) -> Notes:
    """The notes kept with ``session`` (made on first use, gone with the session)."""
    return session.attached(Notes, _first_notes)


def _first_notes(session: ContextSession) -> Notes:
    # A resumed session (a later turn, maybe in a new process) offers read_context if it did before;
    # one kept before that was noted offers it if it holds calls (its conversation may show handles).
    offered = session.noted(_OFFERED)
    return Notes(offered if offered is not None else len(session) > 0, session=session)


BeforeModelCall = Callable[[int], object]
"""Called before each model call with the estimated tokens of the prompt about to be sent (system prompt, tools
and messages)."""


def before_model_call(hook: BeforeModelCall | None, session: ContextSession) -> None:
    """Run an adapter's ``before_model_call`` hook (a memory's flash-save trigger, say); it never breaks the call.

    For a tiered memory: ``before_model_call=lambda tokens: store.before_model_call(agent_id, tokens, window)``.
    """
    if hook is None:
        return
    try:
        found = notes(session)
        hook(found.prefix_tokens + found.shown_tokens)
    except Exception as exc:
        internal_error("the before_model_call hook raised; the model call goes on", exc)

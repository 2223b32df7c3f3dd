"""Handles as arguments: a model passes ``ctx:<id>`` where a tool expects a value, and the tool gets the value.

A tool (or some of its parameters) opts in (``@persist_context(by_reference=...)``,
or the adapters' ``by_reference`` setting). In those parameters a value that is one
handle, written without spaces, is replaced by what it names before the tool runs:

=================================  ===============================================================
``ctx:<id>``                       the stored output of that call, as ``read_context`` reads it
``ctx:<id>#args.<name>``           one argument of that call (``#args``: all of them, as JSON)
``ctx:<id>#lines=10-40``           lines 10 to 40 of the output, counted from 1 (``10-``: to the end)
``ctx:<id>#path=$.items[0]``       the value at a JSON path of the output
``ctx:<id>#args.content&lines=3-`` a part and a selection together (``&`` between them; ``path=`` last)
=================================  ===============================================================

The lines and the path are cut by the very functions ``read_context`` uses
(:mod:`toolctx._navigate`), so a selection read back is a selection passed on. A
parameter declared as a string gets the exact text; one declared as anything else
(``dict``, ``list[int]``, a JSON schema type other than ``"string"``) gets the JSON
value: the stored value itself, or a stored string that holds JSON, decoded. An
argument that was itself passed by reference reads as the value it named.

A handle is refused (:class:`~toolctx.errors.HandleError`, its message written for
the model) when it is malformed, names nothing this conversation stored (another
conversation's handle reads exactly like an unknown one), names a failed call, or
names a stored copy whose selection holds the redactor's marker (passing it would
write ``[REDACTED]`` where the secret was). Text that starts with ``ctx:`` but holds
a space or a line break is a value, not a handle.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from toolctx._naming import HANDLE_PREFIX, POINTER_ID, handle
from toolctx._navigate import NavigationError, line_span, output_text, value_at
from toolctx.errors import HandleError
from toolctx.models import StoredContext
from toolctx.sessions._current import current_session
from toolctx.sessions._records import CallParts
from toolctx.sessions._tags import current_tags
from toolctx.telemetry import events

if TYPE_CHECKING:
    from toolctx.sessions._session import ContextSession

__all__ = [
    "Reference",
    "Scope",
    "Where",
    "argument_text",
    "host_scope",
    "parse_reference",
    "reference_scope",
    "resolve_arguments",
    "resolve_reference",
    "stored_text",
]

Scope = int | str | tuple[int | str | None, ...] | None
"""The conversations whose calls a lookup may read: a task id, a tuple of them, or None for the whole session."""

_NO_SPACE = re.compile(r"\S+")
_MAX_HOPS = 8  # (an argument passed by reference, itself read by reference: how far it is followed)


class Reference(NamedTuple):
    """A handle passed as an argument, parsed: the stored call's ``id``, which ``part`` (``"result"``, ``"args"``
    or ``"args.<name>"``), and the ``lines`` or JSON ``path`` of it selected (None: all of it)."""

    text: str
    id: str
    part: str = "result"
    lines: str | None = None
    path: str | None = None


def parse_reference(value: object) -> Reference | None:
    """``value`` as a handle passed as an argument; None when it is not one (not a string, not starting with
    ``ctx:``, or text with spaces in it). HandleError when it is written as one but cannot be read."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text.startswith(HANDLE_PREFIX) or not _NO_SPACE.fullmatch(text):
        return None
    pointer_id, hashed, fragment = text[len(HANDLE_PREFIX) :].partition("#")
    if not POINTER_ID.fullmatch(pointer_id) or (hashed and not fragment):
        raise HandleError(f"{text!r:.120} is not a handle: {_SYNTAX}", reason="malformed")
    part, lines, path = "result", None, None
    rest = fragment
    while rest:
        if rest.startswith("path="):
            path, rest = rest[5:], ""  # (a path may hold "&": it comes last and takes the rest)
            break
        selector, _, rest = rest.partition("&")
        if selector.startswith("lines=") and lines is None:
            lines = selector[6:]
        elif (selector in ("result", "args") or selector.startswith("args.")) and part == "result":
            part = selector
        else:
            raise HandleError(f"{text!r:.120} cannot be read at {selector!r:.60}: {_SYNTAX}", reason="malformed")
    if part == "args." or (lines is not None and path is not None) or path == "":
        raise HandleError(f"{text!r:.120} is not a handle: {_SYNTAX}", reason="malformed")
    return Reference(text, pointer_id, part, lines, path)


_SYNTAX = (
    "write ctx:<id> for a stored output, ctx:<id>#args.<name> for an argument of that call, and add "
    "#lines=10-40 (after a part: &lines=10-40) or #path=$.key for a selection of it."
)


Where = Callable[[], "tuple[ContextSession, Scope]"]
"""How an adapter says, when asked, in which session and scope its conversation's handles resolve."""


class _Host(NamedTuple):
    where: Where
    tool: str | None
    resolved: frozenset[str]


_host: ContextVar[_Host | None] = ContextVar("toolctx_reference_host", default=None)


@contextlib.contextmanager
def reference_scope(where: Where, tool: str | None = None, resolved: Collection[str] = ()) -> Iterator[None]:
    """Within the block (a framework's tool call), handles passed as arguments resolve in the session and scope
    ``where()`` gives (called only if a handle is passed): the conversation's. The parameters ``resolved`` of
    ``tool`` were resolved already, by the adapter, and are not resolved again."""
    token = _host.set(_Host(where, tool, frozenset(resolved)))
    try:
        yield
    finally:
        _host.reset(token)


def host_scope(tool: str) -> tuple[ContextSession, Scope, frozenset[str]]:
    """Where handles passed to ``tool`` resolve here, and which of its parameters need no resolving: the
    session and scope an adapter set around the call (:func:`reference_scope`), else the current session and
    :func:`ambient_scope`."""
    host = _host.get()
    if host is not None:
        session, scope = host.where()
        return session, scope, host.resolved if host.tool == tool else frozenset()
    session = current_session()
    return session, ambient_scope(session), frozenset()


def within(session: ContextSession, scope: Scope) -> tuple[Any, ...] | None:
    """The task ids a read in ``session`` may reach for ``scope`` (None: any call): a ``Conversations`` session
    is one conversation's, so every call it holds is (what an adapter, an assembler or the application stored)."""
    if scope is None or session.conversation is not None:
        return None
    return scope if isinstance(scope, tuple) else (scope,)


def ambient_scope(session: ContextSession) -> Scope:
    """The calls of ``session`` a handle may be read from when no scope is given: all of them (None) in a
    session that serves one conversation (a ``Conversations`` one: whatever stored them, an adapter, an
    assembler or the application, they are that conversation's); else those of the conversation an adapter set
    around the call (:func:`reference_scope`), else of the enclosing ``task()`` block's task, else all.

    The last two follow the caller's context: a thread started without it (a pool that does not copy
    ``contextvars``) reads all the session's calls, so code serving several conversations from one session
    there passes its scope itself."""
    if session.conversation is not None:
        return None
    host = _host.get()
    if host is not None:
        hosted, scope = host.where()
        if hosted is session:
            return scope
    return current_tags.get().task_id


def stored_text(context: StoredContext | CallParts) -> str:
    """The full text of a stored output, as a model would have been shown it."""
    result = context.result
    if isinstance(result, dict) and set(result) == {"content", "artifact"}:
        result = result["content"]  # a chat tool message: what the model saw is the content
    text = output_text(result)
    if context.error is not None and not text:
        text = f"{context.error.type}: {context.error.message}"
    return text


def argument_text(context: StoredContext | CallParts, name: str | None = None) -> str | None:
    """All stored arguments as JSON, or one of them (a string as it is), or None if there is no such one."""
    if name is None:
        return orjson.dumps(context.args).decode()
    if name not in context.args:
        return None
    value = context.args[name]
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def resolve_reference(
    session: ContextSession, reference: Reference, *, scope: Scope = None, decoded: bool = False, name: str = "value"
) -> Any:
    """What ``reference`` names in ``session``, read only from calls of ``scope``: the exact text, or with
    ``decoded`` the JSON value. HandleError (its message for the model, about argument ``name``) if refused."""
    scopes = within(session, scope)
    for _ in range(_MAX_HOPS):
        value = _read(session, reference, scopes, decoded, name)
        if not (reference.part.startswith("args.") and reference.lines is None and reference.path is None):
            return value
        chained = parse_reference(value) if isinstance(value, str) else None
        if chained is None:  # (an argument passed by reference is stored as its handle: it reads as what it named)
            return value
        reference = chained
    raise HandleError(
        f"the {name} argument: {reference.text} names a handle naming a handle, too many times over.", reason="chain"
    )


def _read(session: ContextSession, ref: Reference, scopes: tuple[Any, ...] | None, decoded: bool, name: str) -> Any:
    shown = handle(ref.id)
    try:
        parts = session.parts_of(ref.id)
    except Exception as exc:  # (a store that cannot be read just now: said, never raised as something else)
        raise HandleError(
            f"the {name} argument: {shown} could not be read just now ({type(exc).__name__}: {exc!s:.200}); "
            "pass the value itself.",
            reason="unreadable",
        ) from exc
    if parts is None or (scopes is not None and parts.task_id not in scopes):
        raise HandleError(
            f"the {name} argument: no stored output {shown} in this conversation. Pass a handle from a stand-in of "
            "this conversation (written ctx:<id>), or the value itself.",
            reason="unknown",
        )
    if ref.part == "result" and parts.error is not None:
        raise HandleError(
            f"the {name} argument: {shown} is a call that failed ({parts.error.type}); it has no output to pass. "
            "Pass the value itself.",
            reason="error",
        )
    value: Any
    if ref.part == "result":
        value = parts.result
        if isinstance(value, dict) and set(value) == {"content", "artifact"}:
            value = value["content"]
        text = output_text(value)
    elif ref.part == "args":
        value = parts.args
        text = orjson.dumps(value).decode()
    else:
        key = ref.part[5:]
        if key not in parts.args:
            raise HandleError(
                f"the {name} argument: {shown} has no argument {key!r:.80}; its arguments are {sorted(parts.args)}.",
                reason="part",
            )
        value = parts.args[key]
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
    named = shown + ("" if ref.part == "result" else f" {ref.part}")
    try:
        if ref.lines is not None:
            lines, first, last = line_span(text, named, ref.lines)
            value = text = "".join(lines[first - 1 : last])
        elif ref.path is not None:
            value, _ = value_at(text, named, ref.path)
            text = value if isinstance(value, str) else orjson.dumps(value).decode()
    except NavigationError as exc:
        raise HandleError(f"the {name} argument: {exc}", reason="selection") from None
    redactor = session.redactor
    if redactor is not None and redactor.replacement and redactor.replacement in text:
        raise HandleError(
            f"the {name} argument: the stored copy of {ref.text} has secrets redacted "
            f"(it holds {redactor.replacement}), so "
            f"passing it would put {redactor.replacement} where the secret was. Pass the value itself.",
            reason="redacted",
        )
    if not decoded:
        return text
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


@events.refusals
def resolve_arguments(
    session: ContextSession,
    args: Mapping[str, Any],
    names: Collection[str],
    *,
    scope: Scope = None,
    decoded: Collection[str] = (),
) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """``args`` with the handles passed in the parameters ``names`` replaced by what they name (those of
    ``decoded`` as JSON values), and a note for each ("content passed by reference: ctx:<id>"); None when no
    such parameter holds a handle (the usual call). HandleError for the first one refused."""
    resolved: dict[str, Any] | None = None
    notes: list[str] = []
    for name in names:
        try:
            reference = parse_reference(args.get(name))
        except HandleError as exc:
            raise HandleError(f"the {name} argument: {exc}", reason=exc.reason) from None
        if reference is None:
            continue
        if resolved is None:
            resolved = dict(args)
        resolved[name] = resolve_reference(session, reference, scope=scope, decoded=name in decoded, name=name)
        notes.append(f"{name} passed by reference: {reference.text}")
    return None if resolved is None else (resolved, tuple(notes))

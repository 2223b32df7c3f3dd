"""Events: what the assembler tells its listeners (budget warnings, compactions, history changes, errors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from toolctx._internal import internal_error
from toolctx.errors import ConfigError

__all__ = ["EVENTS", "Event", "EventName", "Events"]

EventName = Literal[
    "message_added",
    "history_cleared",
    "budget_warning",
    "budget_critical",
    "compacted",
    "plugin_error",
    "prepared",
    "state_restored",
]
EVENTS: tuple[str, ...] = get_args(EventName)


class Event:
    """One event: its ``name`` and what it is about (``data``: the message, budget, log, plugin and error...)."""

    __slots__ = ("data", "name")

    def __init__(self, name: str, **data: Any) -> None:
        self.name = name
        self.data = data

    def __repr__(self) -> str:
        return f"Event({self.name!r}, {sorted(self.data)})"


class Events:
    """Listeners by event name; a listener is a plain function of one :class:`Event`.

    A listener that raises is reported (logged and warned) and the others still
    run: listening never breaks the agent.
    """

    def __init__(self) -> None:
        self._listeners: dict[str, list[Callable[[Event], Any]]] = {}

    def on(self, name: str, listener: Callable[[Event], Any]) -> Callable[[Event], Any]:
        if name not in EVENTS:
            raise ConfigError(f"unknown event {name!r}; the events are {list(EVENTS)}")
        if not callable(listener):
            raise ConfigError(f"a listener must be a function of one Event, got {listener!r:.80}")
        self._listeners.setdefault(name, []).append(listener)
        return listener

    def off(self, name: str, listener: Callable[[Event], Any]) -> None:
        listeners = self._listeners.get(name, [])
        if listener in listeners:
            listeners.remove(listener)

    def emit(self, name: str, **data: Any) -> Event:
        event = Event(name, **data)
        for listener in list(self._listeners.get(name, ())):
            try:
                listener(event)
            except Exception as exc:
                internal_error(f"a listener of {name!r} raised; the assembler went on", exc)
        return event

"""Plugins: what one is, how a callable becomes one, and the checks made when one is registered.

A plugin is any object with ``name``, ``priority``, ``compactable`` and
``get_component()``; ``compact(target_tokens, counter)``, ``on_prepared(budget)``,
``get_state()`` and ``restore_state(state)`` are optional. Any of these methods may
be ``async`` or plain. Two more optional hooks let a plugin work on the history
rather than add a component of its own (the tool-output plugin does):
``history_view(messages)`` returns the history as the model should see it (never
changing the history itself) and ``tool_definitions()`` adds tool definitions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from toolctx.assembly._types import HISTORY, Component, ContextBudget
from toolctx.errors import ConfigError
from toolctx.tokens import TokenCounter

__all__ = [
    "RESERVED_NAMES",
    "ContextPlugin",
    "FunctionPlugin",
    "as_plugin",
    "compact_plugin",
    "component_now",
    "component_of",
    "maybe_await",
    "prepared_hook",
    "run_to_end",
]

RESERVED_NAMES = frozenset({"system_prompt", "instructions", "current_input", "tools", HISTORY})
T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``value``, awaited if it is awaitable: plugin methods may be plain or ``async``."""
    if inspect.isawaitable(value):
        return await value
    return value


@runtime_checkable
class ContextPlugin(Protocol):
    """What the assembler needs of a plugin (the optional methods are listed in the module docstring)."""

    @property
    def name(self) -> str:
        """Unique among the assembler's plugins; names the component and the state."""
        ...

    @property
    def priority(self) -> int:
        """Compaction order: higher compacts first; 0 never compacts."""
        ...

    @property
    def compactable(self) -> bool:
        """Whether compaction may shrink or leave out this plugin's content."""
        ...

    def get_component(self) -> Component | str | Awaitable[Component | str | None] | None:
        """This model call's content, or None when the plugin has nothing to add."""
        ...


class FunctionPlugin:
    """A plugin made from a function returning the content (a str, a Component or None; plain or async)."""

    def __init__(self, function: Callable[[], Any], name: str, priority: int = 5, compactable: bool = False) -> None:
        if not callable(function):
            raise ConfigError(f"a plugin function must be callable, got {function!r:.80}")
        self.function = function
        self.name = name
        self.priority = priority
        self.compactable = compactable

    def __repr__(self) -> str:
        return f"FunctionPlugin({self.name!r}, priority={self.priority})"

    def get_component(self) -> Any:
        return self.function()


def as_plugin(
    plugin: Any, *, name: str | None = None, priority: int | None = None, compactable: bool | None = None
) -> Any:
    """``plugin`` checked, or a function made into one; a ConfigError says what is wrong with it."""
    if not hasattr(plugin, "get_component") and callable(plugin):
        fallback = getattr(plugin, "__name__", "")
        plugin = FunctionPlugin(
            plugin,
            name if name is not None else fallback,
            5 if priority is None else priority,
            False if compactable is None else compactable,
        )
    elif name is not None or priority is not None or compactable is not None:
        raise ConfigError("name, priority and compactable are given by a plugin object itself; pass them for functions")
    found = getattr(plugin, "name", None)
    if not isinstance(found, str) or not found.strip() or found != found.strip():
        raise ConfigError(
            f"a plugin needs a non-empty name without surrounding spaces, got {found!r:.80} ({plugin!r:.80})"
        )
    if found in RESERVED_NAMES:
        raise ConfigError(f"plugin name {found!r} is taken by a built-in part; choose another")
    level = getattr(plugin, "priority", None)
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        raise ConfigError(
            f"plugin {found!r}: priority must be a whole number >= 0 (0: never compact), got {level!r:.80}"
        )
    if not isinstance(getattr(plugin, "compactable", None), bool):
        raise ConfigError(f"plugin {found!r}: compactable must be True or False, got {plugin.compactable!r:.80}")
    if not callable(getattr(plugin, "get_component", None)):
        raise ConfigError(f"plugin {found!r} has no get_component() method")
    for optional in ("compact", "on_prepared", "get_state", "restore_state", "history_view", "tool_definitions"):
        if hasattr(plugin, optional) and not callable(getattr(plugin, optional)):
            raise ConfigError(f"plugin {found!r}: {optional} must be a method, got {getattr(plugin, optional)!r:.80}")
    return plugin


async def component_of(plugin: Any) -> Component | None:
    """The plugin's component for this call, named after it and with its priority, or None."""
    return _checked(plugin, await maybe_await(plugin.get_component()))


def component_now(plugin: Any) -> Component | None:
    """:func:`component_of` from plain code: an ``async`` ``get_component()`` runs to its end on a loop of its own."""
    got = plugin.get_component()
    return _checked(plugin, run_to_end(got) if inspect.isawaitable(got) else got)


def run_to_end(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` from plain code: on a new event loop, in a worker thread if this one runs a loop.

    The worker runs in a copy of the caller's context, so the current session and other context variables hold.
    """

    async def wait() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(context.run, asyncio.run, wait()).result()


def _checked(plugin: Any, got: Any) -> Component | None:
    if got is None:
        return None
    if isinstance(got, str):
        if not got:
            return None
        return Component(name=plugin.name, content=got, priority=plugin.priority, compactable=plugin.compactable)
    if isinstance(got, Component):
        if got.name != plugin.name or got.priority != plugin.priority:
            got = got.model_copy(update={"name": plugin.name, "priority": plugin.priority})
        return got if got.content else None
    raise TypeError(f"plugin {plugin.name!r}: get_component() must return a str, a Component or None, not {got!r:.80}")


async def compact_plugin(plugin: Any, target: int, counter: TokenCounter) -> int:
    """Ask ``plugin`` to shrink its content to ``target`` tokens; the tokens it says it freed."""
    freed = await maybe_await(plugin.compact(target, counter))
    if isinstance(freed, bool) or not isinstance(freed, int):
        raise TypeError(
            f"plugin {plugin.name!r}: compact() must return the tokens it freed (an int), not {freed!r:.80}"
        )
    return freed


async def prepared_hook(plugin: Any, budget: ContextBudget) -> None:
    hook = getattr(plugin, "on_prepared", None)
    if hook is not None:
        await maybe_await(hook(budget))

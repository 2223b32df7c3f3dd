"""The assembler's state: a versioned pydantic model that round-trips exactly through JSON, plugins included."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolctx.assembly._history import HistorySpan
from toolctx.assembly._strategies import resolve_strategy, strategy_name
from toolctx.assembly._types import (
    AssemblerConfig,
    HistoryMessage,
    StateVersionError,
    any_json,
    config_error,
    json_values,
)
from toolctx.assembly._working import WorkingState
from toolctx.errors import ConfigError, ToolctxWarning

__all__ = ["STATE_VERSION", "AssemblerState", "restore", "restore_plugin", "state_of"]

STATE_VERSION = 1


class AssemblerState(BaseModel):
    """Everything an assembler needs to carry on where it was: ``get_state()`` makes it, ``restore_state()`` reads it.

    ``model_dump_json()`` and ``AssemblerState.model_validate_json()`` round-trip
    it exactly. ``plugins``: each plugin's own state by name (JSON values),
    including states kept for plugins the assembler did not have.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = STATE_VERSION
    conversation_id: str
    system_prompt: str = ""
    instructions: str = ""
    current_input_id: str | None = None
    history: tuple[HistoryMessage, ...] = ()
    spans: tuple[HistorySpan, ...] = ()
    config: AssemblerConfig = Field(default_factory=AssemblerConfig)
    strategy: str | None = "proactive"
    tools: tuple[dict[str, Any], ...] = ()
    plugins: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tools", "plugins")
    @classmethod
    def _json(cls, value: Any) -> Any:
        return json_values("tools and plugin states", value)


def _parsed(state: AssemblerState | Mapping[str, Any] | str | bytes) -> AssemblerState:
    if isinstance(state, AssemblerState):
        raw: Any = state.model_dump(mode="json")
    elif isinstance(state, str | bytes):
        try:
            raw = orjson.loads(state)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"a saved state must be JSON ({exc})") from None
    else:
        raw = state
    if not isinstance(raw, Mapping):
        raise ConfigError(f"a saved state is an AssemblerState, its dict or its JSON, got {type(state).__name__}")
    version = raw.get("version")
    if version != STATE_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > STATE_VERSION
        advice = "upgrade toolctx to read it" if newer else "it was not written by ContextAssembler.get_state()"
        raise StateVersionError(
            f"state version {version!r} cannot be read (this toolctx reads version {STATE_VERSION}); {advice}"
        )
    try:
        return AssemblerState.model_validate(raw)
    except ValidationError as exc:
        raise config_error("saved state", exc) from None


def state_of(w: WorkingState) -> AssemblerState:
    """The state of an assembler (its ``get_state()``)."""
    plugins: dict[str, Any] = dict(w.orphans)
    for name, plugin in w.plugins.items():
        getter = getattr(plugin, "get_state", None)
        if getter is None:
            continue
        value = getter()
        if not any_json(value):
            raise ConfigError(f"plugin {name!r}: get_state() must return JSON values, got {value!r:.80}")
        plugins[name] = value
    return AssemblerState(
        conversation_id=w.conversation_id,
        system_prompt=w.system_prompt,
        instructions=w.instructions,
        current_input_id=w.current,
        history=tuple(w.history),
        spans=tuple(w.spans),
        config=w.config,
        strategy=strategy_name(w.strategy),
        tools=tuple(w.tools),
        plugins=plugins,
    )


def restore(w: WorkingState, state: AssemblerState | Mapping[str, Any] | str | bytes) -> None:
    """Restore an assembler from a saved state (its ``restore_state()``)."""
    parsed = _parsed(state)
    ids = [m.id for m in parsed.history]
    if len(set(ids)) != len(ids):
        raise ConfigError("a saved state's history has repeated message ids")
    if parsed.current_input_id is not None and parsed.current_input_id not in set(ids):
        raise ConfigError(f"a saved state's current input {parsed.current_input_id!r} is not in its history")
    w.conversation_id = parsed.conversation_id
    w.system_prompt, w.instructions = parsed.system_prompt, parsed.instructions
    w.history = list(parsed.history)
    w.by_id = {m.id: m for m in w.history}
    w.current = parsed.current_input_id
    w.spans = list(parsed.spans)
    w.config = parsed.config
    if parsed.strategy is not None:
        w.strategy = resolve_strategy(parsed.strategy)
    w.tools = [dict(t) for t in parsed.tools]
    w.orphans = {}
    for name, value in parsed.plugins.items():
        plugin = w.plugins.get(name)
        if plugin is None:
            w.orphans[name] = value
            warnings.warn(
                f"the saved state has a state for plugin {name!r}, which is not registered; it is kept "
                "(and saved again by get_state()) and restored when a plugin of that name is registered",
                ToolctxWarning,
                stacklevel=2,
            )
        else:
            restore_plugin(w, plugin, value)
    w.last = None
    w.events.emit("state_restored", state=parsed)


def restore_plugin(w: WorkingState, plugin: Any, value: Any) -> None:
    restore = getattr(plugin, "restore_state", None)
    if restore is None:
        return
    try:
        restore(value)
    except Exception as exc:
        w.orphans[plugin.name] = value  # nothing lost: saved again by get_state()
        w.plugin_failed(plugin.name, "restore_state", exc)

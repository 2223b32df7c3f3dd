"""What the assembler works with: history messages, components, budgets, compaction steps, options, errors."""

from __future__ import annotations

import math
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolctx.errors import ConfigError

__all__ = [
    "HISTORY",
    "AssemblerConfig",
    "BudgetStatus",
    "CompactionStep",
    "Component",
    "ContextBudget",
    "ContextBudgetError",
    "HistoryMessage",
    "Role",
    "StateVersionError",
    "ToolCallSpec",
]

T = TypeVar("T")

HISTORY = "conversation_history"
"""The name of the built-in history component (in budgets, compaction plans and logs)."""

Role = Literal["user", "assistant", "system", "tool"]
BudgetStatus = Literal["ok", "warning", "critical"]


class ContextBudgetError(ConfigError):
    """The parts that are never compacted do not fit the budget on their own."""


class StateVersionError(ConfigError):
    """A saved state was written by a toolctx this one cannot read."""


class ToolCallSpec(BaseModel):
    """One tool call an assistant message makes: its id, the tool's name and the arguments as JSON values."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_values("arguments", value)


class HistoryMessage(BaseModel):
    """One message of the conversation, as the assembler keeps it (immutable; edits make copies).

    ``tool_calls`` are the calls an assistant message makes; a ``tool`` message
    answers ``tool_call_id``. A ``pinned`` message is never compacted. ``metadata``
    is the caller's (JSON values), kept in the state.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: float = 0.0

    @field_validator("metadata")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_values("metadata", value)

    @model_validator(mode="after")
    def _consistent(self) -> HistoryMessage:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages make tool calls, not {self.role!r} ones")
        return self


class Component(BaseModel):
    """One part of the prepared context other than the history: a plugin's content for this model call.

    ``priority`` orders compaction (higher compacts first; 0 never); a
    ``compactable=False`` or ``pinned`` component is never compacted or left out.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    content: str
    priority: int = Field(default=5, ge=0)
    compactable: bool = True
    pinned: bool = False

    @property
    def protected(self) -> bool:
        """Whether compaction may never touch it."""
        return self.pinned or not self.compactable or self.priority == 0


class ContextBudget(BaseModel):
    """How much of the budget one prepared context uses, exactly counted, and what that means.

    ``limit``: ``max_tokens`` minus ``response_reserve``. ``used``: tokens of
    everything the model is sent (tool definitions, every message with its framing
    and role, the reply priming): what ``count_request(prepared.to_openai(),
    tools=prepared.openai_tools(), counter=...)`` counts with the assembler's
    counter. ``floor``: the part of ``used`` compaction can never free.
    ``utilization``: ``used / limit``. ``by_part``: tokens per part (``tools``,
    ``system``, the history, each component, the current input).
    """

    model_config = ConfigDict(frozen=True)

    limit: int
    used: int
    floor: int
    status: BudgetStatus
    by_part: dict[str, int] = Field(default_factory=dict)

    @property
    def available(self) -> int:
        """Tokens left before the limit (negative when over it)."""
        return self.limit - self.used

    @property
    def utilization(self) -> float:
        """``used / limit`` (over 1.0 when over the limit)."""
        return self.used / self.limit if self.limit else math.inf


class CompactionStep(BaseModel):
    """One step of a compaction: what was compacted, how, and what it freed as re-measured afterwards."""

    model_config = ConfigDict(frozen=True)

    component: str
    action: str  # "compacted", "summarized", "omitted", "failed", "nothing"
    freed: int
    detail: str = ""
    handles: tuple[str, ...] = ()


class AssemblerConfig(BaseModel):
    """Every option of a :class:`~toolctx.assembly.ContextAssembler`, with its default.

    ``max_tokens`` (128,000; seed 004's ``max_context_tokens`` is accepted as another
    name for it, not both at once): the model's context window; ``response_reserve`` (0):
    tokens kept free for the reply. The status is ``warning`` from
    ``warning_threshold`` (0.75) of the limit and ``critical`` from
    ``critical_threshold`` (0.9) or over the limit. ``low_water`` (0.5): the
    fraction of the limit the ``proactive`` strategy compacts down to.
    ``preserve_recent`` (10): history messages kept whole as long as other steps
    can make room. ``history_priority`` (6): the history's place in the priority
    order (plugins: tool outputs 10, memory 8, plan never). ``auto_compact``
    (True): ``prepare()`` compacts as the strategy says; off, it only compacts
    when the context would not fit at all. ``context_role`` (``"system"``): the
    role of the message carrying the plugins' components in OpenAI and LangChain
    output (``"user"`` for servers that accept a system message only first).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int = Field(default=128_000, gt=0)
    response_reserve: int = Field(default=0, ge=0)
    warning_threshold: float = Field(default=0.75, gt=0.0, le=1.0)
    critical_threshold: float = Field(default=0.9, gt=0.0, le=1.0)
    low_water: float = Field(default=0.5, ge=0.0, le=1.0)
    preserve_recent: int = Field(default=10, ge=0)
    history_priority: int = Field(default=6, ge=1)
    auto_compact: bool = True
    context_role: Literal["system", "user"] = "system"

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, data: Any) -> Any:
        return seed_names(data) if isinstance(data, dict) else data

    @property
    def max_context_tokens(self) -> int:
        """Seed 004's name for :attr:`max_tokens`."""
        return self.max_tokens

    @model_validator(mode="after")
    def _ordered(self) -> AssemblerConfig:
        if self.response_reserve >= self.max_tokens:
            raise ValueError(
                f"response_reserve ({self.response_reserve:,}) must be below max_tokens ({self.max_tokens:,})"
            )
        if self.warning_threshold > self.critical_threshold:
            raise ValueError(
                f"warning_threshold ({self.warning_threshold}) must not be over "
                f"critical_threshold ({self.critical_threshold})"
            )
        return self

    @property
    def limit(self) -> int:
        """The tokens a prepared context may use: ``max_tokens - response_reserve``."""
        return self.max_tokens - self.response_reserve

    def status(self, used: int) -> BudgetStatus:
        """``ok``, ``warning`` or ``critical`` for ``used`` tokens."""
        limit = self.limit
        if used > limit or used >= self.critical_threshold * limit:
            return "critical"
        if used >= self.warning_threshold * limit:
            return "warning"
        return "ok"


def seed_names(options: dict[str, Any]) -> dict[str, Any]:
    """Assembler options with seed 004's names (``max_context_tokens``) under the assembler's own (``max_tokens``)."""
    if "max_context_tokens" not in options:
        return options
    if "max_tokens" in options:
        raise ConfigError(
            f"max_context_tokens ({options['max_context_tokens']!r:.40}) is seed 004's name for max_tokens "
            f"({options['max_tokens']!r:.40}): pass only one of them"
        )
    return {("max_tokens" if k == "max_context_tokens" else k): v for k, v in options.items()}


def config_error(what: str, exc: Exception) -> ConfigError:
    """A pydantic validation error as a ConfigError that names the value and says what was wrong."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for error in errors():
            where = ".".join(str(p) for p in error.get("loc", ())) or what
            parts.append(f"{where}: {error.get('msg')} (got {error.get('input')!r:.80})")
        return ConfigError(f"bad {what}: " + "; ".join(parts))
    return ConfigError(f"bad {what}: {exc}")


def any_json(value: Any) -> bool:
    """Whether ``value`` is made of JSON values only (finite numbers)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(any_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and any_json(v) for k, v in value.items())
    return False


def json_values(what: str, value: T) -> T:
    """``value`` if it is made of JSON values only, for a field validator."""
    if not any_json(value):
        raise ValueError(f"{what} must hold JSON values only (str keys, finite numbers), got {value!r:.80}")
    return value

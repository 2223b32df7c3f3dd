"""How a memory store scores, tiers and limits items."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import cast

from toolctx._checks import fraction, non_empty_text, whole_number
from toolctx.errors import ConfigError
from toolctx.memory._items import DEFAULT_TYPE_WEIGHTS, MAX_ITEM_TYPE_LENGTH
from toolctx.memory._scoring import ImportanceScorer, Scorer, ScoreState, TierThresholds
from toolctx.redaction import Redactor, resolve_redactor
from toolctx.tokens import TokenCounter, resolve_counter

__all__ = ["MAX_CONTENT_BYTES", "MemoryConfig"]

#: Largest item accepted by default. Memory items are meant to be read back into a
#: prompt; a whole tool output belongs in a toolctx session, not here.
MAX_CONTENT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class MemoryConfig:
    """Scoring, tiering and limits shared by every agent of a :class:`MemoryStore`.

    ``type_weights`` lists the item types the store accepts and their base
    importance; pass your own mapping to add types (``{"NOTE": 0.5, **DEFAULT_TYPE_WEIGHTS}``).
    ``flash_fraction`` is the share of the token limit at which
    :meth:`AgentMemory.should_flash_save` says yes. ``clock`` returns UNIX seconds.
    Items of ``pinned_types`` are pinned when saved (they do not decay) until
    :meth:`AgentMemory.complete_task`: by default the TASK items, so the current task
    stays HOT however long it takes.

    ``counter`` counts each item's ``tokens`` (and so every token figure of the store):
    a :class:`~toolctx.tokens.TokenCounter`, a counter name (``"o200k_base"``,
    ``"cl100k_base"``, ``"estimate"``), or None for the exact ``o200k_base`` counter
    when its tokenizer is installed (``toolctx[tokens]``), else the estimate. Items
    keep the count made when they were saved or last rewritten.

    ``redact`` keeps secrets out of what the store saves, as sessions do: True (the
    default rules), False (off) or a :class:`~toolctx.redaction.Redactor`. An item's
    content is redacted before it is hashed, counted and stored, so every reader (the
    HTTP API, the dashboard, the CLI, checkpoints) sees ``[REDACTED]``, never the secret.
    """

    type_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_TYPE_WEIGHTS))
    scorer: Scorer | Callable[[ScoreState], float] = field(default_factory=ImportanceScorer)
    thresholds: TierThresholds = field(default_factory=TierThresholds)
    flash_fraction: float = 0.8
    pinned_types: frozenset[str] = frozenset({"TASK"})
    max_content_bytes: int = MAX_CONTENT_BYTES
    clock: Callable[[], float] = time.time
    counter: TokenCounter | str | None = None
    redact: bool | Redactor | None = True

    def __post_init__(self) -> None:
        weights: dict[str, float] = {}
        for name, weight in dict(self.type_weights).items():
            non_empty_text("an item type name in type_weights", name, max_length=MAX_ITEM_TYPE_LENGTH)
            weights[name] = fraction(f"the weight of item type {name!r}", weight)
        if not weights:
            raise ConfigError("type_weights is empty; give at least one item type and its weight")
        object.__setattr__(self, "type_weights", MappingProxyType(weights))
        if not callable(self.scorer):
            raise ConfigError(f"scorer must be callable (state -> float), not {self.scorer!r}")
        fraction("flash_fraction", self.flash_fraction, zero=False)
        if isinstance(self.pinned_types, str) or not all(isinstance(t, str) for t in self.pinned_types):
            raise ConfigError(f"pinned_types must be a set of item type names, not {self.pinned_types!r:.80}")
        object.__setattr__(self, "pinned_types", frozenset(self.pinned_types))
        whole_number("max_content_bytes", self.max_content_bytes, minimum=1, unit="bytes")
        object.__setattr__(self, "counter", resolve_counter(self.counter))
        object.__setattr__(self, "redact", resolve_redactor(self.redact))

    def redacted(self, content: str) -> str:
        """``content`` as the store saves it: with its secrets replaced, unless redaction is off."""
        return content if not isinstance(self.redact, Redactor) else self.redact.redact_text(content)

    def count_tokens(self, content: str) -> int:
        """The tokens ``content`` costs, with the store's counter."""
        return cast(TokenCounter, self.counter).count(content)  # resolved in __post_init__

    def weight_of(self, item_type: str) -> float:
        """The base weight of ``item_type``, or a clear error naming the known types."""
        try:
            return self.type_weights[item_type]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self.type_weights))
            raise ConfigError(
                f"unknown item_type {item_type!r}; known types are {known}. "
                "Add it with MemoryConfig(type_weights={...})."
            ) from None

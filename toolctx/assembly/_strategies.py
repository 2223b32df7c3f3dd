"""Compaction strategies: small callables deciding when to compact, how far, and in which order.

A strategy takes a :class:`StrategyInput` (the measured budget, the options, the
parts that can be compacted) and returns a :class:`CompactionPlan`, or None to
leave the context as it is. Whatever it says, a context that would not fit at all
is compacted down to the limit: a strategy only decides what happens before that.

- :func:`proactive` (the default): from the warning mark, compact early, down to
  the low-water mark, so compactions are rare and each frees a lot;
- :func:`lazy`: only when the context would not fit, just down to the limit;
- :func:`adaptive`: from the warning mark to just under it, cheap steps first
  (plugins such as tool outputs and the memory index before the history), and a
  summary of what leaves the history last, when a summarizer is set.

Your own: any function of a :class:`StrategyInput` returning a plan or None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from toolctx.assembly._types import HISTORY, AssemblerConfig, ContextBudget
from toolctx.errors import ConfigError

__all__ = [
    "STRATEGIES",
    "Candidate",
    "CompactionPlan",
    "ContextStrategy",
    "StrategyInput",
    "adaptive",
    "lazy",
    "proactive",
    "resolve_strategy",
    "strategy_name",
]


@dataclass(frozen=True)
class Candidate:
    """A part that can be compacted: its name, priority and tokens in the prompt now."""

    name: str
    priority: int
    tokens: int


@dataclass(frozen=True)
class StrategyInput:
    """What a strategy decides from."""

    budget: ContextBudget
    config: AssemblerConfig
    candidates: tuple[Candidate, ...]  # highest priority first
    can_summarize: bool


@dataclass(frozen=True)
class CompactionPlan:
    """Compact until the context uses at most ``target`` tokens, the parts in ``order`` (None: priority order).

    ``summarize``: have the summarizer describe what leaves the history (its
    summary is kept only if it still fits).
    """

    target: int
    order: tuple[str, ...] | None = None
    summarize: bool = False


ContextStrategy = Callable[[StrategyInput], "CompactionPlan | None"]
"""A compaction strategy (seed 004's IContextStrategy): a function of a :class:`StrategyInput` returning a plan or None.

Not :class:`toolctx.selection.Strategy`, which picks stored outputs relevant to a query.
"""


def proactive(state: StrategyInput) -> CompactionPlan | None:
    """From the warning mark, compact down to ``low_water`` of the limit, highest priority first."""
    if state.budget.status == "ok":
        return None
    return CompactionPlan(target=int(state.config.low_water * state.budget.limit))


def lazy(state: StrategyInput) -> CompactionPlan | None:
    """Only when the context would not fit, and just down to the limit."""
    if state.budget.used <= state.budget.limit:
        return None
    return CompactionPlan(target=state.budget.limit)


def adaptive(state: StrategyInput) -> CompactionPlan | None:
    """From the warning mark to just under it: plugins first, the history last, a summary of it last of all."""
    if state.budget.status == "ok":
        return None
    limit = state.budget.limit
    target = max(0, math.ceil(state.config.warning_threshold * limit) - 1)  # the status is ok below the mark
    plugins = tuple(c.name for c in state.candidates if c.name != HISTORY)
    history = tuple(c.name for c in state.candidates if c.name == HISTORY)
    return CompactionPlan(target=target, order=plugins + history, summarize=state.can_summarize)


STRATEGIES: dict[str, ContextStrategy] = {"adaptive": adaptive, "lazy": lazy, "proactive": proactive}


def resolve_strategy(strategy: str | ContextStrategy) -> ContextStrategy:
    """A strategy from its name or a callable."""
    if isinstance(strategy, str):
        found = STRATEGIES.get(strategy)
        if found is None:
            raise ConfigError(f"unknown strategy {strategy!r}; use one of {sorted(STRATEGIES)} or a function")
        return found
    if callable(strategy):
        return strategy
    raise ConfigError(f"strategy must be a name ({sorted(STRATEGIES)}) or a function, got {strategy!r:.80}")


def strategy_name(strategy: ContextStrategy) -> str | None:
    """The built-in name of ``strategy``, or None for the caller's own."""
    for name, known in STRATEGIES.items():
        if known is strategy:
            return name
    return None

"""Importance scoring and tier assignment.

The default score of an item is::

    recency = 1 if pinned else exp(-idle_steps / decay_steps) * exp(-idle_days / decay_days)
    score = clamp(weight * recency * (1 + access_factor * ln(1 + access_count)), 0, 1)

``weight`` is the item's own base importance when it was saved with one, otherwise its
type's weight. Recency counts from the item's last *use* (its save, or the last time
the agent used or loaded it), not from its creation, so an item in use stays HOT
however old it is, and an item left alone decays. It is measured two ways:

- ``idle_steps``: how many steps the agent took since (a step is one call that saves
  or uses items). This is the main clock: an agent's memory ages as the agent works,
  so a session stretched over two days behaves like the same session in four hours,
  and nothing decays while the agent is paused;
- ``idle_days``: wall-clock time since, with a long constant, so memories of an agent
  left for weeks fade even if it never works again.

A *pinned* item does not decay: by default the items of the current task
(``MemoryConfig.pinned_types``) are pinned from their save until
:meth:`AgentMemory.complete_task`, so the task being worked on stays HOT.

The defaults (``decay_steps=18``, ``decay_days=30``) come from replaying 59 real
coding sessions (``bench/memory_replay.py``, figures in ``docs/benchmarks.md``): on a
four-hour and on a two-day clock they keep 92 % of the items the agent uses next in
HOT or WARM while the working set is on average 31 % smaller than everything stored
(47 % weighted by tokens). Slower decay keeps more of what is used next and saves
less (32 steps: 96.6 % and 19 %); faster decay the reverse (12 steps: 86 % and 40 %).

The seed's access boost, ``ln(access_count + 1) / 10``, is 0 for an item never read,
which would make every new item score 0; the boost here is 1 for a new item and grows
slowly with use (1.07 after one access, 1.24 after ten, 1.46 after a hundred), so an
often-used item stays up a tier for longer without letting use alone outweigh recency.

A scorer is any callable taking a :class:`ScoreState` and returning a number in
[0, 1] (out-of-range answers are clamped). Scorers that also define
``score_many(batch: ScoreBatch) -> numpy array`` are used on whole batches, which is
how :meth:`AgentMemory.update_tiers` rescores 100,000 items in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolctx._checks import fraction, real_number
from toolctx.errors import ConfigError
from toolctx.memory._items import Tier

__all__ = [
    "ImportanceScorer",
    "ScoreBatch",
    "ScoreState",
    "Scorer",
    "TierThresholds",
    "score_batch",
]

FloatArray = npt.NDArray[np.float64]
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class ScoreState:
    """What a scorer may look at for one item."""

    item_type: str
    weight: float
    #: Days since the item was created.
    age_days: float
    access_count: int
    #: Days since the item was last used (saved, used or loaded).
    idle_days: float = 0.0
    #: Steps the agent took since it last used the item.
    idle_steps: float = 0.0
    #: Whether the item is pinned (an item of the current task): it does not decay.
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class ScoreBatch:
    """The same facts for many items at once, as parallel arrays."""

    item_types: Sequence[str]
    weight: FloatArray
    age_days: FloatArray
    access_count: FloatArray
    idle_days: FloatArray | None = None
    idle_steps: FloatArray | None = None
    pinned: npt.NDArray[np.bool_] | None = None


@runtime_checkable
class Scorer(Protocol):
    def __call__(self, state: ScoreState, /) -> float: ...


@dataclass(frozen=True, slots=True)
class ImportanceScorer:
    """``weight x recency x access boost`` (see the module docstring), clamped to [0, 1].

    ``decay_steps`` is the number of idle steps, and ``decay_days`` the idle days, over
    which an unpinned item's recency falls by a factor e.
    """

    decay_steps: float = 18.0
    decay_days: float = 30.0
    access_factor: float = 0.1

    def __post_init__(self) -> None:
        real_number("decay_steps", self.decay_steps, above=0.0, unit="steps")
        real_number("decay_days", self.decay_days, above=0.0, unit="days")
        real_number("access_factor", self.access_factor, minimum=0.0)

    def __call__(self, state: ScoreState, /) -> float:
        recency = 1.0
        if not state.pinned:
            idle = max(state.idle_steps, 0.0) / self.decay_steps + max(state.idle_days, 0.0) / self.decay_days
            recency = math.exp(-idle)
        boost = 1.0 + self.access_factor * math.log1p(max(state.access_count, 0))
        return min(max(state.weight * recency * boost, 0.0), 1.0)

    def score_many(self, batch: ScoreBatch) -> FloatArray:
        size = len(batch.item_types)
        idle_days = np.zeros(size) if batch.idle_days is None else np.maximum(batch.idle_days, 0.0)
        idle_steps = np.zeros(size) if batch.idle_steps is None else np.maximum(batch.idle_steps, 0.0)
        recency = np.exp(-(idle_steps / self.decay_steps + idle_days / self.decay_days))
        if batch.pinned is not None:
            recency = np.where(batch.pinned, 1.0, recency)
        boost = 1.0 + self.access_factor * np.log1p(np.maximum(batch.access_count, 0.0))
        return np.clip(batch.weight * recency * boost, 0.0, 1.0)


def score_batch(scorer: Scorer | Callable[[ScoreState], float], batch: ScoreBatch) -> FloatArray:
    """Scores for a whole batch: vectorised when the scorer can, one by one otherwise.

    Whatever the scorer returns is made finite and clamped to [0, 1], so a custom
    scorer cannot put a value into the store that its CHECK constraint would refuse.
    """
    many: Any = getattr(scorer, "score_many", None)
    if many is not None:
        scores = np.asarray(many(batch), dtype=np.float64)
    else:
        size = len(batch.item_types)
        idle_days = np.zeros(size) if batch.idle_days is None else batch.idle_days
        idle_steps = np.zeros(size) if batch.idle_steps is None else batch.idle_steps
        pinned = np.zeros(size, dtype=bool) if batch.pinned is None else batch.pinned
        scores = np.fromiter(
            (
                scorer(ScoreState(item_type, float(w), float(a), int(n), float(d), float(s), bool(p)))
                for item_type, w, a, n, d, s, p in zip(
                    batch.item_types,
                    batch.weight,
                    batch.age_days,
                    batch.access_count,
                    idle_days,
                    idle_steps,
                    pinned,
                    strict=True,
                )
            ),
            dtype=np.float64,
            count=size,
        )
    if scores.shape != (len(batch.item_types),):
        raise ConfigError(f"the scorer returned {scores.shape} scores for {len(batch.item_types)} items")
    return np.clip(np.nan_to_num(scores, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class TierThresholds:
    """Scores at or above ``hot`` are HOT, at or above ``warm`` WARM, the rest COLD."""

    hot: float = 0.8
    warm: float = 0.4

    def __post_init__(self) -> None:
        fraction("hot", self.hot)
        fraction("warm", self.warm)
        if self.warm > self.hot:
            raise ConfigError(f"tier thresholds need 0 <= warm <= hot <= 1, got warm={self.warm!r}, hot={self.hot!r}")

    def tier_of(self, score: float) -> Tier:
        if score >= self.hot:
            return Tier.HOT
        return Tier.WARM if score >= self.warm else Tier.COLD

    def tiers_of(self, scores: FloatArray) -> npt.NDArray[np.str_]:
        return np.where(scores >= self.hot, "HOT", np.where(scores >= self.warm, "WARM", "COLD"))

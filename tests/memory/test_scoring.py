"""Importance scores and tier boundaries, as properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx.errors import ConfigError
from toolctx.memory import ImportanceScorer, MemoryConfig, ScoreBatch, ScoreState, Tier, TierThresholds
from toolctx.memory._scoring import score_batch

weights = st.floats(0.0, 1.0)
ages = st.floats(-1e6, 1e9, allow_nan=False)
idle = st.floats(0.0, 1e6)
accesses = st.integers(0, 10**12)
states = st.builds(
    ScoreState,
    item_type=st.just("T"),
    weight=weights,
    age_days=ages,
    access_count=accesses,
    idle_days=st.floats(-1e6, 1e9, allow_nan=False),
    idle_steps=st.floats(-1e6, 1e12, allow_nan=False),
    pinned=st.booleans(),
)


def test_a_never_accessed_item_scores_its_weight() -> None:
    # The seed's log(access_count + 1) / 10 would make this 0.
    assert ImportanceScorer()(ScoreState("TASK", 1.0, 0.0, 0)) == 1.0
    assert ImportanceScorer()(ScoreState("ERROR", 0.6, 0.0, 0)) == 0.6


def test_the_documented_formula() -> None:
    scorer = ImportanceScorer(decay_steps=10.0, decay_days=2.0, access_factor=0.1)
    expected = 0.5 * math.exp(-4 / 10.0 - 1.5 / 2.0) * (1 + 0.1 * math.log(1 + 9))
    state = ScoreState("CODE", 0.5, 30.0, 9, idle_days=1.5, idle_steps=4)
    assert scorer(state) == pytest.approx(expected)
    pinned = ScoreState("TASK", 0.5, 30.0, 9, idle_days=1.5, idle_steps=4, pinned=True)
    assert scorer(pinned) == pytest.approx(0.5 * (1 + 0.1 * math.log(1 + 9)))


@given(states)
def test_scores_stay_in_0_1(state: ScoreState) -> None:
    assert 0.0 <= ImportanceScorer()(state) <= 1.0


@given(weights, ages, idle, idle, idle, accesses)
def test_an_item_left_alone_longer_never_scores_higher(
    weight: float, age: float, days: float, steps: float, extra: float, count: int
) -> None:
    scorer = ImportanceScorer()
    now = scorer(ScoreState("T", weight, age, count, days, steps))
    assert scorer(ScoreState("T", weight, age, count, days + extra, steps)) <= now
    assert scorer(ScoreState("T", weight, age, count, days, steps + extra)) <= now


@given(weights, ages, idle, idle, accesses)
def test_recency_counts_from_the_last_use_and_a_pinned_item_never_decays(
    weight: float, age: float, days: float, steps: float, count: int
) -> None:
    scorer = ImportanceScorer()
    fresh = scorer(ScoreState("T", weight, 0.0, count))
    assert scorer(ScoreState("T", weight, age, count)) == fresh  # however old, just used
    assert scorer(ScoreState("T", weight, age, count, days, steps, pinned=True)) == fresh
    assert scorer(ScoreState("T", weight, age, count, days, steps)) <= fresh


@given(weights, idle, accesses, st.integers(0, 1000))
def test_more_access_never_scores_lower(weight: float, days: float, count: int, extra: int) -> None:
    scorer = ImportanceScorer()
    before = scorer(ScoreState("T", weight, days, count, days, days))
    assert scorer(ScoreState("T", weight, days, count + extra, days, days)) >= before


@given(st.lists(states, min_size=1, max_size=50))
def test_the_vectorised_scores_equal_the_single_ones(rows: list[ScoreState]) -> None:
    scorer = ImportanceScorer()
    batch = ScoreBatch(
        item_types=["T"] * len(rows),
        weight=np.array([r.weight for r in rows]),
        age_days=np.array([r.age_days for r in rows]),
        access_count=np.array([float(r.access_count) for r in rows]),
        idle_days=np.array([r.idle_days for r in rows]),
        idle_steps=np.array([r.idle_steps for r in rows]),
        pinned=np.array([r.pinned for r in rows]),
    )
    single = [scorer(row) for row in rows]
    assert score_batch(scorer, batch).tolist() == pytest.approx(single, rel=1e-12, abs=1e-15)
    # A scorer without score_many sees the same states, one by one.
    one_by_one = scorer.__call__  # a bound method has no score_many
    assert score_batch(one_by_one, batch).tolist() == single


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_tiers_are_monotone_in_score(a: float, b: float, warm: float, hot: float) -> None:
    warm, hot = sorted((warm, hot))
    thresholds = TierThresholds(hot=hot, warm=warm)
    rank = {Tier.COLD: 0, Tier.WARM: 1, Tier.HOT: 2}
    low, high = sorted((a, b))
    assert rank[thresholds.tier_of(low)] <= rank[thresholds.tier_of(high)]
    assert thresholds.tiers_of(np.array([low, high])).tolist() == [thresholds.tier_of(low), thresholds.tier_of(high)]


def test_tier_boundaries_are_inclusive() -> None:
    thresholds = TierThresholds()
    assert thresholds.tier_of(0.8) is Tier.HOT
    assert thresholds.tier_of(0.7999999) is Tier.WARM
    assert thresholds.tier_of(0.4) is Tier.WARM
    assert thresholds.tier_of(0.3999999) is Tier.COLD


def test_custom_scorers_are_clamped_and_checked() -> None:
    batch = ScoreBatch(["T", "T", "T"], np.ones(3), np.zeros(3), np.zeros(3))
    assert score_batch(lambda s: [math.nan, 7.0, -2.0][0], batch).tolist() == [0.0, 0.0, 0.0]

    class Wrong:
        def __call__(self, state: ScoreState) -> float:
            return 0.5

        def score_many(self, batch: ScoreBatch) -> list[float]:
            return [0.5]

    with pytest.raises(ConfigError, match="returned"):
        score_batch(Wrong(), batch)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"flash_fraction": 0.0}, "flash_fraction"),
        ({"flash_fraction": 1.5}, "flash_fraction"),
        ({"type_weights": {}}, "type_weights is empty"),
        ({"type_weights": {"TASK": 1.5}}, "weight of item type 'TASK'"),
        ({"type_weights": {"": 0.5}}, "an item type name in type_weights must be a non-empty string"),
        ({"type_weights": {"  ": 0.5}}, "an item type name in type_weights must be a non-empty string"),
        ({"type_weights": {"TASK": True}}, r"weight of item type 'TASK' must be a number in \[0, 1\], got True"),
        ({"flash_fraction": True}, r"flash_fraction must be a number in \(0, 1\], got True"),
        ({"max_content_bytes": 0}, "max_content_bytes"),
        ({"max_content_bytes": math.nan}, "max_content_bytes must be a whole number of bytes >= 1, got nan"),
        ({"max_content_bytes": 1.5}, "max_content_bytes must be a whole number of bytes >= 1, got 1.5"),
        ({"scorer": "bm25"}, "scorer must be callable"),
        ({"pinned_types": "TASK"}, "pinned_types must be a set of item type names"),
    ],
)
def test_bad_config_values_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MemoryConfig(**kwargs)  # type: ignore[arg-type]


def test_bad_thresholds_and_scorer_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="warm <= hot"):
        TierThresholds(hot=0.3, warm=0.6)
    with pytest.raises(ConfigError, match="decay_days"):
        ImportanceScorer(decay_days=0)
    with pytest.raises(ConfigError, match="decay_steps must be a finite number of steps > 0, got -1"):
        ImportanceScorer(decay_steps=-1)
    with pytest.raises(ConfigError, match="access_factor"):
        ImportanceScorer(access_factor=-1)
    with pytest.raises(ConfigError, match="decay_days must be a finite number of days > 0, got True"):
        ImportanceScorer(decay_days=True)
    with pytest.raises(ConfigError, match=r"hot must be a number in \[0, 1\], got nan"):
        TierThresholds(hot=math.nan)

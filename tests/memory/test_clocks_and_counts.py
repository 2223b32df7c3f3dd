"""A load restarts both recency clocks, and item tokens are counted with the store's counter (on both databases)."""

from __future__ import annotations

import math

import pytest

from toolctx.errors import ConfigError
from toolctx.memory import AgentMemory, ImportanceScorer, MemoryConfig, MemoryStore, Tier
from toolctx.tokens import EstimateCounter, estimate_tokens, get_counter

from .conftest import FakeClock

SCORER = ImportanceScorer()
CODE = 'def charge_card(card, amount):\n    return {"card": card, "charged": amount * 0.9}  # euros'


def _steps(agent: AgentMemory, count: int) -> None:
    for n in range(count):
        agent.save("TEST_RESULT", f"run {n}: 1 passed", loaded=False)


def test_loading_an_item_restarts_its_step_clock_as_well_as_its_day_clock(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    code = agent.save("CODE", "def release(): ...", loaded=False)
    _steps(agent, 10)
    clock.advance(days=0.5)
    agent.update_tiers()
    assert agent.get(code.id).tier is Tier.WARM  # left alone for ten steps and half a day
    [loaded] = [item for item in agent.load("WARM") if item.id == code.id]
    assert loaded.access_count == 1
    agent.update_tiers()  # no step and no time since the load: the item is as fresh as a used one
    after = agent.get(code.id)
    assert after.importance_score == pytest.approx(0.85 * (1 + 0.1 * math.log(2)))
    assert after.tier is Tier.HOT
    _steps(agent, 3)
    agent.update_tiers()  # three steps idle since the load, not thirteen
    expected = 0.85 * math.exp(-3 / SCORER.decay_steps) * (1 + 0.1 * math.log(2))
    assert agent.get(code.id).importance_score == pytest.approx(expected)


def test_the_hot_tier_a_flash_save_reloads_restarts_its_step_clock(store: MemoryStore) -> None:
    agent = store.agent("worker")
    plan = agent.save("CODE", "the plan", importance_score=1.0)
    _steps(agent, 3)
    agent.update_tiers()
    assert agent.get(plan.id).tier is Tier.HOT
    agent.flash_save()  # reloads HOT: a load of the plan
    _steps(agent, 3)
    agent.update_tiers()
    expected = math.exp(-3 / SCORER.decay_steps) * (1 + 0.1 * math.log(2))
    assert agent.get(plan.id).importance_score == pytest.approx(expected)
    assert agent.get(plan.id).tier is Tier.HOT


class WordCounter:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_items_are_counted_with_the_configured_counter(db_url: str) -> None:
    store = MemoryStore(db_url, config=MemoryConfig(counter=WordCounter()))
    try:
        agent = store.agent("worker")
        item = agent.save("CODE", "one two three four")
        assert item.tokens == 4
        assert agent.get(item.id).tokens == 4
        assert agent.update(item.id, "one two").tokens == 2
        [other] = [agent.get(i) for i in agent.save_many([("ERROR", "a b c")])]
        assert other.tokens == 3
        assert agent.stats().total_tokens == 5
    finally:
        store.close()


def test_the_exact_counter_counts_items_when_installed(db_url: str) -> None:
    exact = get_counter("o200k_base")
    expected = exact.count(CODE)  # (the dev install ships the exact tokenizer: its absence must fail, not skip)
    assert expected != estimate_tokens(CODE)  # so the test tells the two apart
    store = MemoryStore(db_url)
    try:
        assert store.config.counter is exact
        assert store.agent("worker").save("CODE", CODE).tokens == expected
    finally:
        store.close()


def test_counters_by_name_and_bad_counters() -> None:
    assert MemoryConfig(counter="estimate").count_tokens(CODE) == estimate_tokens(CODE)
    assert isinstance(MemoryConfig(counter=EstimateCounter()).counter, EstimateCounter)
    with pytest.raises(ConfigError, match="counter must be a TokenCounter"):
        MemoryConfig(counter=42)  # type: ignore[arg-type]

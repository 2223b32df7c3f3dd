"""The seed's allocations, the flow of unused shares, and the budgeter's checks."""

from __future__ import annotations

import pytest

from toolctx.errors import ConfigError
from toolctx.fresh import DynamicShares, FixedAllocations, TokenBudgeter, share_out
from toolctx.tokens import EstimateCounter, TokenCounter


def test_the_seed_default_allocation_of_150k_tokens() -> None:
    budget = TokenBudgeter(counter=EstimateCounter()).create_budget(150_000)
    assert budget.allocations == {
        "system_prompt": 2_000,
        "repo_map": 2_000,
        "codebase_docs": 3_000,
        "task_spec": 1_000,
        "files": 75_600,
        "code_results": 31_500,
        "memories": 18_900,
    }
    assert budget.reserved == 16_000
    assert budget.dynamic_pool == 126_000
    assert budget.context_tokens == 134_000
    assert budget.warnings == ()


def test_custom_fixed_allocations_and_shares() -> None:
    budgeter = TokenBudgeter(
        {"system_prompt": 3000, "repo_map": 5000, "codebase_docs": 4000, "task_spec": 2000, "reserved": 20000},
        DynamicShares(files=0.5, code_results=0.3, memories=0.2),
    )
    budget = budgeter.create_budget(100_000)
    assert budget["repo_map"] == 5000
    assert budget.dynamic_pool == 66_000
    assert (budget["files"], budget["code_results"], budget["memories"]) == (33_000, 19_800, 13_200)


def test_bad_configuration_is_refused_with_the_value_named() -> None:
    with pytest.raises(ConfigError, match="repomap"):
        TokenBudgeter({"repomap": 5000})
    with pytest.raises(ConfigError, match="reserved"):
        FixedAllocations(reserved=-1)
    with pytest.raises(ConfigError, match="sum to 1"):
        DynamicShares(files=0.5, code_results=0.5, memories=0.5)
    with pytest.raises(ConfigError, match="max_tokens"):
        TokenBudgeter().create_budget(0)
    with pytest.raises(TypeError, match="counter"):
        TokenBudgeter(counter="o200k")  # type: ignore[arg-type]


def test_a_budget_too_small_for_the_fixed_allocations_scales_them_and_warns() -> None:
    budget = TokenBudgeter().create_budget(12_000)
    assert budget.warnings
    assert "too small for the fixed allocations" in budget.warnings[0]
    assert budget.reserved == 3_000  # a quarter of the total
    # The other fixed parts take half of the 9,000 left (scaled by 4,500 / 8,000); the pool keeps the rest.
    assert budget["repo_map"] == 1_125
    assert budget.dynamic_pool >= 4_500
    assert sum(budget.allocations.values()) + budget.reserved <= 12_000


def test_the_response_reserve_is_at_most_a_quarter_of_a_small_budget() -> None:
    budgeter = TokenBudgeter()
    assert budgeter.create_budget(150_000).reserved == 16_000
    assert budgeter.create_budget(64_000).reserved == 16_000
    small = budgeter.create_budget(30_000)
    assert small.reserved == 7_500
    assert not small.warnings  # the fixed allocations still fit whole beside the pool
    assert small["repo_map"] == 2_000
    assert small.dynamic_pool == 30_000 - 7_500 - 8_000
    # The shares are settings: 1.0 keeps the seed's reserve and fixed parts whole while they fit.
    whole = TokenBudgeter(max_reserved_share=1.0, max_fixed_share=1.0).create_budget(30_000)
    assert (whole.reserved, whole.dynamic_pool) == (16_000, 6_000)
    with pytest.raises(ConfigError, match="max_reserved_share"):
        TokenBudgeter(max_reserved_share=1.5)


def test_a_share_a_component_does_not_use_flows_to_the_others_by_their_shares() -> None:
    budgeter = TokenBudgeter()
    # Memories want nothing: files and code results split the whole pool 60:25.
    parts = budgeter.allocate(85_000, {"files": 10**9, "code_results": 10**9, "memories": 0})
    assert parts == {"files": 60_000, "code_results": 25_000, "memories": 0}
    # Code wants a little: it gets it, the rest goes to files and memories 60:15.
    parts = budgeter.allocate(100_000, {"files": 10**9, "code_results": 5_000, "memories": 10**9})
    assert parts["code_results"] == 5_000
    assert parts["files"] == 76_000
    assert parts["memories"] == 19_000
    # Everyone satisfied: each gets exactly its demand, the rest stays unused.
    assert budgeter.allocate(100, {"files": 10, "code_results": 20, "memories": 30}) == {
        "files": 10,
        "code_results": 20,
        "memories": 30,
    }


def test_share_out_never_hands_out_more_than_the_pool() -> None:
    parts = share_out(7, {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, {"a": 100, "b": 100, "c": 100})
    assert sum(parts.values()) == 7
    assert sorted(parts.values()) == [2, 2, 3]


def test_the_default_counter_is_exact_when_installed_and_any_counter_can_be_given() -> None:
    class Words:
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    words = Words()
    assert isinstance(words, TokenCounter)
    budgeter = TokenBudgeter(counter=words)
    assert budgeter.estimate_tokens("one two three") == 3
    cut = budgeter.truncate_to_fit("a b c d e f g h\n" * 3, 20)
    assert cut.text == "a b c d e f g h\n[… lines 2-3 of 3 cut to fit the token budget]"
    assert cut.tokens == 19
    pytest.importorskip("rs_bpe")
    assert TokenBudgeter().counter.name == "o200k_base"

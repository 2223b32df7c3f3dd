"""Budgets are never exceeded, whatever the components and the budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx.fresh import DYNAMIC_COMPONENTS, FixedAllocations, TokenBudgeter, fit_items, share_out, truncate_lines
from toolctx.tokens import EstimateCounter, get_counter

EXACT = get_counter("o200k_base")
ESTIMATE = EstimateCounter()
COUNTERS = st.sampled_from([EXACT, ESTIMATE])
TEXT = st.text(st.characters(codec="utf-8"), max_size=400)
LINES = st.lists(
    st.one_of(TEXT, st.sampled_from(["    return x\n", "日本語のテキスト", '{"id": "a1b2c3"}'])), max_size=40
)


@given(st.integers(0, 10**6), st.lists(st.integers(0, 10**6), min_size=3, max_size=3))
def test_shares_never_exceed_the_pool_or_a_demand(pool: int, wanted: list[int]) -> None:
    demands = dict(zip(DYNAMIC_COMPONENTS, wanted, strict=True))
    parts = TokenBudgeter(counter=ESTIMATE).allocate(pool, demands)
    assert sum(parts.values()) <= pool
    assert all(0 <= parts[name] <= demands[name] for name in DYNAMIC_COMPONENTS)
    # Nothing is left unused while someone still wants more.
    if any(parts[n] < demands[n] for n in DYNAMIC_COMPONENTS):
        assert pool - sum(parts.values()) < 3


@given(
    st.integers(1, 400_000),
    st.fixed_dictionaries({name: st.integers(0, 50_000) for name in ("system_prompt", "repo_map", "reserved")}),
)
def test_allocations_never_add_up_to_more_than_the_budget(max_tokens: int, fixed: dict[str, int]) -> None:
    budget = TokenBudgeter(FixedAllocations(**fixed), counter=ESTIMATE).create_budget(max_tokens)
    assert sum(budget.allocations.values()) + budget.reserved <= max_tokens
    assert all(value >= 0 for value in budget.allocations.values())


@settings(max_examples=60)
@given(LINES, st.integers(0, 300), COUNTERS)
def test_truncated_text_never_exceeds_its_budget_and_keeps_whole_lines(lines: list[str], budget: int, counter) -> None:
    text = "\n".join(lines)
    cut = truncate_lines(text, budget, counter)
    assert counter.count(cut.text) == cut.tokens <= budget
    if not cut.truncated:
        assert cut.text == text
    elif cut.text:
        kept = cut.text.rsplit("\n", 1)[0] + "\n" if cut.kept_lines else ""
        assert text.startswith(kept.rstrip("\n"))


@settings(max_examples=60)
@given(st.lists(TEXT, max_size=20), st.integers(0, 500), COUNTERS)
def test_fitted_items_never_exceed_their_budget_and_stay_whole(items: list[str], budget: int, counter) -> None:
    fitted = fit_items(items, budget, counter)
    assert counter.count(fitted.text) == fitted.tokens <= budget
    for index in fitted.kept:
        assert items[index] in fitted.text


@given(st.integers(0, 10**5), st.dictionaries(st.sampled_from("abcd"), st.floats(0.01, 1.0), min_size=1))
def test_share_out_splits_any_shares(pool: int, shares: dict[str, float]) -> None:
    parts = share_out(pool, shares, dict.fromkeys(shares, 10**9))
    assert sum(parts.values()) <= pool

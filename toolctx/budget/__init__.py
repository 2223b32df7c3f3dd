"""Token budgets: fixed allocations, dynamic shares that flow to whoever needs them, and cutting to fit.

::

    from toolctx.budget import TokenBudgeter

    budgeter = TokenBudgeter(fixed={"repo_map": 5_000})      # any counter: TokenBudgeter(counter=...)
    budget = budgeter.create_budget(150_000)
    budget["files"]                                           # 75,600 with the default allocations
    budgeter.allocate(budget.dynamic_pool, {"files": 90_000, "code_results": 2_000, "memories": 0})
    cut = budgeter.truncate_to_fit(source_code, 4_000)        # whole lines, then a line saying what was cut

The fixed allocations (system prompt 2,000, repo map 2,000, codebase docs 3,000,
task spec 1,000, response reserve 16,000) come off the top; the rest is shared
by files (60 %), code results (25 %) and memories (15 %). In small budgets the
reserve takes at most a quarter of the total and the other fixed allocations at
most half of what is left, so files, code and memories always keep a part.
"""

from __future__ import annotations

from toolctx.budget._allocation import (
    DYNAMIC_COMPONENTS,
    FIXED_COMPONENTS,
    DynamicShares,
    FixedAllocations,
    TokenBudget,
    share_out,
)
from toolctx.budget._budgeter import TokenBudgeter, default_counter
from toolctx.budget._truncate import FitItems, Truncation, fit_items, truncate_lines

__all__ = [
    "DYNAMIC_COMPONENTS",
    "FIXED_COMPONENTS",
    "DynamicShares",
    "FitItems",
    "FixedAllocations",
    "TokenBudget",
    "TokenBudgeter",
    "Truncation",
    "default_counter",
    "fit_items",
    "share_out",
    "truncate_lines",
]

"""Token counts: the fast estimate made when a call is saved, and the counter protocol budgets use."""

from __future__ import annotations

from toolctx.tokens._counter import EstimateCounter, TokenCounter
from toolctx.tokens._estimate import estimate_tokens

__all__ = ["EstimateCounter", "TokenCounter", "estimate_tokens"]

"""The token budgeter: creates budgets, shares the dynamic pool out, cuts text to fit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolctx._checks import fraction, whole_number
from toolctx.fresh._allocation import FIXED_COMPONENTS, DynamicShares, FixedAllocations, TokenBudget, share_out
from toolctx.fresh._truncate import FitItems, Truncation, fit_items, truncate_lines
from toolctx.tokens import TokenCounter, resolve_counter

__all__ = ["TokenBudgeter", "default_counter"]


def default_counter() -> TokenCounter:
    """The exact o200k_base counter when this install has one, else the fast estimate."""
    return resolve_counter(None)


class TokenBudgeter:
    """Splits a total token budget into allocations and fits text into them.

    ``fixed`` overrides any of the fixed allocations (a :class:`FixedAllocations`
    or a mapping such as ``{"repo_map": 5000}``); ``shares`` the dynamic shares;
    ``counter`` is any :class:`~toolctx.tokens.TokenCounter` (by default the exact
    o200k_base counter when installed, else the estimate). Every count the budgeter
    makes goes through that one counter, so a budget is kept in its units.

    Small budgets: the response reserve is at most ``max_reserved_share`` of
    ``max_tokens`` (a quarter: the default 16,000 holds from 64,000 tokens up), and
    the other fixed allocations together at most ``max_fixed_share`` of what the
    context may hold (half), scaled down together beyond it, so files, code results
    and memories always keep a part of the context. ``1.0`` for both keeps the fixed
    allocations whole for as long as they fit.
    """

    def __init__(
        self,
        fixed: FixedAllocations | Mapping[str, int] | None = None,
        shares: DynamicShares | None = None,
        counter: TokenCounter | None = None,
        *,
        max_reserved_share: float = 0.25,
        max_fixed_share: float = 0.5,
    ) -> None:
        if shares is not None and not isinstance(shares, DynamicShares):
            raise TypeError(f"shares must be a DynamicShares, not {type(shares).__name__}")
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must have a name and a count(text) method, got {type(counter).__name__}")
        self.fixed = FixedAllocations.from_mapping(fixed)
        self.shares = shares or DynamicShares()
        self.counter = counter if counter is not None else default_counter()
        self.max_reserved_share = fraction("max_reserved_share", max_reserved_share)
        self.max_fixed_share = fraction("max_fixed_share", max_fixed_share)

    def __repr__(self) -> str:
        return f"TokenBudgeter(fixed={self.fixed!r}, shares={self.shares!r}, counter={self.counter.name!r})"

    def estimate_tokens(self, text: str) -> int:
        """The tokens ``text`` costs, counted with the budgeter's counter."""
        return self.counter.count(text)

    def create_budget(self, max_tokens: int) -> TokenBudget:
        """Split ``max_tokens`` into the fixed allocations and the dynamic shares.

        With the defaults, 150,000 tokens give 24,000 fixed (16,000 of them kept for
        the response) and a pool of 126,000: 75,600 for files, 31,500 for code results,
        18,900 for memories. Below 64,000 tokens the reserve is a quarter of
        ``max_tokens`` (30,000 tokens: 7,500 reserved, a pool of 14,500). When the
        other fixed allocations would take more than half of the rest, they are scaled
        down together to that half and the budget's warnings say so.
        """
        whole_number("max_tokens", max_tokens, minimum=1, unit="tokens")
        fixed = {name: getattr(self.fixed, name) for name in FIXED_COMPONENTS}
        reserved = min(self.fixed.reserved, int(max_tokens * self.max_reserved_share))
        ceiling = int((max_tokens - reserved) * self.max_fixed_share)
        total = sum(fixed.values())
        warnings: tuple[str, ...] = ()
        if total > ceiling:
            scale = ceiling / total
            fixed = {name: int(value * scale) for name, value in fixed.items()}
            warnings = (
                f"max_tokens={max_tokens:,} is too small for the fixed allocations ({total:,} tokens beside "
                f"{reserved:,} reserved for the response); each was scaled down to {scale:.0%} so that files, "
                "code results and memories keep their part. Raise max_tokens or lower the fixed allocations.",
            )
        pool = max_tokens - reserved - sum(fixed.values())
        dynamic = share_out(pool, self.shares.as_dict(), dict.fromkeys(self.shares.as_dict(), pool))
        return TokenBudget(
            max_tokens=max_tokens,
            reserved=reserved,
            allocations={**fixed, **dynamic},
            dynamic_pool=pool,
            warnings=warnings,
        )

    def allocate(self, pool: int, demands: Mapping[str, int]) -> dict[str, int]:
        """Share ``pool`` tokens among files, code results and memories, by share, up to each one's demand.

        What a component does not need flows to the others (see :func:`share_out`).
        """
        return share_out(pool, self.shares.as_dict(), demands)

    def truncate_to_fit(self, text: str, max_tokens: int) -> Truncation:
        """``text`` cut after its last whole line that fits, with a line saying what was cut."""
        return truncate_lines(text, max_tokens, self.counter)

    def fit_items(self, items: Sequence[str], max_tokens: int, separator: str = "\n") -> FitItems:
        """The whole items that fit ``max_tokens`` in order, with a line saying how many were left out."""
        return fit_items(items, max_tokens, self.counter, separator)

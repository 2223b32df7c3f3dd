"""How a total token budget splits into fixed allocations and dynamic shares.

A budget of ``T`` tokens first sets aside the fixed allocations (system prompt,
repo map, codebase docs, task spec, and the reserve for the model's response).
What is left, the dynamic pool, is shared by the files, the code search results
and the memories in proportion to their shares (60 %, 25 %, 15 %).

A component that needs less than its part gives the rest to the others, again in
proportion to their shares (:func:`share_out`), so the pool is used wherever
there is something to put in it. Fixed allocations are ceilings: what the system
prompt, repo map, docs or task spec leave unused joins the dynamic pool when the
context is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from toolctx._checks import fraction, whole_number
from toolctx.errors import ConfigError

__all__ = ["DYNAMIC_COMPONENTS", "FIXED_COMPONENTS", "DynamicShares", "FixedAllocations", "TokenBudget", "share_out"]

#: The components with a fixed allocation, in the order a context shows them.
FIXED_COMPONENTS = ("system_prompt", "task_spec", "repo_map", "codebase_docs")
#: The components sharing the dynamic pool, most important first.
DYNAMIC_COMPONENTS = ("files", "code_results", "memories")


@dataclass(frozen=True)
class FixedAllocations:
    """Tokens set aside before anything is shared out; every one is configurable.

    ``reserved`` is kept free for the model's response and never filled.
    """

    system_prompt: int = 2_000
    repo_map: int = 2_000
    codebase_docs: int = 3_000
    task_spec: int = 1_000
    reserved: int = 16_000

    def __post_init__(self) -> None:
        for spec in fields(self):
            whole_number(spec.name, getattr(self, spec.name), unit="tokens")

    @property
    def total(self) -> int:
        """All fixed allocations together, the reserve included (24,000 by default)."""
        return sum(getattr(self, spec.name) for spec in fields(self))

    @classmethod
    def from_mapping(cls, values: Mapping[str, int] | FixedAllocations | None) -> FixedAllocations:
        """The defaults overridden by ``values`` (unknown keys are refused by name)."""
        if values is None:
            return cls()
        if isinstance(values, FixedAllocations):
            return values
        known = {spec.name for spec in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown fixed allocation {unknown[0]!r}; use one of {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class DynamicShares:
    """How the dynamic pool is shared: fractions of it, summing to 1."""

    files: float = 0.60
    code_results: float = 0.25
    memories: float = 0.15

    def __post_init__(self) -> None:
        for spec in fields(self):
            fraction(spec.name, getattr(self, spec.name))
        total = self.files + self.code_results + self.memories
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(f"dynamic shares must sum to 1, got {total:g} (files, code_results, memories)")

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in DYNAMIC_COMPONENTS}


@dataclass(frozen=True)
class TokenBudget:
    """One context's budget: ``max_tokens`` split into its allocations.

    ``allocations`` holds every component's ceiling (fixed and dynamic, in
    tokens); ``context_tokens`` is what the context itself may hold
    (``max_tokens`` minus the reserve). When ``max_tokens`` is too small for the
    fixed allocations they are scaled down together and ``warnings`` says so.
    """

    max_tokens: int
    reserved: int
    allocations: dict[str, int]
    dynamic_pool: int
    warnings: tuple[str, ...] = field(default=())

    @property
    def context_tokens(self) -> int:
        """Tokens the context may use: everything but the response reserve."""
        return self.max_tokens - self.reserved

    def __getitem__(self, component: str) -> int:
        return self.allocations[component]


def share_out(pool: int, shares: Mapping[str, float], demands: Mapping[str, int]) -> dict[str, int]:
    """Split ``pool`` tokens by ``shares``, giving no component more than its demand.

    A component wanting less than its share takes what it wants and the rest is
    shared among the others by their shares, until every component is either
    satisfied or at its share of what remains. The parts are whole tokens and
    never add up to more than ``pool``; components missing from ``demands``
    want nothing.
    """
    whole_number("pool", pool, unit="tokens")
    granted = dict.fromkeys(shares, 0)
    wanting = {name for name, share in shares.items() if share > 0 and demands.get(name, 0) > 0}
    left = pool
    while wanting and left > 0:
        weight = sum(shares[name] for name in wanting)
        satisfied = {name for name in wanting if demands[name] - granted[name] <= left * shares[name] / weight}
        if satisfied:
            for name in satisfied:
                left -= demands[name] - granted[name]
                granted[name] = demands[name]
            wanting -= satisfied
            continue
        # Nobody is satisfied: each takes its share, rounded down, and the few tokens
        # rounding left over go to the largest shares first.
        order = sorted(wanting, key=lambda name: (-shares[name], name))
        parts = {name: int(left * shares[name] / weight) for name in order}
        spare = left - sum(parts.values())
        for name in order:
            extra = min(spare, demands[name] - granted[name] - parts[name])
            if extra > 0:
                parts[name] += extra
                spare -= extra
            granted[name] += parts[name]
        break
    return granted

"""Selection strategies: small callables that score candidate pointers for a query.

A strategy takes one :class:`SelectionState` and returns :class:`Scored` pointers,
best first, for the candidates it finds relevant. Strategies combine::

    bm25() * 0.8 + recency() * 0.2        # weighted sum of scores normalised to [0, 1]
    bm25() & in_task(3)                   # only what both score: bm25, within task 3

and any plain callable ``state -> iterable of Scored, (pointer, score) or pointers``
works wherever a strategy does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctx._checks import real_number
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer
from toolctx.selection._text import tokenize

if TYPE_CHECKING:
    from toolctx.selection._index import SearchIndex

__all__ = [
    "Candidates",
    "Scored",
    "SelectionState",
    "Strategy",
    "as_strategy",
    "best_first",
    "pointer_tokens",
    "register",
    "utc_now",
]


class Scored(NamedTuple):
    pointer: ContextPointer
    score: float


class Candidates(Sequence[ContextPointer]):
    """The pointers a selection chooses from, built only when a strategy looks at them.

    A session has one record per call and building a pointer costs microseconds,
    so over 100,000 calls a strategy that only needs ids (BM25 with its index)
    must not build them all: ``ids`` is cheap, pointers are made on first access
    and cached. ``everything`` says the candidates are all of the index's documents.
    """

    def __init__(self, ids: Sequence[str], make: Callable[[str], ContextPointer], *, everything: bool = False) -> None:
        self.ids = list(ids)
        self._make = make
        self._made: dict[str, ContextPointer] = {}
        self.everything = everything

    @classmethod
    def of(cls, pointers: Iterable[ContextPointer]) -> Candidates:
        if isinstance(pointers, Candidates):
            return pointers
        by_id = {p.id: p for p in pointers}
        return cls(list(by_id), by_id.__getitem__)

    def get(self, pointer_id: str) -> ContextPointer:
        pointer = self._made.get(pointer_id)
        if pointer is None:
            pointer = self._made[pointer_id] = self._make(pointer_id)
        return pointer

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.get(i) for i in self.ids[index]]
        return self.get(self.ids[index])

    def __iter__(self) -> Any:
        return (self.get(i) for i in self.ids)


def pointer_tokens(pointer: ContextPointer) -> int:
    """A pointer's size in tokens: the estimate made when it was saved."""
    return pointer.tokens


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclasses.dataclass(frozen=True)
class SelectionState:
    """Everything a strategy may look at.

    ``index`` is the session's search index when the candidates come from a
    session; strategies that need one build a temporary index otherwise.
    ``token_counter`` gives a pointer's size in tokens (the estimate made at save
    time by default); ``clock`` is "now" for recency.
    """

    query: str
    candidates: Candidates
    k: int | None = None
    budget_tokens: int | None = None
    token_counter: Callable[[ContextPointer], int] = pointer_tokens
    clock: Callable[[], datetime] = utc_now
    index: SearchIndex | None = None
    min_score_ratio: float = 0.0
    """Strategies may leave out pointers scoring under this fraction of their best."""

    @cached_property
    def terms(self) -> list[str]:
        """The query's search terms (see :func:`toolctx.selection.tokenize`)."""
        return tokenize(self.query)

    @cached_property
    def positions(self) -> dict[str, int]:
        """Candidate id -> position, for deterministic tie-breaking (earlier first)."""
        return {pointer_id: i for i, pointer_id in enumerate(self.candidates.ids)}

    def narrowed(self, ids: Iterable[str]) -> SelectionState:
        """The same state with only the candidates in ``ids``."""
        keep = set(ids)
        candidates = self.candidates
        subset = Candidates([i for i in candidates.ids if i in keep], candidates.get)
        return dataclasses.replace(self, candidates=subset)


def best_first(items: Iterable[Scored], state: SelectionState) -> list[Scored]:
    """Sort by score, highest first; equal scores keep the candidates' order."""
    positions = state.positions
    return sorted(items, key=lambda s: (-s.score, positions.get(s.pointer.id, len(positions))))


class Strategy:
    """Base class: implement :meth:`rank`. Supports ``+``, ``*`` (by a number) and ``&``."""

    name = "strategy"

    def rank(self, state: SelectionState) -> list[Scored]:
        raise NotImplementedError(f"{type(self).__name__} must implement rank(state)")  # pragma: no cover

    def __call__(self, state: SelectionState) -> list[Scored]:
        return self.rank(state)

    def __repr__(self) -> str:
        return f"{self.name}()"

    def __add__(self, other: object) -> Strategy:
        return _Sum(_terms(self) + _terms(as_strategy(other)))

    def __radd__(self, other: object) -> Strategy:
        return as_strategy(other) + self

    def __mul__(self, weight: object) -> Strategy:
        factor = real_number("a strategy's weight", weight, minimum=0.0)
        return _Sum([(w * factor, s) for w, s in _terms(self)])

    __rmul__ = __mul__

    def __and__(self, other: object) -> Strategy:
        return _Both(self, as_strategy(other))


def _terms(strategy: Strategy) -> list[tuple[float, Strategy]]:
    return list(strategy.parts) if isinstance(strategy, _Sum) else [(1.0, strategy)]


class _Sum(Strategy):
    """Weighted sum of each part's scores, each first divided by its best score."""

    name = "sum"

    def __init__(self, parts: list[tuple[float, Strategy]]) -> None:
        self.parts = parts

    def __repr__(self) -> str:
        return " + ".join(f"{w:g} * {s!r}" for w, s in self.parts)

    def rank(self, state: SelectionState) -> list[Scored]:
        # parts must score every candidate they can: no k, no budget, no cut
        everything = dataclasses.replace(state, k=None, budget_tokens=None, min_score_ratio=0.0)
        pointers: dict[str, ContextPointer] = {}
        totals: dict[str, float] = {}
        for weight, part in self.parts:
            scored = part(everything)
            top = max((s.score for s in scored), default=0.0)
            if top <= 0 or weight == 0:
                continue
            for pointer, score in scored:
                pointers[pointer.id] = pointer
                totals[pointer.id] = totals.get(pointer.id, 0.0) + weight * score / top
        return best_first((Scored(pointers[i], t) for i, t in totals.items() if t > 0), state)


class _Both(Strategy):
    """What both strategies score, with the product of their scores."""

    name = "both"

    def __init__(self, left: Strategy, right: Strategy) -> None:
        self.left, self.right = left, right

    def __repr__(self) -> str:
        return f"({self.left!r} & {self.right!r})"

    def rank(self, state: SelectionState) -> list[Scored]:
        everything = dataclasses.replace(state, k=None, budget_tokens=None, min_score_ratio=0.0)
        right = {s.pointer.id: s.score for s in self.right(everything)}
        narrowed = everything.narrowed(right)
        return best_first((Scored(p, s * right[p.id]) for p, s in self.left(narrowed) if p.id in right), state)


class _Callable(Strategy):
    def __init__(self, func: Callable[[SelectionState], Iterable[Any]]) -> None:
        self.func = func
        self.name = getattr(func, "__name__", "callable")

    def rank(self, state: SelectionState) -> list[Scored]:
        returned = self.func(state)
        try:
            items = list(returned)
        except TypeError:
            raise ConfigError(
                f"selection strategy {self.name!r} returned {returned!r:.80}; "
                "return a list of pointers (best first) or of (pointer, score) pairs"
            ) from None
        known = set(state.candidates.ids)
        scored: list[Scored] = []
        for position, item in enumerate(items):
            if isinstance(item, ContextPointer):  # a plain list of pointers: its order is the ranking
                pointer, score = item, float(len(items) - position)
            elif isinstance(item, tuple) and len(item) == 2:
                pointer = item[0]
                score = real_number(f"the score selection strategy {self.name!r} gave", item[1])
            else:
                raise ConfigError(
                    f"selection strategy {self.name!r} returned the item {item!r:.80}; "
                    "return pointers or (pointer, score) pairs"
                )
            if not isinstance(pointer, ContextPointer) or pointer.id not in known:
                continue  # a strategy may only choose among the candidates
            scored.append(Scored(pointer, score))
        return best_first(scored, state)


_NAMED: dict[str, Callable[[], Strategy]] = {}


def register(name: str, factory: Callable[[], Strategy]) -> None:
    """Make ``strategy="name"`` mean ``factory()``."""
    _NAMED[name] = factory


def as_strategy(value: object) -> Strategy:
    """A Strategy from a strategy, a registered name ("bm25", "keyword", "recency") or a callable."""
    if isinstance(value, Strategy):
        return value
    if isinstance(value, str):
        factory = _NAMED.get(value)
        if factory is None:
            raise ConfigError(f"unknown selection strategy {value!r}; use one of {sorted(_NAMED)} or a callable")
        return factory()
    if callable(value):
        return _Callable(value)
    raise ConfigError(
        f"strategy must be a name, a Strategy or a callable taking the selection state, got {value!r:.80}"
    )

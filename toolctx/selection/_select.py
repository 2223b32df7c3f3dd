"""From a strategy's ranking to the pointers an agent should load: cut, k, token budget."""

from __future__ import annotations

import dataclasses

from toolctx._checks import fraction, whole_number
from toolctx._internal import DEBUG, log
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer
from toolctx.selection._base import Scored, SelectionState, Strategy
from toolctx.selection._recency import Recency

__all__ = ["MIN_SCORE_RATIO", "select", "validate_limits"]

MIN_SCORE_RATIO = 0.25
"""Without ``k``, pointers scoring under this fraction of the best one are left out."""


def validate_limits(k: object, budget_tokens: object, min_score_ratio: object) -> None:
    if k is not None:
        whole_number("k", k, minimum=1)
    if budget_tokens is not None:
        whole_number("budget_tokens", budget_tokens, unit="tokens")
    fraction("min_score_ratio", min_score_ratio)


def select(state: SelectionState, strategy: Strategy, min_score_ratio: float = MIN_SCORE_RATIO) -> list[ContextPointer]:
    """The pointers to load for ``state.query``, best first.

    - When the strategy finds nothing and the query has no search terms at all
      (only stop words, punctuation or emoji), the query says nothing about
      relevance: the most recent pointers come first instead.
    - Without ``k``, pointers scoring under ``min_score_ratio`` of the best are cut.
    - With ``budget_tokens``, pointers are taken best first while they fit; one
      that does not fit is skipped and smaller ones after it may still be taken.
      The sum of the chosen pointers' token counts never exceeds the budget.

    Strategies see ``k``, the budget and the cut in the state and may apply them
    early (BM25 fills the budget inside its index); the walk below makes sure of
    all three whatever the strategy did.
    """
    validate_limits(state.k, state.budget_tokens, min_score_ratio)
    if not state.candidates:
        return []
    ratio = min_score_ratio if state.k is None else 0.0
    ranked = _ranking(dataclasses.replace(state, min_score_ratio=ratio), strategy)
    if state.k is None and ranked and ranked[0].score > 0:
        ranked = [s for s in ranked if s.score >= ranked[0].score * ratio]
    return _take(ranked, state)


def _ranking(state: SelectionState, strategy: Strategy) -> list[Scored]:
    ranked = strategy(state)
    if not isinstance(ranked, list) or not all(isinstance(s, Scored) for s in ranked):
        raise ConfigError(
            f"selection strategy {strategy!r} returned {ranked!r:.80}; a Strategy's rank() returns a list of "
            "Scored(pointer, score), best first"
        )
    if not ranked and not state.terms:
        log(DEBUG, "selection_fallback", reason="the query has no search terms", query=state.query[:200])
        ranked = Recency()(state)
        if state.k is not None:
            ranked = ranked[: state.k]
    return ranked


def _take(ranked: list[Scored], state: SelectionState) -> list[ContextPointer]:
    chosen: list[ContextPointer] = []
    spent = 0
    for pointer, _ in ranked:
        if state.budget_tokens is not None:
            cost = state.token_counter(pointer)
            if spent + cost > state.budget_tokens:
                continue
            spent += cost
        chosen.append(pointer)
        if state.k is not None and len(chosen) >= state.k:
            break
    return chosen

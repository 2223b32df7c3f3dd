"""BM25 selection over tool name, description, arguments and result preview."""

from __future__ import annotations

import orjson

from toolctx.models import ContextPointer
from toolctx.selection._base import Scored, SelectionState, Strategy, pointer_tokens, register
from toolctx.selection._index import SearchIndex

__all__ = ["BM25", "bm25", "document_text"]


def document_text(pointer: ContextPointer) -> tuple[str, str]:
    """What BM25 indexes for a pointer: (name, description and arguments; result preview)."""
    boosted = f"{pointer.tool_name} {pointer.tool_description} {orjson.dumps(pointer.args).decode()}"
    return boosted, pointer.preview


class BM25(Strategy):
    """Okapi BM25 over the session's incremental search index.

    Uses the session's incremental index when the state carries one; otherwise
    it indexes the candidates for this one query.
    """

    name = "bm25"

    def rank(self, state: SelectionState) -> list[Scored]:
        candidates = state.candidates
        index = state.index
        if index is None:
            index = SearchIndex()
            for pointer in candidates:
                index.add(pointer.id, *document_text(pointer))
        allowed = None if candidates.everything else candidates.ids
        # The session's index knows every call's token estimate, so it can fill a budget
        # itself without building a pointer per hit; with another counter, rank everything.
        sized = state.index is not None and state.token_counter is pointer_tokens
        budget = state.budget_tokens if sized else None
        limit = state.k if state.budget_tokens is None or sized else None
        hits = index.search(state.terms, candidates=allowed, k=limit, min_ratio=state.min_score_ratio, budget=budget)
        return [Scored(candidates.get(doc_id), score) for doc_id, score in hits]


def bm25() -> BM25:
    """The default strategy: BM25 over name, description, arguments and result preview."""
    return BM25()


register("bm25", bm25)

"""Keyword-overlap selection: the seed's MVP heuristic, kept for compatibility.

Words longer than two characters are taken from the query and from each
pointer's description; a pointer scores the number of query words its
description shares. Pointers that share at least one word come back best first
(ties keep their original order); when none does, all pointers come back, in
their original order, with a score of zero.
"""

from __future__ import annotations

import re

from toolctx.selection._base import Scored, SelectionState, Strategy, best_first, register

__all__ = ["Keyword", "keyword", "keyword_terms"]

_WORD = re.compile(r"\w+")


def keyword_terms(text: str) -> set[str]:
    """The lower-cased words of ``text`` longer than two characters."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class Keyword(Strategy):
    name = "keyword"

    def rank(self, state: SelectionState) -> list[Scored]:
        terms = keyword_terms(state.query)
        scored = [Scored(p, float(len(terms & keyword_terms(p.tool_description)))) for p in state.candidates]
        hits = [s for s in scored if s.score > 0]
        return best_first(hits, state) if hits else scored


def keyword() -> Keyword:
    """The seed's keyword-overlap strategy."""
    return Keyword()


register("keyword", keyword)

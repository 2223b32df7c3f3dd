"""Keyword-overlap selection: the seed's MVP heuristic, kept for compatibility.

Words longer than two characters are taken from the query and from each
pointer's description; a pointer scores the number of query words its
description shares. Pointers that share at least one word come back best first
(ties keep their original order); when none does, all pointers come back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from toolctx.models import ContextPointer

__all__ = ["keyword_terms", "select_keyword"]

_WORD = re.compile(r"\w+")


def keyword_terms(text: str) -> set[str]:
    """The lower-cased words of ``text`` longer than two characters."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def select_keyword(query: str, pointers: Sequence[ContextPointer]) -> list[ContextPointer]:
    """Pointers ordered by keyword overlap with ``query``; all of them if none overlaps."""
    terms = keyword_terms(query)
    scored = [(len(terms & keyword_terms(p.tool_description)), i) for i, p in enumerate(pointers)]
    hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    if not hits:
        return list(pointers)
    return [pointers[i] for _, i in hits]

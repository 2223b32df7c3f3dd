"""Choosing which stored outputs matter for a question.

Strategies score candidate pointers for a query; :func:`select` turns a ranking
into the pointers to load (minimum-score cut, ``k``, token budget). The session's
``select_relevant_contexts`` is the usual entry point; these are its parts::

    from toolctx.selection import bm25, recency, in_task, llm

    s.select_relevant_contexts("AAPL revenue", strategy=bm25() * 0.8 + recency() * 0.2)
    s.select_relevant_contexts("failing test", strategy=bm25() & in_task(3))
    s.select_relevant_contexts("what did we find", strategy=llm(chat_model), budget_tokens=4000)
"""

from __future__ import annotations

from toolctx.selection._base import Candidates, Scored, SelectionState, Strategy, as_strategy, pointer_tokens, utc_now
from toolctx.selection._bm25 import BM25, bm25, document_text
from toolctx.selection._index import SearchIndex
from toolctx.selection._keyword import Keyword, keyword, keyword_terms
from toolctx.selection._llm import LLM, SYSTEM_PROMPT, llm, parse_context_ids
from toolctx.selection._recency import InQuery, InTask, Recency, in_query, in_task, recency
from toolctx.selection._select import MIN_SCORE_RATIO, select
from toolctx.selection._text import tokenize

__all__ = [
    "BM25",
    "LLM",
    "MIN_SCORE_RATIO",
    "SYSTEM_PROMPT",
    "Candidates",
    "InQuery",
    "InTask",
    "Keyword",
    "Recency",
    "Scored",
    "SearchIndex",
    "SelectionState",
    "Strategy",
    "as_strategy",
    "bm25",
    "document_text",
    "in_query",
    "in_task",
    "keyword",
    "keyword_terms",
    "llm",
    "parse_context_ids",
    "pointer_tokens",
    "recency",
    "select",
    "tokenize",
    "utc_now",
]

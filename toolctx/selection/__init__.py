"""Choosing which stored outputs matter for a question."""

from __future__ import annotations

from toolctx.selection.keyword import keyword_terms, select_keyword

__all__ = ["keyword_terms", "select_keyword"]

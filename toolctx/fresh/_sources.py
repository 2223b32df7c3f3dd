"""The project's own docs and the agent's memories, as the builder gathers them."""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from toolctx.fresh._models import CodebaseDocsSummary, DocSection, MemoryEntry
from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._truncate import truncate_lines
from toolctx.selection import SearchIndex, tokenize
from toolctx.tokens import TokenCounter

__all__ = ["MemorySource", "codebase_docs", "gather_memories"]

_DOC_STEMS = ("README", "ARCHITECTURE", "CONTRIBUTING")
_DOC_SUFFIXES = ("", ".md", ".rst", ".txt", ".markdown")
_MAX_DOCSTRINGS = 40
_DOCSTRING_TOKENS = 300


class MemorySource(Protocol):
    """One agent's memory: :class:`toolctx.memory.AgentMemory` or anything with its ``items`` method."""

    def items(self, tier: Any = None, *, archived: bool = False, limit: int | None = None) -> list[Any]: ...


def _doc_files(paths: Collection[str]) -> list[str]:
    found = []
    for stem in _DOC_STEMS:
        for folder in ("", "docs/", "doc/"):
            for suffix in _DOC_SUFFIXES:
                for name in (stem, stem.lower(), stem.title()):
                    if f"{folder}{name}{suffix}" in paths:
                        found.append(f"{folder}{name}{suffix}")
    return list(dict.fromkeys(found))


def _package_inits(paths: Collection[str]) -> list[str]:
    inits = [p for p in paths if p.endswith("/__init__.py") and p.count("/") <= 3 and "test" not in p]
    return sorted(inits, key=lambda p: (p.count("/"), p))[:_MAX_DOCSTRINGS]


def _docstring(text: str) -> str | None:
    try:
        return ast.get_docstring(ast.parse(text))
    except (SyntaxError, ValueError):
        return None


def codebase_docs(
    files: ProjectFiles, paths: Collection[str], max_tokens: int, counter: TokenCounter
) -> CodebaseDocsSummary:
    """README, ARCHITECTURE and CONTRIBUTING, then package docstrings, fitted to ``max_tokens``.

    The first document may take half the budget, each later one a quarter of it
    (cut at a line and marked); docstrings come whole, each cut to 300 tokens,
    while they fit.
    """
    sections: list[DocSection] = []
    left = max_tokens
    for number, path in enumerate(_doc_files(paths)):
        text = files.read(path).text
        if not text or not text.strip() or left <= 0:
            continue
        cap = min(left, max_tokens // 2 if number == 0 else max_tokens // 4)
        cut = truncate_lines(f"### {path}\n{text.strip()}", cap, counter)
        if cut.text:
            sections.append(DocSection(path=path, text=cut.text, truncated=cut.truncated))
            left -= cut.tokens
    for path in _package_inits(paths):
        source = files.read(path).text
        doc = _docstring(source) if source else None
        if not doc:
            continue
        cut = truncate_lines(f"### {path} (package docstring)\n{doc.strip()}", min(left, _DOCSTRING_TOKENS), counter)
        if cut.text and cut.tokens <= left:
            sections.append(DocSection(path=path, text=cut.text, truncated=cut.truncated))
            left -= cut.tokens
    return CodebaseDocsSummary(sections=tuple(sections), tokens=max_tokens - left)


def _entry(item: Any) -> MemoryEntry:
    tier = getattr(item, "tier", "")
    return MemoryEntry(
        id=int(item.id),
        item_type=str(item.item_type),
        content=str(item.content),
        tier=str(getattr(tier, "value", tier)),
        importance_score=float(item.importance_score),
    )


def gather_memories(source: MemorySource, task_text: str, limit: int, min_relevance: float) -> list[MemoryEntry]:
    """The agent's HOT items, best first, then the WARM items most relevant to the task, ``limit`` in all.

    Items are looked at, not loaded: building a context does not count as an access.
    A WARM item must score at least ``min_relevance`` of the best WARM item's score.
    """
    if limit <= 0:
        return []
    hot = [_entry(item) for item in source.items("HOT", limit=limit)]
    room = limit - len(hot)
    if room <= 0:
        return hot
    warm = {str(item.id): item for item in source.items("WARM", limit=500)}
    index = SearchIndex()
    for item_id, item in warm.items():
        index.add(item_id, str(item.item_type), str(item.content))
    ranked: Sequence[tuple[str, float]] = index.search(tokenize(task_text), k=room, min_ratio=min_relevance)
    return hot + [_entry(warm[item_id]) for item_id, _score in ranked]

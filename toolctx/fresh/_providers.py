"""What the builder asks its sources for, and the plain sources it falls back on.

A source is any object with the methods below: the tree-sitter repo map and code
search of :mod:`toolctx.fresh`, a user's own semantic search (the seed's
CodeMemory), or :class:`PlainSearch`, which needs no parser. A missing or
failing source leaves its part of the context empty and says so in the
context's warnings; it never stops the build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from toolctx.fresh._chunks import ChunkIndex
from toolctx.fresh._models import CodeSearchResult
from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._truncate import fit_items
from toolctx.tokens import TokenCounter

__all__ = ["CodeHit", "CodeSearchProvider", "PlainSearch", "RepoMapProvider", "as_result", "fuse_rankings"]


@runtime_checkable
class RepoMapProvider(Protocol):
    """Ranks a project's files for a task and renders a map of them within a token budget."""

    def rank_files(self, task_text: str, mentioned_files: Sequence[str]) -> list[tuple[str, float]]:
        """Files relative to the root, best first, with their scores."""
        ...

    def render(self, task_text: str, mentioned_files: Sequence[str], max_tokens: int) -> str:
        """The map: files and their top-level symbols, at most ``max_tokens`` tokens."""
        ...


class CodeHit(Protocol):
    """A piece of code a search found."""

    @property
    def path(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


@runtime_checkable
class CodeSearchProvider(Protocol):
    """Finds the code most relevant to a query (BM25, embeddings, or a user's own index)."""

    def search(self, query: str, k: int) -> Sequence[CodeHit]:
        """At most ``k`` hits, best first."""
        ...


def as_result(hit: CodeHit) -> CodeSearchResult:
    """Any source's hit as the context's own record."""
    return CodeSearchResult(
        path=str(hit.path),
        name=str(hit.name),
        start_line=int(hit.start_line),
        end_line=int(hit.end_line),
        text=str(hit.text),
        score=float(hit.score),
    )


def fuse_rankings(rankings: Sequence[Sequence[tuple[str, float]]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each ranking gives ``1 / (k + rank)`` to its items; best first, ties by path."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (path, _score) in enumerate(ranking, start=1):
            fused[path] = fused.get(path, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


class PlainSearch:
    """Repo map and code search without a parser: BM25 over chunks, files listed by path.

    :meth:`refresh` brings it in line with a scan of the project; the builder calls
    it at the start of each build.
    """

    def __init__(self, files: ProjectFiles, counter: TokenCounter) -> None:
        self.files = files
        self.counter = counter
        self.index = ChunkIndex(files)
        self._paths: list[str] = []

    def refresh(self, listing: Sequence[tuple[str, int, int]]) -> None:
        self._paths = [path for path, _mtime, _size in listing]
        self.index.refresh(listing)

    def rank_files(self, task_text: str, mentioned_files: Sequence[str]) -> list[tuple[str, float]]:
        return self.index.rank_files(task_text)

    def render(self, task_text: str, mentioned_files: Sequence[str], max_tokens: int) -> str:
        """The task's files, then the best-ranked ones with their definitions, then every other file by path."""
        ranked = [path for path, _score in self.rank_files(task_text, mentioned_files)]
        first = list(dict.fromkeys([*mentioned_files, *ranked[:30]]))
        seen = set(first)
        entries = []
        for path in first:
            outline = self.index.outline(path)[:12]
            entries.append("\n".join([path, *(f"  {name}" for name in outline)]))
        entries.extend(path for path in self._paths if path not in seen)
        return fit_items(entries, max_tokens, self.counter).text

    def search(self, query: str, k: int) -> list[CodeSearchResult]:
        return [
            CodeSearchResult(
                path=chunk.path,
                name=chunk.name,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                text=chunk.text,
                score=score,
            )
            for chunk, score in self.index.search(query, k)
        ]

"""Code search over a project: BM25 over its functions and classes, plus a user's own search if given.

Chunks come from the same parse as the repo map (:mod:`toolctx.fresh._tags`):
each function and method whole, each class (or interface, impl, enum) as its
lines outside its methods, and a file's remaining top-level lines (settings,
constants, imports) in runs. A chunk longer than ``max_chunk_lines`` keeps its
first ``max_chunk_lines`` lines. The index is :class:`toolctx.selection.SearchIndex`
with toolctx's tokenizer, which splits ``camelCase`` and ``snake_case`` names:
the chunk's name, enclosing definition and path count double.

The index follows the project: a search first drops the chunks of files that
changed or went away and adds those of new or changed files.

``semantic`` is the hook for a search of your own (embeddings, the seed's
CodeMemory): any object with ``search(query, k)`` returning hits with ``path``,
``name``, ``start_line``, ``end_line``, ``text`` and ``score``. Its hits and the
BM25 hits are merged by reciprocal rank fusion.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._tags import LANGUAGES, FileTags, shared_cache
from toolctx.selection import SearchIndex, tokenize

__all__ = ["CodeSearch", "CodeSearchHit", "chunks_of"]

_CONTAINERS = frozenset({"class", "interface", "impl", "enum", "module"})
_FUSION_K = 60


@dataclass(frozen=True, slots=True)
class CodeSearchHit:
    """A piece of code a search found; lines are 1-based and inclusive."""

    path: str
    name: str
    start_line: int
    end_line: int
    text: str
    score: float


def chunks_of(tags: FileTags, line_count: int, max_lines: int) -> list[tuple[str, str, int, int]]:
    """A file's chunks as ``(name, context, start_line, end_line)``, in source order.

    ``context`` is the enclosing definition's name. Lines of containers outside
    their members form the container's chunk; top-level lines outside every
    definition form ``<module>`` chunks of at most ``max_lines`` lines.
    """
    covered = [False] * (line_count + 2)
    chunks: list[tuple[str, str, int, int]] = []
    for definition in tags.definitions:
        if definition.kind in _CONTAINERS or definition.kind == "constant":
            continue
        start, end = definition.line, min(definition.end_line, line_count)
        if any(covered[start : end + 1]):  # a function inside a function: the outer one holds it
            continue
        for number in range(start, end + 1):
            covered[number] = True
        chunks.append((definition.name, definition.parent, start, min(end, start + max_lines - 1)))
    for definition in tags.definitions:
        if definition.kind not in _CONTAINERS:
            continue
        own = [n for n in range(definition.line, min(definition.end_line, line_count) + 1) if not covered[n]]
        for number in own:
            covered[number] = True
        if own:
            chunks.append((definition.name, definition.parent, own[0], min(own[-1], own[0] + max_lines - 1)))
    start = 0
    for number in range(1, line_count + 2):  # runs of top-level lines outside every chunk
        if number <= line_count and not covered[number]:
            start = start or number
            if number - start + 1 < max_lines:
                continue
            chunks.append(("<module>", "", start, number))
            start = 0
        elif start:
            chunks.append(("<module>", "", start, number - 1))
            start = 0
    return sorted(chunks, key=lambda c: (c[2], c[3]))


class CodeSearch:
    """BM25 search over one project's functions and classes, with a hook for a search of your own.

    Each function and method is a chunk, each class its lines outside its methods,
    and a file's other top-level lines (settings, constants) come in runs of at most
    ``max_chunk_lines`` lines. ``camelCase`` and ``snake_case`` names match their
    words; a chunk's name, enclosing definition and path count double. The index
    follows the project: a search first re-indexes files that changed.

    ``semantic`` is any object with ``search(query, k)`` returning hits with
    ``path``, ``name``, ``start_line``, ``end_line``, ``text`` and ``score`` (an
    embedding search, the seed's CodeMemory); its hits and the BM25 hits are merged
    by reciprocal rank fusion. Files are read as :class:`RepoMap` reads them: only
    regular files inside ``root``, and no file named like credentials unless
    ``include_secret_files``. Safe to share between threads.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        semantic: Any = None,
        cache_dir: str | os.PathLike[str] | None = None,
        max_chunk_lines: int = 150,
        max_file_chars: int = 1_000_000,
        max_files: int = 100_000,
        encoding: str = "utf-8",
        include_secret_files: bool = False,
    ) -> None:
        folder = Path(root).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"the project root {str(root)!r} is not a directory; pass an existing folder")
        if max_chunk_lines < 1:
            raise ValueError(f"max_chunk_lines must be 1 or more, got {max_chunk_lines}")
        if semantic is not None and not callable(getattr(semantic, "search", None)):
            raise TypeError(f"semantic must have a search(query, k) method, got {type(semantic).__name__}")
        self.files = ProjectFiles(
            folder,
            max_chars=max_file_chars,
            encoding=encoding,
            max_files=max_files,
            include_secrets=include_secret_files,
        )
        self.root = self.files.root
        self.semantic = semantic
        self.max_chunk_lines = max_chunk_lines
        self.cache = shared_cache(self.root, cache_dir)
        self._index = SearchIndex()
        self._lock = threading.Lock()
        self._versions: dict[str, tuple[int, int, list[str]]] = {}  # path -> (mtime, size, chunk ids)
        self._chunks: dict[str, tuple[str, str, int, int]] = {}  # chunk id -> (path, name, start, end)
        self._handed = False

    def refresh(self, listing: Sequence[tuple[str, int, int]] | None = None) -> None:
        """Bring the index in line with the project: from ``listing`` (``(path, mtime_ns, size)``) or a scan.

        Once a listing has been handed over, searches use the index as last refreshed
        instead of scanning the project each time.
        """
        self._handed = listing is not None
        self._update(list(listing) if listing is not None else self.files.scan()[0])

    def _update(self, listing: list[tuple[str, int, int]]) -> None:
        with self._lock:
            current = {path: (mtime, size) for path, mtime, size in listing if _is_code(path)}
            stale = [p for p, (m, s, _) in self._versions.items() if current.get(p) != (m, s)]
            for path in stale:
                ids = self._versions.pop(path)[2]
                self._index.remove(ids)
                for chunk_id in ids:
                    self._chunks.pop(chunk_id, None)
            for path, (mtime, size) in current.items():
                if path not in self._versions:
                    self._versions[path] = (mtime, size, self._add(path, mtime, size))

    def _add(self, path: str, mtime: int, size: int) -> list[str]:
        text = self.files.read(path).text
        if text is None:
            return []
        tags = self.cache.get(path, mtime, size, lambda: text)
        lines = text.split("\n")
        ids = []
        for name, context, start, end in chunks_of(tags, len(lines), self.max_chunk_lines):
            chunk_id = f"{path}:{start}"
            body = "\n".join(lines[start - 1 : end])
            if not body.strip():  # blank lines between definitions
                continue
            self._index.add(chunk_id, f"{name} {context} {path}", body, tokens=len(body) // 4)
            self._chunks[chunk_id] = (path, name, start, end)
            ids.append(chunk_id)
        return ids

    def search(self, query: str, k: int = 5) -> list[CodeSearchHit]:
        """At most ``k`` chunks for ``query``, best first (merged with the ``semantic`` search's hits if given)."""
        if k < 1 or not query.strip():
            return []
        if not self._handed:
            self._update(self.files.scan()[0])
        with self._lock:
            ranked = self._index.search(tokenize(query), k=k)
            found = [(self._chunks[chunk_id], score) for chunk_id, score in ranked if chunk_id in self._chunks]
        hits = [self._hit(path, name, start, end, score) for (path, name, start, end), score in found]
        if self.semantic is None:
            return [h for h in hits if h is not None]
        return self._fuse([h for h in hits if h is not None], list(self.semantic.search(query, k)), k)

    def _hit(self, path: str, name: str, start: int, end: int, score: float) -> CodeSearchHit | None:
        text = self.files.read(path).text
        if text is None:
            return None
        return CodeSearchHit(path, name, start, end, "\n".join(text.split("\n")[start - 1 : end]), score)

    @staticmethod
    def _fuse(ours: list[CodeSearchHit], theirs: list[Any], k: int) -> list[CodeSearchHit]:
        scores: dict[tuple[str, int, int], float] = {}
        hits: dict[tuple[str, int, int], CodeSearchHit] = {}
        for ranking in (ours, theirs):
            for rank, hit in enumerate(ranking, start=1):
                key = (str(hit.path), int(hit.start_line), int(hit.end_line))
                scores[key] = scores.get(key, 0.0) + 1.0 / (_FUSION_K + rank)
                if key not in hits:
                    hits[key] = CodeSearchHit(key[0], str(hit.name), key[1], key[2], str(hit.text), 0.0)
        best = sorted(scores, key=lambda key: (-scores[key], key))[:k]
        return [replace(hits[key], score=scores[key]) for key in best]


def _is_code(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in LANGUAGES

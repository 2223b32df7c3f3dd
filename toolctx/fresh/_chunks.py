"""Plain search over a project without a parser: code cut into chunks at top-level definitions, BM25 over them.

This is what the builder ranks files and searches code with when no repo map or
code search is given (or tree-sitter is not installed). A chunk starts at each
line that opens a top-level definition in the common languages (``def``,
``class``, ``func``, ``fn``, ``function``, ``interface``, ...) and holds at most
80 lines. The index follows the project: each search first drops the chunks of
files that changed or went away and adds those of new or changed files, so a
second build tokenizes only what changed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from toolctx.fresh._project import ProjectFiles
from toolctx.selection import SearchIndex, tokenize

__all__ = ["INDEXED_SUFFIXES", "Chunk", "ChunkIndex"]

#: Files whose text is indexed (others are listed by path only).
INDEXED_SUFFIXES = frozenset(
    [
        ".py",
        ".pyi",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".rb",
        ".php",
        ".swift",
        ".m",
        ".sh",
        ".bash",
        ".sql",
        ".lua",
        ".r",
        ".jl",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".clj",
        ".dart",
        ".vue",
        ".svelte",
        ".md",
        ".rst",
        ".txt",
        ".toml",
        ".yaml",
        ".yml",
        ".cfg",
        ".ini",
        ".json",
        ".html",
        ".css",
        ".scss",
    ]
)
_MAX_CHUNK_LINES = 80
_DEFINITION = re.compile(
    r"^(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|protected\s+|static\s+|abstract\s+|final\s+|async\s+|"
    r"default\s+|@)*"
    r"(?:def|class|func|fn|function|interface|struct|enum|trait|impl|type|module|object|const|let|var|record)\b"
)


@dataclass(frozen=True)
class Chunk:
    """A run of a file's lines (1-based, inclusive) and the line that names it."""

    path: str
    name: str
    start_line: int
    end_line: int
    text: str


def split_chunks(path: str, text: str) -> list[Chunk]:
    """``text`` cut before every top-level definition and every 80 lines."""
    lines = text.splitlines()
    chunks: list[Chunk] = []
    start = 0
    for number in range(1, len(lines) + 1):
        at_end = number == len(lines)
        opens = not at_end and _DEFINITION.match(lines[number]) is not None
        if at_end or opens or number - start >= _MAX_CHUNK_LINES:
            body = lines[start:number]
            if any(line.strip() for line in body):
                name = next((line.strip() for line in body if line.strip()), "")[:100]
                chunks.append(Chunk(path, name, start + 1, number, "\n".join(body)))
            start = number
    return chunks


def _suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") else ""


class ChunkIndex:
    """BM25 over the chunks of a project's text files, kept in step with the files."""

    def __init__(self, files: ProjectFiles) -> None:
        self.files = files
        self._index = SearchIndex()
        self._chunks: dict[str, Chunk] = {}
        self._by_file: dict[str, tuple[int, int, list[str]]] = {}  # path -> (mtime, size, chunk ids)
        self._lock = threading.Lock()

    def refresh(self, listing: Iterable[tuple[str, int, int]]) -> None:
        """Bring the index in line with a scan: drop gone or changed files, add new ones."""
        with self._lock:
            seen: set[str] = set()
            stale: list[str] = []
            for path, mtime, size in listing:
                if _suffix(path) not in INDEXED_SUFFIXES:
                    continue
                seen.add(path)
                known = self._by_file.get(path)
                if known is not None and known[0] == mtime and known[1] == size:
                    continue
                if known is not None:
                    stale.extend(known[2])
                self._by_file[path] = (mtime, size, self._add(path))
            for path in [p for p in self._by_file if p not in seen]:
                stale.extend(self._by_file.pop(path)[2])
            if stale:
                self._index.remove(stale)
                for chunk_id in stale:
                    self._chunks.pop(chunk_id, None)

    def _add(self, path: str) -> list[str]:
        read = self.files.read(path)
        if read.text is None:
            return []
        ids = []
        for number, chunk in enumerate(split_chunks(path, read.text)):
            chunk_id = f"{path}#{number}"
            self._chunks[chunk_id] = chunk
            # The path and the chunk's first line count double: a query naming a module or a function finds it.
            self._index.add(chunk_id, f"{path} {chunk.name}", chunk.text)
            ids.append(chunk_id)
        return ids

    def search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` best chunks for ``query``, best first."""
        terms = tokenize(query)
        with self._lock:
            hits = self._index.search(terms, k=k)
            return [(self._chunks[chunk_id], score) for chunk_id, score in hits]

    def rank_files(self, query: str) -> list[tuple[str, float]]:
        """Files by their best chunk's score for ``query``, best first (ties by path)."""
        terms = tokenize(query)
        best: dict[str, float] = {}
        with self._lock:
            for chunk_id, score in self._index.search(terms):
                path = self._chunks[chunk_id].path
                if score > best.get(path, 0.0):
                    best[path] = score
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))

    def outline(self, path: str) -> list[str]:
        """The names of a file's chunks that open a definition, in file order."""
        with self._lock:
            known = self._by_file.get(path)
            if known is None:
                return []
            names = [self._chunks[i].name for i in known[2] if i in self._chunks]
        return [name for name in names if _DEFINITION.match(name)]

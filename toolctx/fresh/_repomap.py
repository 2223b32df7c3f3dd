"""A map of a project for one task: its files ranked by PageRank over who uses whose definitions.

The graph: an edge runs from each file to every file defining an identifier it
names, weighted by the square root of how often it names it. Identifiers that
are long snake_case or camelCase names weigh more, private (``_x``) ones and
names defined in many files less; names defined in more than
:data:`MAX_DEFINERS` files (``__init__``, ``get``, ``save``) link nothing, since
they tell nothing apart. The walk restarts at the task's evidence: the files it
names (given, or written in its text as paths or dotted modules), the files
defining the identifiers its text names (the rarer the name, the more), and
files whose name is a word of the text. Edges from the task's files and edges of
identifiers the task names weigh more, as in aider's repo map.

:meth:`RepoMap.render` lists the best-ranked definitions (signature lines,
under their file and enclosing class), then the best-ranked files without them,
then every other file by path, taking as many as fit ``max_tokens`` counted by
the map's token counter (found by binary search).

Reading follows :class:`~toolctx.fresh._project.ProjectFiles`: nothing outside
the root, no binary or oversized files, ``.gitignore`` honoured. The graph is
kept until a file changes; tags are cached per file (see
:class:`~toolctx.fresh._tags.TagCache`).
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._rank import Edges, rank
from toolctx.fresh._tags import LANGUAGES, Definition, FileTags, shared_cache
from toolctx.tokens import EstimateCounter, TokenCounter

__all__ = ["MAX_DEFINERS", "RepoMap", "task_evidence"]

#: Identifiers defined in more files than this link no files.
MAX_DEFINERS = 20
#: Restart weight a file gets when its name (``autoreload`` for ``utils/autoreload.py``) is a word of the task,
#: shared among the files of that name; with ``STEM_PROSE`` False only words written as code count.
STEM_WEIGHT = 0.5
STEM_PROSE = True
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
_PATHLIKE = re.compile(r"[\w.\-/\\]+")
_DOTTED = re.compile(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)")


@dataclass
class _Graph:
    paths: list[str]
    index: dict[str, int]
    definers: dict[str, list[int]]
    edges: Edges
    ident_ids: dict[str, int]
    ident_names: list[str]
    tags: dict[str, FileTags]
    stems: dict[str, list[int]]
    modules: dict[str, int]
    _by_name: dict[str, dict[str, list[Definition]]] = field(default_factory=dict)

    def named(self, path: str, name: str) -> list[Definition]:
        """The definitions of ``name`` in ``path``."""
        table = self._by_name.get(path)
        if table is None:
            table = self._by_name[path] = {}
            for definition in self.tags[path].definitions:
                table.setdefault(definition.name, []).append(definition)
        return table.get(name, [])


def _ident_weight(ident: str, definers: int) -> float:
    weight = 1.0
    camel = any(c.isupper() for c in ident) and any(c.islower() for c in ident)
    if ("_" in ident.strip("_") or camel) and len(ident) >= 8:
        weight *= 10
    if ident.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


def _code_like(word: str, text: str) -> bool:
    """Whether ``word`` reads as code in ``text``: snake_case, camelCase, CamelCase or CAPS, or called or quoted.

    A capitalised plain word (``Set``, ``Model``) may just start a sentence, so it does not count by itself.
    """
    if "_" in word.strip("_") or any(c.isupper() for c in word[1:]):
        return True
    return re.search(rf"(?:`{word}\b|\b{word}\(|\.{word}\b)", text) is not None


def _build(tags: dict[str, FileTags]) -> _Graph:
    paths = sorted(tags)
    index = {p: i for i, p in enumerate(paths)}
    definers: dict[str, list[int]] = {}
    for path in paths:
        for name in {d.name for d in tags[path].definitions}:
            definers.setdefault(name, []).append(index[path])
    definers = {k: v for k, v in definers.items() if len(v) <= MAX_DEFINERS}
    edges = Edges()
    ident_ids: dict[str, int] = {}
    for path in paths:
        number = index[path]
        for ident, count in tags[path].references.items():
            found = definers.get(ident)
            if found is None:
                continue
            weight = _ident_weight(ident, len(found)) * math.sqrt(count)
            ident_id = ident_ids.setdefault(ident, len(ident_ids))
            for definer in found:
                edges.add(number, definer, ident_id, weight)
    stems: dict[str, list[int]] = {}
    modules: dict[str, int] = {}
    for path, number in index.items():
        stem, suffix = os.path.splitext(path)
        parts = stem.split("/")
        name = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
        stems.setdefault(name.lower(), []).append(number)
        if suffix == ".py":
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules.setdefault(module, number)
    return _Graph(paths, index, definers, edges, ident_ids, list(ident_ids), tags, stems, modules)


def task_evidence(graph_paths: Sequence[str], text: str) -> list[str]:
    """The project paths ``text`` writes: as paths (also ending an absolute path), or as dotted modules."""
    known = set(graph_paths)
    found: list[str] = []
    for token in _PATHLIKE.findall(text):
        parts = token.replace("\\", "/").strip("./").split("/")
        for start in range(len(parts)):  # /testbed/pkg/mod.py names pkg/mod.py
            candidate = "/".join(parts[start:])
            if candidate in known:
                found.append(candidate)
                break
    return list(dict.fromkeys(found))


class RepoMap:
    """A map of one project for a task: its files ranked for the task, their definitions' signatures.

    Definitions come from tree-sitter with the official grammars of Python,
    JavaScript, TypeScript, Go, Rust and Java (``toolctx[fresh]``); without them
    Python files are read line by line and other files are listed by path. Files
    are ranked by personalised PageRank over a graph in which each file points to
    the files defining the identifiers it uses; the walk restarts at the task's
    evidence: the files it names (given, or written in its text as paths or dotted
    modules), the files defining the identifiers its text names, and files whose
    name is a word of the text.

    ``counter`` counts the rendered map's tokens (the fast estimate when not given).
    ``cache_dir``, a directory outside the project, keeps parsed tags between
    processes. Only regular files whose real path is inside ``root`` are read;
    binary files, files over ``max_file_chars``, what ``.gitignore`` excludes and
    files named like credentials (:data:`~toolctx.fresh.SECRET_FILE_PATTERNS`,
    unless ``include_secret_files``) are left out; nothing is ever written into
    the project. Safe to share between threads.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        counter: TokenCounter | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        max_file_chars: int = 1_000_000,
        max_files: int = 100_000,
        encoding: str = "utf-8",
        include_secret_files: bool = False,
    ) -> None:
        folder = Path(root).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"the project root {str(root)!r} is not a directory; pass an existing folder")
        self.files = ProjectFiles(
            folder,
            max_chars=max_file_chars,
            encoding=encoding,
            max_files=max_files,
            include_secrets=include_secret_files,
        )
        self.root = self.files.root
        self.counter: TokenCounter = counter if counter is not None else EstimateCounter()
        self.cache = shared_cache(self.root, cache_dir)
        self._lock = threading.Lock()
        self._graph: _Graph | None = None
        self._versions: list[tuple[str, int, int]] = []
        self._handed = False

    def tags(self) -> dict[str, FileTags]:
        """Every listed file's tags, parsing only files new or changed since the last call."""
        return self._current().tags

    def refresh(self, listing: Sequence[tuple[str, int, int]] | None = None) -> None:
        """Bring the map in line with the project now: from ``listing`` when given, else from a scan.

        A listing is ``(path, mtime_ns, size)`` per file, as a project scan gives it. Once a
        listing has been handed over, the map follows the listings it is handed (whoever
        scans the project for a build tells the map once) instead of scanning on every call.
        """
        if listing is None:
            self._handed = False
            self._update(self.files.scan()[0])
        else:
            self._handed = True
            self._update(list(listing))

    def _current(self) -> _Graph:
        if self._handed and self._graph is not None:
            return self._graph
        return self._update(self.files.scan()[0])

    def _update(self, listing: list[tuple[str, int, int]]) -> _Graph:
        with self._lock:
            if self._graph is not None and listing == self._versions:
                return self._graph
            tags = {}
            for path, mtime, size in listing:
                if os.path.splitext(path)[1].lower() in LANGUAGES:
                    tags[path] = self.cache.get(path, mtime, size, functools.partial(self._text, path))
                else:  # listed by path, never read
                    tags[path] = FileTags(path, "", "", (), {})
            self.cache.forget(set(tags))
            self._graph = _build(tags)
            self._versions = listing
            return self._graph

    def _text(self, path: str) -> str | None:
        return self.files.read(path).text

    def _personal(self, graph: _Graph, task_text: str, mentioned: Sequence[str]) -> tuple[list[float], set[str]]:
        personal = [0.0] * len(graph.paths)
        named = [self.files.normalise(p) for p in mentioned]
        for path in [p for p in named if p] + task_evidence(graph.paths, task_text):
            if path in graph.index:
                personal[graph.index[path]] += 1.0
        for dotted in re.findall(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", task_text):
            parts = dotted.split(".")
            for end in range(len(parts), 1, -1):  # pkg.mod.Class.method names pkg/mod.py
                number = graph.modules.get(".".join(parts[:end]))
                if number is not None:
                    personal[number] += 1.0
                    break
        words = {w for w in _WORD.findall(task_text) if len(w) >= 3}
        idents = {w for w in words if w in graph.definers and _code_like(w, task_text)}
        for ident in {w for w in words if w in graph.definers}:
            found = graph.definers[ident]
            share = (1.0 if ident in idents else 0.1) / len(found)
            for number in found:
                personal[number] += share
        for owner, member in set(_DOTTED.findall(task_text)):  # Class.method: the file defining both
            for number in graph.definers.get(member, ()):
                tags = graph.tags[graph.paths[number]]
                if any(d.name == member and d.parent == owner for d in tags.definitions):
                    personal[number] += 1.0
        for word in {w.lower() for w in words if len(w) >= 4 and (STEM_PROSE or _code_like(w, task_text))}:
            found = graph.stems.get(word, [])
            for number in found:
                personal[number] += STEM_WEIGHT / len(found)
        return personal, idents

    def _ranks(
        self, task_text: str, mentioned_files: Sequence[str], flows: bool
    ) -> tuple[_Graph, list[float], dict[tuple[int, int], float]]:
        graph = self._current()
        personal, idents = self._personal(graph, task_text, mentioned_files)
        chat = {graph.index[p] for p in (self.files.normalise(m) for m in mentioned_files) if p in graph.index}
        boosted = {graph.ident_ids[i] for i in idents if i in graph.ident_ids}
        ranks, received = rank(len(graph.paths), graph.edges, personal, boosted, chat, flows=flows)
        return graph, ranks, received

    def rank_files(self, task_text: str, mentioned_files: Sequence[str]) -> list[tuple[str, float]]:
        """Every listed file with its rank for the task, best first (ties by path).

        Ranks sum to 1; the task's own files (``mentioned_files``) come first, their rank plus 1.
        """
        graph, ranks, _ = self._ranks(task_text, mentioned_files, flows=False)
        for path in {self.files.normalise(m) for m in mentioned_files}:
            if path in graph.index:
                ranks[graph.index[path]] += 1.0
        return sorted(zip(graph.paths, ranks, strict=True), key=lambda item: (-item[1], item[0]))

    def render(self, task_text: str, mentioned_files: Sequence[str], max_tokens: int = 1000) -> str:
        """The map for the task in at most ``max_tokens`` tokens ("" when nothing fits)."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be zero or more, got {max_tokens}")
        graph, ranks, definitions = self._ranks(task_text, mentioned_files, flows=True)
        entries: list[tuple[str, Definition | None]] = []
        for (number, ident_id), _rank in sorted(definitions.items(), key=lambda item: (-item[1], item[0])):
            if len(entries) > max_tokens:  # every entry costs a token or more: the rest cannot fit
                break
            path = graph.paths[number]
            entries.extend((path, d) for d in graph.named(path, graph.ident_names[ident_id]))
        if len(entries) <= max_tokens:
            shown = {path for path, _ in entries}
            for number in sorted(range(len(graph.paths)), key=lambda n: (-ranks[n], graph.paths[n])):
                if graph.paths[number] not in shown:
                    entries.append((graph.paths[number], None))
        low, high, best = 0, min(len(entries), max_tokens), ""  # every entry costs a token or more
        while low <= high:  # the most entries whose rendering fits
            middle = (low + high) // 2
            text = _render(graph, entries[:middle])
            if self.counter.count(text) <= max_tokens:
                best, low = text, middle + 1
            else:
                high = middle - 1
        return best


def _render(graph: _Graph, entries: Sequence[tuple[str, Definition | None]]) -> str:
    chosen: dict[str, set[Definition]] = {}
    for path, definition in entries:
        held = chosen.setdefault(path, set())
        if definition is not None:
            held.add(definition)
    lines: list[str] = []
    for path, picked in chosen.items():
        if not picked:
            lines.append(path)
            continue
        lines.append(f"{path}:")
        for definition, depth in _with_parents(graph.tags[path].definitions, picked):
            lines.append("  " * (depth + 1) + definition.signature)
    return "\n".join(lines) + ("\n" if lines else "")


def _with_parents(definitions: Sequence[Definition], picked: set[Definition]) -> list[tuple[Definition, int]]:
    """The picked definitions in source order, each after its enclosing ones, with its depth."""
    result: list[tuple[Definition, int]] = []
    stack: list[Definition] = []
    added: set[Definition] = set()
    for definition in definitions:
        while stack and stack[-1].end_line < definition.line:
            stack.pop()
        if definition in picked:
            for depth, outer in enumerate(stack):
                if outer not in added:
                    added.add(outer)
                    result.append((outer, depth))
            if definition not in added:
                added.add(definition)
                result.append((definition, len(stack)))
        stack.append(definition)
    return result

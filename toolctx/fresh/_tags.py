"""What a source file defines and what it refers to, read once per file version.

Definitions come from tree-sitter with the official grammar package of each
language (``toolctx[fresh]``): Python, JavaScript, TypeScript (and TSX), Go,
Rust and Java, through the queries in ``toolctx/fresh/queries``. Each gives its
name, kind, first and last line, the signature (the text before its body, on
one line) and the definition it sits in. References are the identifiers the
file's text uses, counted; only those some file defines end up mattering.

Without tree-sitter or a language's grammar, Python files fall back to a
line-based reading of ``def`` and ``class`` statements; other files have no
definitions and are listed by path only. :attr:`FileTags.parser` says which
reading a file got.

:class:`TagCache` keeps each file's tags by modification time and size in
memory and, when given a directory outside the project, on disk by content
hash, so a new process parses only files it has never seen.
"""

from __future__ import annotations

import importlib
import os
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import xxhash

from toolctx.fresh._project import read_regular

__all__ = ["LANGUAGES", "Definition", "FileTags", "TagCache", "extract_tags", "grammar_available", "shared_cache"]

#: File suffix -> language whose grammar reads it.
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
# language -> (grammar package, its function returning the language, query file)
_GRAMMARS: dict[str, tuple[str, str, str]] = {
    "python": ("tree_sitter_python", "language", "python"),
    "javascript": ("tree_sitter_javascript", "language", "javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "typescript"),
    "go": ("tree_sitter_go", "language", "go"),
    "rust": ("tree_sitter_rust", "language", "rust"),
    "java": ("tree_sitter_java", "language", "java"),
}
_QUERIES = Path(__file__).parent / "queries"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)[^\n]*", re.M)
_SIGNATURE_CHARS = 200
_CACHE_VERSION = "1"
_MAX_CACHED_BYTES = 64 << 20  # a cache entry larger than this is not ours: parsed again instead


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition in a file: ``line`` and ``end_line`` are 1-based and inclusive."""

    name: str
    kind: str
    line: int
    end_line: int
    signature: str
    parent: str = ""


@dataclass(frozen=True, slots=True)
class FileTags:
    """A file's definitions, in source order, and how often it names each identifier.

    ``parser`` is ``"tree-sitter"``, ``"regex"`` (the Python fallback) or ``""``
    (listed by path only).
    """

    path: str
    language: str
    parser: str
    definitions: tuple[Definition, ...]
    references: dict[str, int]


class _Grammar:
    """A language's parser and definitions query, built once per process and thread-safe to share."""

    def __init__(self, language: str) -> None:
        import tree_sitter

        package, function, query = _GRAMMARS[language]
        module = importlib.import_module(package)
        self.language = tree_sitter.Language(getattr(module, function)())
        self.query = tree_sitter.Query(self.language, (_QUERIES / f"{query}.scm").read_text(encoding="utf-8"))
        self._tree_sitter = tree_sitter
        self._local = threading.local()

    def parse(self, data: bytes) -> Any:
        parser = getattr(self._local, "parser", None)
        if parser is None:  # a parser is not safe to share between threads
            parser = self._local.parser = self._tree_sitter.Parser(self.language)
        return parser.parse(data)

    def matches(self, tree: Any) -> list[tuple[int, dict[str, list[Any]]]]:
        return self._tree_sitter.QueryCursor(self.query).matches(tree.root_node)


_grammars: dict[str, _Grammar | None] = {}
_grammars_lock = threading.Lock()


def _grammar(language: str) -> _Grammar | None:
    """The language's grammar, or None when tree-sitter or its grammar package cannot be imported."""
    with _grammars_lock:
        if language not in _grammars:
            try:
                _grammars[language] = _Grammar(language) if language in _GRAMMARS else None
            except ImportError:
                _grammars[language] = None
        return _grammars[language]


def grammar_available(language: str) -> bool:
    """Whether tree-sitter and the grammar package for ``language`` can be imported."""
    return _grammar(language) is not None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SIGNATURE_CHARS else line[: _SIGNATURE_CHARS - 3] + "..."


def _tree_sitter_definitions(grammar: _Grammar, data: bytes) -> list[Definition]:
    tree = grammar.parse(data)
    found: list[tuple[int, int, str, str, int, int, str]] = []
    seen: set[tuple[int, int]] = set()
    for _pattern, captures in grammar.matches(tree):
        names = captures.get("name")
        kinds = [k for k in captures if k.startswith("definition.")]
        if not names or not kinds:
            continue
        node = captures[kinds[0]][0]
        key = (node.start_byte, names[0].start_byte)
        if key in seen:
            continue
        seen.add(key)
        bodies = captures.get("body")
        stop = node.end_byte
        if bodies and bodies[0].start_byte > node.start_byte:  # the header: up to the last part before the body
            body_start = bodies[0].start_byte
            children = node.children
            if any(c.start_byte == body_start for c in children):  # stop after the last part, comments aside
                ends = [c.end_byte for c in children if c.end_byte <= body_start and c.type != "comment"]
                stop = max(ends, default=body_start)
            else:  # the body is deeper (a declarator's value)
                stop = body_start
        header = data[node.start_byte : stop].decode("utf-8", "replace")
        if kinds[0] == "definition.constant" or stop == node.end_byte:
            header = header.split("\n", 1)[0]
        name = names[0].text.decode("utf-8", "replace")
        found.append(
            (
                node.start_byte,
                node.end_byte,
                name,
                kinds[0][11:],
                node.start_point[0] + 1,
                node.end_point[0] + 1,
                header,
            )
        )
    found.sort(key=lambda f: (f[0], -f[1]))
    definitions: list[Definition] = []
    stack: list[tuple[int, str, str]] = []  # (end byte, name, kind) of the enclosing definitions
    for start, end, name, kind, line, end_line, header in found:
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        member = kind == "function" and stack and stack[-1][2] in ("class", "interface", "impl")
        definitions.append(Definition(name, "method" if member else kind, line, end_line, _one_line(header), parent))
        stack.append((end, name, kind))
    return definitions


def _python_definitions(text: str) -> list[Definition]:
    """``def`` and ``class`` statements found line by line (no parser): each ends before the next line as indented."""
    lines = text.split("\n")
    opened: list[tuple[int, str, str, int, str]] = []  # (indent, name, keyword, line, signature)
    for match in _PY_DEF.finditer(text):
        number = text.count("\n", 0, match.start()) + 1
        indent = len(match.group(1).expandtabs())
        opened.append((indent, match.group(3), match.group(2), number, match.group(0).strip()))
    definitions: list[Definition] = []
    stack: list[tuple[int, str, str]] = []
    for indent, name, kind, line, signature in opened:
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        end = len(lines)
        for number in range(line, len(lines)):  # the next non-blank line indented no deeper closes it
            body = lines[number]
            stripped = body.strip()
            if stripped and not stripped.startswith("#") and len(body) - len(body.lstrip()) <= indent:
                end = number
                break
        while end > line and not lines[end - 1].strip():  # trailing blank lines belong to no one
            end -= 1
        kind_name = "method" if kind == "def" and stack and stack[-1][2] == "class" else kind
        kind_name = {"def": "function"}.get(kind_name, kind_name)
        definitions.append(Definition(name, kind_name, line, max(line, end), _one_line(signature), parent))
        stack.append((indent, name, "class" if kind == "class" else "function"))
    return definitions


def extract_tags(path: str, text: str) -> FileTags:
    """The tags of one file's text (``path`` relative to the project root, with ``/``)."""
    language = LANGUAGES.get(os.path.splitext(path)[1].lower(), "")
    grammar = _grammar(language) if language else None
    if grammar is not None:
        definitions, parser = _tree_sitter_definitions(grammar, text.encode("utf-8", "surrogatepass")), "tree-sitter"
    elif language == "python":
        definitions, parser = _python_definitions(text), "regex"
    else:
        definitions, parser = [], ""
    references = dict(Counter(_IDENTIFIER.findall(text))) if parser else {}
    return FileTags(path, language, parser, tuple(definitions), references)


def _encode(tags: FileTags) -> bytes:
    return orjson.dumps(
        {
            "language": tags.language,
            "parser": tags.parser,
            "definitions": [[d.name, d.kind, d.line, d.end_line, d.signature, d.parent] for d in tags.definitions],
            "references": tags.references,
        }
    )


def _decode(path: str, data: bytes) -> FileTags:
    raw = orjson.loads(data)
    definitions = tuple(Definition(*item) for item in raw["definitions"])
    return FileTags(path, raw["language"], raw["parser"], definitions, raw["references"])


class TagCache:
    """Tags per file: in memory by (modification time, size), on disk by content hash when ``directory`` is given.

    ``directory`` must lie outside ``root``: toolctx never writes into a project.
    """

    def __init__(self, root: str | os.PathLike[str], directory: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser().resolve()
        self.directory: Path | None = None
        if directory is not None:
            folder = Path(directory).expanduser().resolve()
            if folder == self.root or folder.is_relative_to(self.root):
                raise ValueError(
                    f"the tag cache directory {str(directory)!r} is inside the project {str(self.root)!r}; "
                    "choose a directory outside it (toolctx writes nothing into a project)"
                )
            self.directory = folder / f"tags-v{_CACHE_VERSION}"
        self._memory: dict[str, tuple[int, int, FileTags]] = {}
        self._lock = threading.Lock()
        self.parsed = 0  # files parsed (not found in either cache), for statistics and tests

    def get(self, path: str, mtime_ns: int, size: int, read: Callable[[], str | None]) -> FileTags:
        """The tags of ``path`` at this version; ``read()`` gives its text (or None) when they must be made."""
        with self._lock:
            held = self._memory.get(path)
        if held is not None and held[0] == mtime_ns and held[1] == size:
            return held[2]
        text = read()
        tags = FileTags(path, "", "", (), {}) if text is None else self._from_disk_or_parse(path, text)
        with self._lock:
            self._memory[path] = (mtime_ns, size, tags)
        return tags

    def forget(self, keep: set[str]) -> None:
        """Drop the files no longer in the project from memory."""
        with self._lock:
            for path in [p for p in self._memory if p not in keep]:
                del self._memory[path]

    def _from_disk_or_parse(self, path: str, text: str) -> FileTags:
        if self.directory is None:
            self.parsed += 1
            return extract_tags(path, text)
        language = LANGUAGES.get(os.path.splitext(path)[1].lower(), "")
        reader = "tree-sitter" if language and grammar_available(language) else "plain"
        digest = xxhash.xxh3_128_hexdigest(f"{language}\0{reader}\0{text}".encode("utf-8", "surrogatepass"))
        target = self.directory / digest[:2] / f"{digest}.json"
        try:
            data = read_regular(target, _MAX_CACHED_BYTES)  # a regular file, bounded, like every read here
            if len(data) > _MAX_CACHED_BYTES:
                raise ValueError(f"tag cache entry {str(target)!r} is over {_MAX_CACHED_BYTES:,} bytes")
            return _decode(path, data)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        self.parsed += 1
        tags = extract_tags(path, text)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(_encode(tags))
                os.replace(temporary, target)
            except OSError:
                os.unlink(temporary)
                raise
        except OSError:
            pass  # a cache that cannot be written only costs a parse next time
        return tags


_shared: dict[tuple[Path, Path | None], TagCache] = {}
_shared_lock = threading.Lock()
_SHARED_ROOTS = 8


def shared_cache(root: str | os.PathLike[str], directory: str | os.PathLike[str] | None = None) -> TagCache:
    """One :class:`TagCache` per project root and cache directory in this process (the last 8 used).

    The repo map and the code search of one project share it, so a file is parsed once for both.
    """
    key = (Path(root).expanduser().resolve(), None if directory is None else Path(directory).expanduser().resolve())
    with _shared_lock:
        cache = _shared.pop(key, None)
        if cache is None:
            cache = TagCache(root, directory)
        _shared[key] = cache  # (re)inserted last: the oldest is first
        while len(_shared) > _SHARED_ROOTS:
            del _shared[next(iter(_shared))]
        return cache

"""Reading a project safely: what is in it, and each file's text, never anything outside its root.

A scan walks the root without following symlinked directories, skips ``.git``
and what the project's ``.gitignore`` files exclude (with the ``pathspec``
library, ``toolctx[fresh]``; without it only the usual build and cache folders
are skipped). A read refuses paths that leave the root, symlinks included,
binary files, files over the size limit and files that do not decode, each with
a reason a warning can quote. Nothing is ever written. Reads are cached by
modification time and size, so a second build rereads only what changed.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["FileRead", "ProjectFiles"]

# Skipped when no .gitignore matcher is available, and always: VCS data and caches.
_ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn"})
_USUALLY_SKIPPED = frozenset(
    {"__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
_BINARY_PROBE = 8192


@dataclass(frozen=True)
class FileRead:
    """A file's text, or why there is none (``text`` is None and ``problem`` says why)."""

    path: str
    text: str | None
    problem: str = ""


def _gitignore(lines: list[str]) -> Any:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _has_pathspec() -> bool:
    try:
        import pathspec  # noqa: F401
    except ImportError:
        return False
    return True


class ProjectFiles:
    """The files of one project root: listing, safe reads and a read cache."""

    def __init__(self, root: str | os.PathLike[str], *, max_chars: int, encoding: str, max_files: int) -> None:
        self.root = Path(root).expanduser().resolve()
        self.max_chars = max_chars
        self.encoding = encoding
        self.max_files = max_files
        self.honours_gitignore = _has_pathspec()
        self._cache: dict[str, tuple[int, int, FileRead]] = {}
        self._ignores: dict[str, tuple[int, int, Any]] = {}  # .gitignore path -> (mtime, size, matcher)
        self._lock = threading.Lock()

    def exists(self) -> bool:
        return self.root.is_dir()

    def scan(self) -> tuple[list[tuple[str, int, int]], bool]:
        """Every file a context may show, as ``(path, mtime_ns, size)`` sorted by path, and whether it was cut short.

        Paths are relative to the root, with ``/``. At most ``max_files`` are listed.
        """
        found: list[tuple[str, int, int]] = []
        # Depth first, one scandir per folder; each entry's lstat is the one the listing needs.
        stack: list[tuple[str, str, list[tuple[str, Any]]]] = [(str(self.root), "", [])]
        while stack:
            folder, prefix, inherited = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError:
                continue
            specs = inherited
            if self.honours_gitignore and any(e.name == ".gitignore" for e in entries):
                spec = self._load_gitignore(Path(folder, ".gitignore"))
                if spec is not None:
                    specs = [*inherited, (prefix, spec)]
            folders = []
            for entry in entries:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):  # symlinked folders are never entered
                        skipped = name in _ALWAYS_SKIPPED or (not self.honours_gitignore and name in _USUALLY_SKIPPED)
                        if not skipped and not self._ignored(specs, prefix + name + "/"):
                            folders.append((entry.path, prefix + name + "/", specs))
                        continue
                    rel = prefix + name
                    if self._ignored(specs, rel):
                        continue
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISLNK(info.st_mode):
                        target = self._inside(rel)
                        if target is None:
                            continue
                        info = target.stat()
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                found.append((rel, info.st_mtime_ns, info.st_size))
                if len(found) >= self.max_files:
                    return sorted(found), True
            stack.extend(reversed(folders))
        return sorted(found), False

    @staticmethod
    def _ignored(specs: list[tuple[str, Any]], rel: str) -> bool:
        return any(spec.match_file(rel[len(prefix) :]) for prefix, spec in specs)

    def _load_gitignore(self, path: Path) -> Any:
        """The matcher of one .gitignore file, compiled once until the file changes."""
        try:
            info = path.stat()
            known = self._ignores.get(str(path))
            if known is not None and known[:2] == (info.st_mtime_ns, info.st_size):
                return known[2]
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        spec = _gitignore(lines)
        self._ignores[str(path)] = (info.st_mtime_ns, info.st_size, spec)
        return spec

    def _inside(self, rel: str) -> Path | None:
        """The real path of ``rel`` when it stays under the root (after every symlink), else None."""
        pure = PurePosixPath(rel)
        if pure.is_absolute() or not rel or "\x00" in rel:
            return None
        try:
            real = (self.root / pure).resolve()
        except (OSError, RuntimeError):  # a symlink loop
            return None
        return real if real == self.root or real.is_relative_to(self.root) else None

    def normalise(self, path: str) -> str | None:
        """``path`` (relative to the root, or absolute inside it) as the scan writes it, or None if outside."""
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                path = candidate.resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError, RuntimeError):
                return None
        parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", ".")]
        if not parts or ".." in parts:
            return None
        return "/".join(parts)

    def read(self, rel: str) -> FileRead:
        """The text of ``rel``, or the reason it cannot be shown (outside the root, binary, too large, ...)."""
        target = self._inside(rel)
        if target is None:
            return FileRead(rel, None, "is outside the project root")
        try:
            info = target.stat()
        except FileNotFoundError:
            return FileRead(rel, None, "does not exist")
        except OSError as exc:
            return FileRead(rel, None, f"cannot be read ({exc.strerror or exc})")
        if not stat.S_ISREG(info.st_mode):
            return FileRead(rel, None, "is not a regular file")
        with self._lock:
            cached = self._cache.get(rel)
        if cached is not None and cached[0] == info.st_mtime_ns and cached[1] == info.st_size:
            return cached[2]
        result = self._read(rel, target, info.st_size)
        with self._lock:
            self._cache[rel] = (info.st_mtime_ns, info.st_size, result)
        return result

    def _read(self, rel: str, target: Path, size: int) -> FileRead:
        if size > self.max_chars * 4:  # no encoding takes more than 4 bytes a character
            return FileRead(rel, None, f"is larger than the {self.max_chars:,}-character limit ({size:,} bytes)")
        try:
            data = target.read_bytes()
        except OSError as exc:
            return FileRead(rel, None, f"cannot be read ({exc.strerror or exc})")
        if b"\x00" in data[:_BINARY_PROBE]:
            return FileRead(rel, None, "is a binary file")
        try:
            text = data.decode(self.encoding)
        except UnicodeDecodeError:
            return FileRead(rel, None, f"is not valid {self.encoding} text")
        if len(text) > self.max_chars:
            return FileRead(rel, None, f"is longer than the {self.max_chars:,}-character limit ({len(text):,})")
        return FileRead(rel, text.replace("\r\n", "\n"))

"""Reading a project safely: what is in it, and each file's text, never anything outside its root.

A scan walks the root without following symlinked directories, skips ``.git``
and what the project's ``.gitignore`` files exclude (with the ``pathspec``
library, ``toolctx[fresh]``; without it only the usual build and cache folders
are skipped), and files named like credentials (:data:`SECRET_FILE_PATTERNS`)
unless asked for. A read refuses paths that leave the root, symlinks included,
anything but a regular file (a FIFO, socket or device is never opened for
reading: files are opened non-blocking and checked with ``fstat``), binary
files, files over the size limit and files that do not decode, each with a
reason a warning can quote. Every read is bounded: at most the size limit plus
one byte is read, whatever the file claims. Nothing is ever written. Reads are
cached by modification time and size, so a second build rereads only what changed.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from toolctx._internal import WARNING, log
from toolctx.fresh._ignore import IgnoreFile
from toolctx.fresh._secrets import secret_pattern

__all__ = ["MAX_GITIGNORE_BYTES", "FileRead", "ProjectFiles", "read_regular"]

# Skipped when no .gitignore matcher is available, and always: VCS data and caches.
_ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn"})
_USUALLY_SKIPPED = frozenset(
    {"__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
_BINARY_PROBE = 8192
#: A .gitignore longer than this (4 MiB, some 250,000 lines) is applied up to its last whole line within it.
MAX_GITIGNORE_BYTES = 4 * 1024 * 1024
_MAX_NOTES = 20  # notes of one scan about files left out, then one line counting the rest
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO for reading must not wait for a writer
    | getattr(os, "O_NOFOLLOW", 0)  # the path is already resolved: a link put there since is refused
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


class SpecialFileError(OSError):
    """Raised by :func:`read_regular` for a path that is not a regular file (a FIFO, a device, a socket, ...)."""


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path``: more than ``limit`` means the file is longer.

    The file is opened non-blocking and without following a symlink at its last
    component, then checked with ``fstat``: anything but a regular file raises
    :class:`SpecialFileError` before a byte is read.
    """
    handle = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise SpecialFileError(f"is {_kind(info.st_mode)}, not a regular file")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(handle, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(handle)
    return b"".join(chunks)


@dataclass(frozen=True)
class FileRead:
    """A file's text, or why there is none (``text`` is None and ``problem`` says why)."""

    path: str
    text: str | None
    problem: str = ""


def _has_pathspec() -> bool:
    try:
        import pathspec  # noqa: F401
    except ImportError:
        return False
    return True


class ProjectFiles:
    """The files of one project root: listing, safe reads and a read cache.

    ``include_secrets`` lists and reads files named like credentials
    (:data:`SECRET_FILE_PATTERNS`); by default a scan leaves them out and a read refuses them.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_chars: int,
        encoding: str,
        max_files: int,
        include_secrets: bool = False,
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self.max_chars = max_chars
        self.encoding = encoding
        self.max_files = max_files
        self.include_secrets = include_secrets
        self.honours_gitignore = _has_pathspec()
        self._cache: dict[str, tuple[int, int, FileRead]] = {}
        # .gitignore path -> (mtime, size, matcher or None, why it is not applied in full)
        self._ignores: dict[str, tuple[int, int, IgnoreFile | None, str]] = {}
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()

    def exists(self) -> bool:
        return self.root.is_dir()

    def scan(self) -> tuple[list[tuple[str, int, int]], bool, list[str]]:
        """Every file a context may show, as ``(path, mtime_ns, size)`` sorted by path, whether it was cut short, notes.

        Paths are relative to the root, with ``/``. At most ``max_files`` are listed.
        The notes say what was left out that a user would want to know about: FIFOs,
        sockets and devices, and ``.gitignore`` files not applied (or not in full).
        """
        with self._scan_lock:  # the ignore files' matchers compile patterns as they are used
            notes: list[str] = []
            found, cut_short = self._walk(notes)
        if len(notes) > _MAX_NOTES:
            notes[_MAX_NOTES:] = [f"and {len(notes) - _MAX_NOTES} more files left out for the same reasons"]
        return sorted(found), cut_short, notes

    def _walk(self, notes: list[str]) -> tuple[list[tuple[str, int, int]], bool]:
        found: list[tuple[str, int, int]] = []
        # Depth first, one scandir per folder; each entry's lstat is the one the listing needs.
        stack: list[tuple[str, str, list[tuple[str, IgnoreFile]]]] = [(str(self.root), "", [])]
        while stack:
            folder, prefix, inherited = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError:
                continue
            specs = inherited
            if self.honours_gitignore and any(e.name == ".gitignore" for e in entries):
                spec = self._load_gitignore(prefix + ".gitignore", notes)
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
                    if self._ignored(specs, rel) or (not self.include_secrets and secret_pattern(name)):
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
                    if not stat.S_ISDIR(info.st_mode):
                        notes.append(f"{rel!r} is {_kind(info.st_mode)}, not a regular file; left out")
                    continue
                found.append((rel, info.st_mtime_ns, info.st_size))
                if len(found) >= self.max_files:
                    return found, True
            stack.extend(reversed(folders))
        return found, False

    @staticmethod
    def _ignored(specs: list[tuple[str, IgnoreFile]], rel: str) -> bool:
        return any(spec.ignores(rel[len(prefix) :]) for prefix, spec in specs)

    def _load_gitignore(self, rel: str, notes: list[str]) -> IgnoreFile | None:
        """The matcher of one .gitignore file, built once until the file changes; None when it cannot be applied.

        Only a regular file inside the root is read (a link to one inside is followed),
        at most :data:`MAX_GITIGNORE_BYTES` of it.
        """
        target = self._inside(rel)
        if target is None:
            note = f"{rel!r} links outside the project root; not applied"
            log(WARNING, "fresh_gitignore_refused", file=rel, reason="outside the project root")
            notes.append(note)
            return None
        try:
            info = target.stat()
        except OSError:
            return None
        known = self._ignores.get(rel)
        if known is not None and known[:2] == (info.st_mtime_ns, info.st_size):
            if known[3]:
                notes.append(known[3])
            return known[2]
        note = ""
        try:
            data = read_regular(target, MAX_GITIGNORE_BYTES)
        except SpecialFileError as exc:
            note = f"{rel!r} {exc}; not applied"
            spec = None
        except OSError:
            return None
        else:
            if len(data) > MAX_GITIGNORE_BYTES:
                data = data[: data.rfind(b"\n", 0, MAX_GITIGNORE_BYTES) + 1]
                lines = data.count(b"\n")
                note = f"{rel!r} is over {MAX_GITIGNORE_BYTES:,} bytes; only its first {lines:,} lines are applied"
            spec = IgnoreFile(data.decode("utf-8", errors="replace").splitlines(), rel)
        if note:
            log(WARNING, "fresh_gitignore_refused", file=rel, reason=note)
            notes.append(note)
        self._ignores[rel] = (info.st_mtime_ns, info.st_size, spec, note)
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
        secret = None if self.include_secrets else secret_pattern(rel)
        if secret is not None:
            return FileRead(
                rel, None, f"is named like a credentials file ({secret!r}); include_secret_files=True lets it in"
            )
        try:
            info = target.stat()
        except FileNotFoundError:
            return FileRead(rel, None, "does not exist")
        except OSError as exc:
            return FileRead(rel, None, f"cannot be read ({exc.strerror or exc})")
        if not stat.S_ISREG(info.st_mode):
            return FileRead(rel, None, f"is {_kind(info.st_mode)}, not a regular file")
        with self._lock:
            cached = self._cache.get(rel)
        if cached is not None and cached[0] == info.st_mtime_ns and cached[1] == info.st_size:
            return cached[2]
        result = self._read(rel, target, info.st_size)
        with self._lock:
            self._cache[rel] = (info.st_mtime_ns, info.st_size, result)
        return result

    def _read(self, rel: str, target: Path, size: int) -> FileRead:
        limit = self.max_chars * 4  # no encoding takes more than 4 bytes a character
        if size > limit:
            return FileRead(rel, None, f"is larger than the {self.max_chars:,}-character limit ({size:,} bytes)")
        try:
            data = read_regular(target, limit)  # bounded: the file may have grown since it was listed
        except SpecialFileError as exc:
            return FileRead(rel, None, str(exc))
        except OSError as exc:
            return FileRead(rel, None, f"cannot be read ({exc.strerror or exc})")
        if len(data) > limit:
            return FileRead(rel, None, f"is larger than the {self.max_chars:,}-character limit (over {limit:,} bytes)")
        if b"\x00" in data[:_BINARY_PROBE]:
            return FileRead(rel, None, "is a binary file")
        try:
            text = data.decode(self.encoding)
        except UnicodeDecodeError:
            return FileRead(rel, None, f"is not valid {self.encoding} text")
        if len(text) > self.max_chars:
            return FileRead(rel, None, f"is longer than the {self.max_chars:,}-character limit ({len(text):,})")
        return FileRead(rel, text.replace("\r\n", "\n"))

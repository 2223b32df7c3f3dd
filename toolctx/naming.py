"""Safe names for everything toolctx writes.

Context files are named ``{tool}_{argshash}_{timestamp}_{counter}_{random}.json``.
Every part is built from a fixed alphabet, so no tool name, argument or id can
produce a separator, ``..`` or an absolute path: whatever comes in, the name stays
inside the session directory.
"""

from __future__ import annotations

import re
import secrets
import time
import unicodedata
from typing import NamedTuple

from toolctx.errors import ConfigError

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MAX_TOOL_NAME",
    "ContextName",
    "context_filename",
    "is_own_file",
    "is_temp_name",
    "new_session_id",
    "parse_context_filename",
    "pointer_id",
    "sanitize_tool_name",
    "validate_session_id",
]

MAX_TOOL_NAME = 64
MANIFEST_NAME = "manifest.jsonl"
LOCK_NAME = "session.lock"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_CONTEXT_FILE = re.compile(
    r"(?P<tool>[A-Za-z0-9_-]{1,64})_(?P<hash>[0-9a-f]{16})_(?P<ts>[0-9]{13,})"
    r"_(?P<counter>[0-9]+)_(?P<rand>[0-9a-f]{6})\.json"
)
_TEMP_FILE = re.compile(r"\.[A-Za-z0-9_.-]{1,200}\.[0-9a-f]{8}\.tmp")
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class ContextName(NamedTuple):
    """The parts of a context file name."""

    tool: str
    args_hash: str
    timestamp_ms: int
    counter: int
    rand: str

    @property
    def pointer_id(self) -> str:
        return pointer_id(self.rand, self.counter)


def sanitize_tool_name(name: str) -> str:
    """A file-name-safe form of a tool name: ASCII letters, digits, ``_`` and ``-``.

    Accents are folded (``"café"`` -> ``"cafe"``), everything else becomes ``-``,
    leading and trailing ``-``/``_`` are dropped and the result is cut to
    ``MAX_TOOL_NAME`` characters. A name with nothing usable left becomes ``"tool"``.
    """
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    safe = _UNSAFE.sub("-", folded).strip("-_")[:MAX_TOOL_NAME].strip("-_")
    return safe or "tool"


def pointer_id(rand: str, counter: int) -> str:
    """The short id of a stored context: its random part then its counter, in hex."""
    return f"{rand}{counter:x}"


def context_filename(safe_tool: str, args_hash: str, timestamp_ms: int, counter: int, rand: str) -> str:
    """Build a context file name from already-safe parts."""
    return f"{safe_tool}_{args_hash}_{timestamp_ms}_{counter}_{rand}.json"


def parse_context_filename(name: str) -> ContextName | None:
    """The parts of a context file name, or None if ``name`` is not one of ours."""
    match = _CONTEXT_FILE.fullmatch(name)
    if match is None:
        return None
    return ContextName(match["tool"], match["hash"], int(match["ts"]), int(match["counter"]), match["rand"])


def is_own_file(name: str) -> bool:
    """Whether ``name`` is a file a session writes and deletes: a context file or the manifest."""
    return name == MANIFEST_NAME or _CONTEXT_FILE.fullmatch(name) is not None


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is a temporary file of a blob store (``.{final}.{8 hex}.tmp``)."""
    return _TEMP_FILE.fullmatch(name) is not None


def new_session_id() -> str:
    """A sortable, unique session id such as ``20261122T043300-9f3a1c2b``."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}"


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a safe directory name, else raise ConfigError."""
    if not isinstance(session_id, str) or _SESSION_ID.fullmatch(session_id) is None or ".." in session_id:
        raise ConfigError(
            f"session_id {session_id!r:.100} is not valid: use 1-128 ASCII letters, digits, "
            "'_', '-' or '.', starting with a letter or digit and without '..'"
        )
    return session_id

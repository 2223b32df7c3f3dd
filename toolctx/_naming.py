"""Every name toolctx makes: context files, session ids, pointer ids and handles.

Context files are named ``{tool}_{argshash}_{timestamp}_{counter}_{random}.json``.
Every part is built from a fixed alphabet, so no tool name, argument or id can
produce a separator, ``..`` or an absolute path: whatever comes in, the name stays
inside the session directory.

A stored call's id is its session's random part then its counter in hex
(``9f3a1c2b``); models are shown it as the handle ``ctx:<id>``.
"""

from __future__ import annotations

import re
import secrets
import time
import unicodedata
from typing import NamedTuple

from toolctx._checks import safe_name

__all__ = [
    "HANDLE_PATTERN",
    "HANDLE_PREFIX",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MAX_TOOL_NAME",
    "POINTER_ID",
    "RAND_DIGITS",
    "ContextName",
    "context_filename",
    "handle",
    "is_own_file",
    "is_temp_name",
    "new_rand",
    "new_session_id",
    "parse_context_filename",
    "pointer_id",
    "sanitize_tool_name",
    "strip_handle",
    "validate_session_id",
]

MAX_TOOL_NAME = 64
MAX_SESSION_ID = 128
MANIFEST_NAME = "manifest.jsonl"
LOCK_NAME = "session.lock"
HANDLE_PREFIX = "ctx:"
RAND_DIGITS = 6
POINTER_ID = re.compile(rf"[0-9a-f]{{{RAND_DIGITS + 1},}}")
"""A pointer id: the session's random part then the call's counter, both hex."""
HANDLE_PATTERN = re.compile(rf"{HANDLE_PREFIX}({POINTER_ID.pattern})")
"""Finds a handle in text; group 1 is the pointer id."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_CONTEXT_FILE = re.compile(
    r"(?P<tool>[A-Za-z0-9_-]{1,64})_(?P<hash>[0-9a-f]{16})_(?P<ts>[0-9]{13,})"
    rf"_(?P<counter>[0-9]+)_(?P<rand>[0-9a-f]{{{RAND_DIGITS}}})\.json"
)
_TEMP_FILE = re.compile(r"\.[A-Za-z0-9_.-]{1,200}\.[0-9a-f]{8}\.tmp")


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


def new_rand() -> str:
    """A session's random part: ids begin, and file names end, with it."""
    return secrets.token_hex(RAND_DIGITS // 2)


def handle(pointer_id: str) -> str:
    """The handle a model is shown for a stored call: ``ctx:<id>``."""
    return HANDLE_PREFIX + pointer_id


def strip_handle(ref: str) -> str:
    """The pointer id in ``ref``, which may be written as a handle (``ctx:<id>``) or bare."""
    return ref[len(HANDLE_PREFIX) :] if ref.startswith(HANDLE_PREFIX) else ref


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
    return safe_name("session_id", session_id, max_length=MAX_SESSION_ID)

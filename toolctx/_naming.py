"""Every name toolctx makes: context files, session ids, pointer ids and handles.

Context files are named ``{tool}_{argshash}_{timestamp}_{counter}_{id}.json``.
Every part is built from a fixed alphabet, so no tool name, argument or id can
produce a separator, ``..`` or an absolute path: whatever comes in, the name stays
inside the session directory.

A session directory holds, besides its context files, the marker ``.toolctx-session``
(written first, when the directory is created: what makes it toolctx's), the
lock ``session.lock``, the manifest ``manifest.jsonl`` and, after a crash, temporary
files ``.{name}.{8 hex}.tmp``. A name alone never makes a file toolctx's:
:func:`is_own_file` also reads the first bytes, which toolctx always writes the same
way (a context document names its id and session before anything else).

A stored call's id is ten random lowercase letters (``kqvhtmxade``, 47 bits drawn
for each call): knowing one handle tells nothing about another.
Models are shown it as the handle ``ctx:<id>``. Files of sessions written before
ids were random end with the session's six random hex digits, and their id is
those digits then the counter in hex (``9f3a1c2b``); they still read back.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import string
import time
import unicodedata
from collections import deque
from typing import NamedTuple

from toolctx._checks import safe_name

__all__ = [
    "HANDLE_PATTERN",
    "HANDLE_PREFIX",
    "HEAD_BYTES",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MARKER_FORMAT",
    "MARKER_NAME",
    "MAX_TOOL_NAME",
    "POINTER_ID",
    "RAND_DIGITS",
    "ContextName",
    "context_filename",
    "handle",
    "is_own_file",
    "is_temp_name",
    "legacy_pointer_id",
    "new_pointer_id",
    "new_session_id",
    "parse_context_filename",
    "sanitize_tool_name",
    "strip_handle",
    "validate_session_id",
]

MAX_TOOL_NAME = 64
MAX_SESSION_ID = 128
MANIFEST_NAME = "manifest.jsonl"
LOCK_NAME = "session.lock"
MARKER_NAME = ".toolctx-session"
"""Written first in every session directory toolctx creates; nothing else makes a directory toolctx's."""
MARKER_FORMAT = "toolctx-session/1"
HEAD_BYTES = 512
"""How much of a file :func:`is_own_file` needs: the longest header it checks fits."""
HANDLE_PREFIX = "ctx:"
RAND_DIGITS = 6
"""The hex digits a session written before ids were random put at the start of every id."""
ID_CHARS = 10
"""The characters of a stored call's id: ten random lowercase letters, 47 bits."""
POINTER_ID = re.compile(r"[0-9a-z]{7,64}")
"""A pointer id: ten random lowercase letters (or, written earlier, a session's hex part then a counter)."""
HANDLE_PATTERN = re.compile(rf"{HANDLE_PREFIX}({POINTER_ID.pattern})")
"""Finds a handle in text; group 1 is the pointer id."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_CONTEXT_FILE = re.compile(
    r"(?P<tool>[A-Za-z0-9_-]{1,64})_(?P<hash>[0-9a-f]{16})_(?P<ts>[0-9]{13,})"
    r"_(?P<counter>[0-9]+)_(?P<tail>[0-9a-z]{6,64})\.json"
)
_TEMP_FILE = re.compile(r"\.(?P<final>[A-Za-z0-9_.-]{1,200})\.[0-9a-f]{8}\.tmp")
# What toolctx writes first in each kind of file (a context document: any format version).
_DOCUMENT_HEAD = re.compile(
    rb'\{"format":"toolctx/[0-9]{1,9}","id":"(?P<id>[0-9a-z]{1,64})","session_id":"(?P<session>[A-Za-z0-9_.-]{1,128})",'
)
_MARKER_HEAD = re.compile(
    rb'\{"format":"toolctx-session/[0-9]{1,9}","session_id":"(?P<session>[A-Za-z0-9_.-]{1,128})",'
)
_MANIFEST_HEAD = b'{"op":"put","file":"'
_LOCK_HEAD = b'{"pid":'


class ContextName(NamedTuple):
    """The parts of a context file name."""

    tool: str
    args_hash: str
    timestamp_ms: int
    counter: int
    tail: str

    @property
    def pointer_id(self) -> str:
        """The id the name was made for: its tail, or for a name written before ids were random (a tail of six
        hex digits, the session's) that tail then the counter in hex."""
        tail = self.tail
        return legacy_pointer_id(tail, self.counter) if len(tail) == RAND_DIGITS else tail


def sanitize_tool_name(name: str) -> str:
    """A file-name-safe form of a tool name: ASCII letters, digits, ``_`` and ``-``.

    Accents are folded (``"café"`` -> ``"cafe"``), everything else becomes ``-``,
    leading and trailing ``-``/``_`` are dropped and the result is cut to
    ``MAX_TOOL_NAME`` characters. A name with nothing usable left becomes ``"tool"``.
    """
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    safe = _UNSAFE.sub("-", folded).strip("-_")[:MAX_TOOL_NAME].strip("-_")
    return safe or "tool"


def legacy_pointer_id(rand: str, counter: int) -> str:
    """The id of a call stored before ids were random: the session's hex part then the counter in hex
    (:func:`toolctx.testing.fixed_session` still numbers its calls this way, so a test can write them down)."""
    return f"{rand}{counter:x}"


def new_pointer_id() -> str:
    """A new call's id: :data:`ID_CHARS` random lowercase letters, from the system's random source.

    47 bits in about five tokens of a model's prompt (o200k: letters cost fewer tokens
    per bit than hex or base 32), so guessing one handle of a session of 10,000 calls
    takes about 10^10 tries. Ids are made a few hundred at a time from one draw of random
    bytes (each byte under 234 is a letter, its value modulo 26: uniform; the others are
    dropped), so a call pays for a ``deque.pop``; a forked child never uses what its parent drew.
    """
    try:
        return _drawn.pop()  # (atomic: threads never share an id)
    except IndexError:
        letters = os.urandom(_DRAW).translate(_LETTERS, _BIASED).decode("ascii")
        _drawn.extend([letters[i : i + ID_CHARS] for i in range(0, len(letters) - ID_CHARS + 1, ID_CHARS)])
        return new_pointer_id()


_DRAW = 4096  # random bytes drawn at a time: about 370 ids
_LETTERS = bytes.maketrans(bytes(range(234)), string.ascii_lowercase.encode() * 9)  # 0-233 -> a-z, 9 times each
_BIASED = bytes(range(234, 256))  # the bytes past the last whole round of 26: dropped, so every letter is as likely
_drawn: deque[str] = deque()  # ids made from os.urandom, not used yet
os.register_at_fork(after_in_child=_drawn.clear)


def seed_ids(key: str, count: int = 20_000) -> None:
    """Make this process's next ``count`` ids from a generator seeded by ``key`` (then from the system again).

    The same letters, drawn the same way as :func:`new_pointer_id` draws them, but the same on every run:
    for measurements that must repeat to the token, never for ids anyone could guess.
    """
    drawn = random.Random(key).randbytes(count * ID_CHARS * 2).translate(_LETTERS, _BIASED).decode("ascii")
    ids = [drawn[i : i + ID_CHARS] for i in range(0, len(drawn) - ID_CHARS + 1, ID_CHARS)][:count]
    _drawn.clear()
    _drawn.extend(reversed(ids))  # (popped from the right: the first id first)


def handle(pointer_id: str) -> str:
    """The handle a model is shown for a stored call: ``ctx:<id>``."""
    return HANDLE_PREFIX + pointer_id


def strip_handle(ref: str) -> str:
    """The pointer id in ``ref``, which may be written as a handle (``ctx:<id>``) or bare."""
    return ref[len(HANDLE_PREFIX) :] if ref.startswith(HANDLE_PREFIX) else ref


def context_filename(safe_tool: str, args_hash: str, timestamp_ms: int, counter: int, pointer_id: str) -> str:
    """Build a context file name from already-safe parts (a call's counter orders the files of its session)."""
    return f"{safe_tool}_{args_hash}_{timestamp_ms}_{counter}_{pointer_id}.json"


def parse_context_filename(name: str) -> ContextName | None:
    """The parts of a context file name, or None if ``name`` is not one of ours."""
    match = _CONTEXT_FILE.fullmatch(name)
    if match is None:
        return None
    return ContextName(match["tool"], match["hash"], int(match["ts"]), int(match["counter"]), match["tail"])


def is_own_file(name: str, head: bytes, session_id: str) -> bool:
    """Whether the file ``name``, starting with ``head``, is one session ``session_id`` wrote.

    ``head`` is the file's first :data:`HEAD_BYTES` bytes (or all of it). The name
    must be one toolctx makes and the content begin the way toolctx begins that
    kind of file: a context document with its own id (the one in its name) and this
    session's id, the manifest with an entry (or nothing yet), the marker with this
    session's id, the lock with its owner. A temporary file is judged by the file
    it was to become; an empty one was cut short by a crash before its first byte.
    """
    temp = _TEMP_FILE.fullmatch(name)
    if temp is not None:
        if not head:
            return True
        name = temp["final"]
    if name == MANIFEST_NAME:  # appended line by line: a crash may cut it anywhere, even its first line
        return head[: len(_MANIFEST_HEAD)] == _MANIFEST_HEAD[: len(head)]
    if name == LOCK_NAME:  # rewritten in place: may be empty after a crash
        return head[: len(_LOCK_HEAD)] == _LOCK_HEAD[: len(head)]
    if name == MARKER_NAME:
        marker = _MARKER_HEAD.match(head)
        return marker is not None and marker["session"].decode() == session_id
    parsed = parse_context_filename(name)
    if parsed is None:
        return False
    document = _DOCUMENT_HEAD.match(head)
    return (
        document is not None
        and document["id"].decode() == parsed.pointer_id
        and document["session"].decode() == session_id
    )


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is a temporary file of a blob store (``.{final}.{8 hex}.tmp``)."""
    return _TEMP_FILE.fullmatch(name) is not None


def new_session_id() -> str:
    """A sortable, unique session id such as ``20261122T043300-9f3a1c2b``."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}"


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a safe directory name, else raise ConfigError."""
    return safe_name("session_id", session_id, max_length=MAX_SESSION_ID)

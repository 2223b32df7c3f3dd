"""Stable hashes of tool arguments and queries (xxh3, 64 bits, hex)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import xxhash

from toolctx._serialize import Encoded, encode

if TYPE_CHECKING:
    from toolctx.redaction import Redactor

__all__ = ["hash_args", "hash_bytes", "hash_query"]


def hash_bytes(data: bytes) -> str:
    """16 hex digits of xxh3-64 over ``data``."""
    return xxhash.xxh3_64_hexdigest(data)


def hash_args(args: Mapping[str, Any], redactor: Redactor | None = None) -> tuple[Encoded, str]:
    """Canonical JSON of bound arguments (sorted keys, exact-size bytes) and its hash.

    Callers bind arguments against the tool's signature first, so ``f(1, b=2)`` and
    ``f(a=1, b=2)`` produce the same mapping and therefore the same hash. With a
    ``redactor`` the JSON is redacted before hashing, as sessions do, so the hash is
    the one a pointer of that call carries.
    """
    data, notes = encode(args, sort_keys=True)
    if redactor is not None:
        data = redactor(data)[0]
    data = memoryview(data).tobytes()
    return (data, notes), hash_bytes(data)


def hash_query(text: str) -> str:
    """Deterministic id of a query: NFC-normalised, whitespace collapsed, then hashed.

    ``hash_query("What was  AAPL revenue?")`` equals ``hash_query("What was AAPL revenue? ")``;
    case is kept, so differently cased queries get different ids.
    """
    if not isinstance(text, str):
        raise TypeError(f"hash_query() takes the query text as a str, got {type(text).__name__}: {text!r:.80}")
    normalized = " ".join(unicodedata.normalize("NFC", text).split())
    return xxhash.xxh3_64_hexdigest(normalized.encode("utf-8", "surrogatepass"))

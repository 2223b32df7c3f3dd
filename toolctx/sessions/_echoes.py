"""Secret argument values echoed elsewhere in a call.

The rules redact a value stored under a secret key of the arguments
(``login(password="hunter2")``), but a tool that echoes it ("login failed for
hunter2") carries it into its result or exception message, where no key is there
for a rule to see. The values redacted whole from the arguments are found by
comparing the arguments before and after redaction, and every occurrence of them
is replaced wherever else the call is stored: result strings (and keys), the
exception's message and traceback, the description and the tags.

This runs only for calls whose arguments held a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from toolctx.redaction import REDACTED

__all__ = ["MIN_ECHO_CHARS", "redacted_values", "scrub_json", "scrub_text"]

MIN_ECHO_CHARS = 4
"""Shorter secret values ("1", "yes") are not searched for: they would redact ordinary text."""


def redacted_values(original: bytes, redacted: bytes) -> tuple[str, ...]:
    """The strings (and numbers, as text) the rules replaced whole in ``original``, longest first."""
    found: set[str] = set()

    def leaves(value: Any) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, (int, float)):
            yield str(value)
        elif isinstance(value, dict):
            for item in value.values():
                yield from leaves(item)
        elif isinstance(value, list):
            for item in value:
                yield from leaves(item)

    def walk(before: Any, after: Any) -> None:
        if after == REDACTED and before != REDACTED:
            found.update(v for v in leaves(before) if len(v) >= MIN_ECHO_CHARS)
        elif isinstance(before, dict) and isinstance(after, dict):
            for key, value in before.items():
                if key in after:
                    walk(value, after[key])
        elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for one, other in zip(before, after, strict=True):
                walk(one, other)

    walk(orjson.loads(original), orjson.loads(redacted))
    return tuple(sorted(found, key=lambda v: (-len(v), v)))  # a secret inside a longer one goes second


def scrub_text(text: str, values: tuple[str, ...]) -> str:
    """``text`` with every occurrence of ``values`` replaced by the redaction mark."""
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrub_json(data: bytes, values: tuple[str, ...]) -> bytes:
    """JSON ``data`` with ``values`` replaced inside its strings (and keys); numbers are left alone."""
    if not any(orjson.dumps(value)[1:-1] in data for value in values):
        return data

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_text(value, values)
        if isinstance(value, dict):
            return {scrub_text(k, values): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return orjson.dumps(walk(orjson.loads(data)))

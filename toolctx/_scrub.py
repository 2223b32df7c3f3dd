"""Secrets kept out of toolctx's own messages: log records, warnings and exception messages.

The root modules (``errors``, ``_internal``) sit below :mod:`toolctx.redaction` and may not
import it, so the redaction package registers its redactor here (:func:`scrub_with`) when
it is imported, which ``import toolctx`` does. Until then, and when the application turned
it off (:func:`toolctx.redaction.redact_messages`), text passes unchanged.

Scrubbing never raises and never recurses: a message logged or raised while the redactor
itself is being built or run passes as it is (it is toolctx's own, holding no input).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Scrubber", "scrub_with", "scrubbed", "scrubbed_fields", "shown"]


class Scrubber(Protocol):
    """What scrubbing needs of a redactor (:class:`toolctx.redaction.Redactor` is one)."""

    replacement: str

    def redact_text(self, text: str) -> str: ...

    def is_secret_key(self, key: str) -> bool: ...


_source: list[Callable[[], Scrubber | None]] = []
_busy = threading.local()
_PLAIN = (int, float, bool, type(None))


def scrub_with(source: Callable[[], Scrubber | None]) -> None:
    """Use the redactor ``source()`` returns (None: none) for every message from now on."""
    _source[:] = [source]


def _run(work: Callable[[Scrubber], Any], default: Any) -> Any:
    if not _source or getattr(_busy, "on", False):
        return default
    _busy.on = True
    try:
        scrubber = _source[0]()
        return default if scrubber is None else work(scrubber)
    except Exception:  # a message is never lost to a failing redactor
        return default
    finally:
        _busy.on = False


def scrubbed(text: str) -> str:
    """``text`` with the secrets in it replaced."""
    return _run(lambda scrubber: scrubber.redact_text(text), text)  # type: ignore[no-any-return]


def _field(scrubber: Scrubber, name: str, value: Any) -> Any:
    if value is None or name == "exc_info":
        return value
    if scrubber.is_secret_key(name):
        return scrubber.replacement
    if isinstance(value, str):
        return scrubber.redact_text(value)
    if isinstance(value, _PLAIN):
        return value
    shown_as = repr(value)
    redacted = scrubber.redact_text(shown_as)
    return value if redacted == shown_as else redacted  # only a value that showed a secret is replaced


def scrubbed_fields(event: str, fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A log event and its fields with secrets replaced.

    A field named like a secret (``password=...``) is replaced whole; text is redacted; any
    other value (a list, an exception, ...) is kept unless its ``repr`` shows a secret, and
    is then replaced by that ``repr``, redacted.
    """

    def work(scrubber: Scrubber) -> tuple[str, dict[str, Any]]:
        return scrubber.redact_text(event), {name: _field(scrubber, name, v) for name, v in fields.items()}

    return _run(work, (event, fields))  # type: ignore[no-any-return]


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message: secrets replaced first, then cut to ``limit`` characters.

    Cutting first could leave a secret too short for its rule to recognise.
    """
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return scrubbed(text)[:limit]

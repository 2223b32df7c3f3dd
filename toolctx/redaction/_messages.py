"""Which redactor toolctx's own messages go through: log records, warnings and exception messages.

Importing :mod:`toolctx.redaction` (which ``import toolctx`` does) registers it with the
root modules that write those messages; the default redactor is built on first use.
"""

from __future__ import annotations

from toolctx._scrub import Scrubber, scrub_with
from toolctx.redaction._redactor import Redactor, default_redactor, resolve_redactor

__all__ = ["redact_messages"]

_chosen: list[Redactor | bool | None] = [True]  # True: the default redactor, built when first needed


def redact_messages(redact: bool | Redactor | None = True) -> None:
    """Choose how toolctx's log records, warnings and exception messages are redacted, process-wide.

    On by default with the default rules (those sessions and memory stores use):
    ``True`` restores that, ``False`` (or None) turns it off, a :class:`Redactor` uses
    its rules. Only the messages toolctx writes itself are affected; a secret your own
    code logs is yours to keep out.
    """
    resolved = resolve_redactor(redact)  # refuses a bad value before anything changes
    _chosen[0] = True if redact is True else resolved


def _current() -> Scrubber | None:
    chosen = _chosen[0]
    if chosen is True:
        return default_redactor()
    return chosen or None


scrub_with(_current)

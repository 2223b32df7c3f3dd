"""How toolctx reports on itself, for adapters and plugins built on it.

- :func:`log` sends a structlog event (to the application's structlog
  configuration, else to the standard-library logger ``"toolctx"``, which prints
  nothing unless the application configured logging);
- :func:`internal_error` reports a failure of toolctx's own that must never break
  the user's tool or model call: it is logged and warned as a
  :class:`~toolctx.ToolctxWarning`; a warnings filter that makes warnings errors
  (pytest's ``filterwarnings = error``) cannot raise it into the call: it is kept
  for :func:`toolctx.testing.escalated_warnings` instead, so a test can fail on it;
- :func:`counters` is what toolctx did in this process (saves, failures by reason,
  stand-ins, tokens freed, batches, cache breaks, read-backs), a :class:`Counters`
  snapshot; :func:`reset_counters` starts them again from zero. Spans and metrics
  for the same: :mod:`toolctx.telemetry`.
"""

from __future__ import annotations

from toolctx._counters import Counters, reset, snapshot
from toolctx._internal import DEBUG, ERROR, WARNING, internal_error, log

__all__ = ["DEBUG", "ERROR", "WARNING", "Counters", "counters", "internal_error", "log", "reset_counters"]


def counters() -> Counters:
    """The counts of what toolctx did in this process, since it started or since :func:`reset_counters`.

    Always kept, with no dependency, whether or not :mod:`toolctx.telemetry` sends
    spans and metrics (its instruments add up to the same numbers). Cheap enough
    for a health endpoint: it sums one short list per thread that ever counted.
    """
    return snapshot()


def reset_counters() -> None:
    """Count from zero again, in this process (a test that asserts counts calls this first)."""
    reset()

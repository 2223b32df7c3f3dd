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

from toolctx._internal import DEBUG, ERROR, WARNING, internal_error, log
from toolctx.telemetry import Counters, counters, reset_counters

__all__ = ["DEBUG", "ERROR", "WARNING", "Counters", "counters", "internal_error", "log", "reset_counters"]

"""How toolctx reports on itself, for adapters and plugins built on it.

- :func:`log` sends a structlog event (to the application's structlog
  configuration, else to the standard-library logger ``"toolctx"``, which prints
  nothing unless the application configured logging);
- :func:`internal_error` reports a failure of toolctx's own that must never break
  the user's tool or model call: it is logged and warned as a
  :class:`~toolctx.ToolctxWarning`; a warnings filter that makes warnings errors
  (pytest's ``filterwarnings = error``) cannot raise it into the call: it is kept
  for :func:`toolctx.testing.escalated_warnings` instead, so a test can fail on it.
"""

from __future__ import annotations

from toolctx._internal import DEBUG, ERROR, WARNING, internal_error, log

__all__ = ["DEBUG", "ERROR", "WARNING", "internal_error", "log"]

"""Logging and internal-error handling shared by every toolctx module.

toolctx logs through structlog. When the application has configured structlog,
toolctx's events go through that configuration (so ``structlog.testing.capture_logs``
sees them). When it has not, they are routed to the standard-library logger named
``"toolctx"``, which carries a :class:`logging.NullHandler`: an application that
has not configured logging sees no log output at all (not even through Python's
last-resort handler on stderr), and one that has gets toolctx's records through
its own handlers, at the levels it chose. A library should never print on its own;
failures of toolctx itself are also reported as a :class:`ToolctxWarning`, which the
``warnings`` machinery shows once by default.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import structlog

from toolctx.errors import ToolctxWarning

__all__ = ["DEBUG", "WARNING", "internal_error", "log", "log_enabled"]

DEBUG = logging.DEBUG
INFO = logging.INFO
WARNING = logging.WARNING

_stdlib_logger = logging.getLogger("toolctx")
_stdlib_logger.addHandler(logging.NullHandler())  # the logging HOWTO's advice for libraries
_bridge: Any = None
_METHODS = {DEBUG: "debug", INFO: "info", WARNING: "warning"}


def _logger() -> Any:
    global _bridge
    if structlog.is_configured():
        return structlog.get_logger("toolctx")
    if _bridge is None:
        _bridge = structlog.wrap_logger(
            _stdlib_logger,
            processors=[structlog.processors.KeyValueRenderer(key_order=["event"])],
            wrapper_class=structlog.stdlib.BoundLogger,
        )
    return _bridge


def log_enabled(level: int) -> bool:
    """Whether an event at ``level`` would go anywhere (checked before building it)."""
    return structlog.is_configured() or _stdlib_logger.isEnabledFor(level)


def log(level: int, event: str, **fields: Any) -> None:
    """Emit one structured event, e.g. ``log(DEBUG, "saved", tool="search", id="...")``."""
    if log_enabled(level):
        getattr(_logger(), _METHODS[level])(event, **fields)


def internal_error(message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """Report a failure of toolctx itself without disturbing the user's tool call.

    The failure is logged and emitted as a :class:`ToolctxWarning`. If the caller's
    warnings filter has turned toolctx warnings into errors (pytest's
    ``filterwarnings = error`` does), the escalated warning is re-raised instead of
    being reported twice.
    """
    if isinstance(exc, Warning):
        raise exc
    if exc is not None:
        fields["error"] = f"{type(exc).__name__}: {exc}"
    log(WARNING, "internal_error", message=message, **fields)
    warnings.warn(message if exc is None else f"{message} ({type(exc).__name__}: {exc})", ToolctxWarning, stacklevel=3)

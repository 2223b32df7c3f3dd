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

import contextlib
import functools
import importlib.util
import logging
import os
import sys
import warnings
from collections import deque
from typing import Any

import structlog

from toolctx._scrub import scrubbed, scrubbed_fields
from toolctx.errors import ToolctxWarning

__all__ = ["DEBUG", "ERROR", "WARNING", "describe_error", "escalated", "internal_error", "log", "log_enabled"]

DEBUG = logging.DEBUG
INFO = logging.INFO
WARNING = logging.WARNING
ERROR = logging.ERROR

_stdlib_logger = logging.getLogger("toolctx")
_stdlib_logger.addHandler(logging.NullHandler())  # the logging HOWTO's advice for libraries
_bridge: Any = None
_METHODS = {DEBUG: "debug", INFO: "info", WARNING: "warning", ERROR: "error"}


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
    """Emit one structured event, e.g. ``log(DEBUG, "saved", tool="search", id="...")``.

    Never raises: an event the application's logging cannot take (a closed
    stream, a broken pipe, a failing processor) is dropped, not passed on to the
    tool call that caused it. The event and its fields are redacted first (as
    :func:`toolctx.redaction.redact_messages` says), only when the event goes somewhere.
    """
    with contextlib.suppress(Exception):  # logging must never break the call it describes
        if log_enabled(level):
            event, fields = scrubbed_fields(event, fields)
            getattr(_logger(), _METHODS[level])(event, **fields)


def internal_error(message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """Report a failure of toolctx itself without disturbing the user's tool call.

    The failure is logged and emitted as a :class:`ToolctxWarning`. A warnings
    filter that turns it into an error (``python -W error``, pytest's
    ``filterwarnings = error``) cannot make the tool call fail: the escalated
    warning is caught here and logged as ``warning_escalated`` instead, at
    ``ERROR`` level, so a test suite can still fail on it (see
    :func:`toolctx.testing.escalated_warnings`).
    """
    if exc is not None:
        fields["error"] = f"{type(exc).__name__}: {describe_error(exc)}"
    log(WARNING, "internal_error", message=message, **fields)
    text = scrubbed(message if exc is None else f"{message} ({fields['error']})")
    try:
        warnings.warn(text, ToolctxWarning, stacklevel=_outside_toolctx())
    except Warning:  # the caller's filters escalated it: never raise into the tool call
        _escalated.append(text)
        log(ERROR, "warning_escalated", message=text)
    except Exception as failed:  # a warnings hook that fails: the event itself is logged already
        log(ERROR, "warning_failed", message=text, error=type(failed).__name__)


_escalated: deque[str] = deque(maxlen=1000)  # the newest escalated warnings, oldest first


def escalated() -> list[str]:
    """Take the warnings the caller's filters escalated and toolctx held back, oldest first."""
    taken: list[str] = []
    while _escalated:
        try:
            taken.append(_escalated.popleft())
        except IndexError:  # taken by another thread meanwhile
            break
    return taken


def describe_error(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when even that fails."""
    try:
        return str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return f"<str() of {type(exc).__name__} failed>"


@functools.cache
def _own_dirs() -> tuple[str, ...]:
    """The folders of toolctx and its framework adapters (located, not imported)."""
    dirs = [os.path.dirname(__file__)]
    for adapter in ("toolctx_langchain", "toolctx_openai_agents"):
        try:
            spec = importlib.util.find_spec(adapter)
        except (ImportError, ValueError):  # (a stand-in module without a spec, in a test, say)
            continue
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(spec.submodule_search_locations)
    return tuple(os.path.join(d, "") for d in dirs)


def _outside_toolctx() -> int:
    """The ``stacklevel`` of the innermost caller outside toolctx, so a warning points at user code."""
    own = _own_dirs()
    frame = sys._getframe(2)  # the caller of internal_error
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(own):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level

"""Exceptions and warnings raised by toolctx.

Every exception derives from :class:`ToolctxError` and, where one fits, from the
matching builtin so existing ``except ValueError`` blocks keep working::

    ToolctxError
    ├── ConfigError (ValueError)          an option or argument has a bad value
    ├── HandleError (ValueError)          a handle passed as a tool's argument cannot be used
    ├── SessionError (RuntimeError)
    │   ├── SessionClosedError            the session has already ended
    │   ├── SessionNotFoundError          resume() found no such session directory
    │   └── SessionBusyError              another live process holds the session
    ├── StorageError (OSError)            a store could not read or write a blob (errno kept)
    └── NotFoundError (KeyError)          an id names nothing the caller may see
        ├── UnknownAgentError             no such agent in the memory store
        ├── UnknownItemError              no such context item for this agent
        └── UnknownCheckpointError        no such checkpoint for this agent

    ToolctxWarning (UserWarning)          toolctx could not do something but the tool
                                          call itself went through unchanged
"""

from __future__ import annotations

from toolctx._scrub import scrubbed

__all__ = [
    "ConfigError",
    "HandleError",
    "NotFoundError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionError",
    "SessionNotFoundError",
    "StorageError",
    "ToolctxError",
    "ToolctxWarning",
    "UnknownAgentError",
    "UnknownCheckpointError",
    "UnknownItemError",
]


class ToolctxError(Exception):
    """Root of every exception toolctx raises.

    Its message never holds a secret: text arguments go through the same redaction as
    stored outputs (on by default; see :func:`toolctx.redaction.redact_messages`), so an
    error that quotes a bad value (``password=...``) shows it redacted.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(scrubbed(arg) if isinstance(arg, str) else arg for arg in args))


class ConfigError(ToolctxError, ValueError):
    """An option or argument has a value toolctx cannot use."""


class HandleError(ToolctxError, ValueError):
    """A handle passed as a tool's argument (``content="ctx:<id>"``) cannot be used; the tool did not run.

    The message is written for the model (what was wrong, and to pass the value
    itself); ``reason`` says which refusal it is: ``"malformed"``, ``"unknown"`` (no
    such call in this conversation, or another conversation's), ``"error"`` (a failed
    call), ``"part"`` (no such argument), ``"selection"`` (lines or path that select
    nothing), ``"redacted"`` (the stored copy holds redaction markers), ``"chain"``
    or ``"unreadable"`` (the store could not be read).
    """

    def __init__(self, message: str, *, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


class SessionError(ToolctxError, RuntimeError):
    """A session cannot do what was asked in its current state."""


class SessionClosedError(SessionError):
    """The session has ended; open a new one with ``toolctx.session()``."""


class SessionNotFoundError(SessionError):
    """``ContextSession.resume()`` found no session directory to reopen."""


class SessionBusyError(SessionError):
    """Another live process holds the session directory."""


class StorageError(ToolctxError, OSError):
    """A store could not read or write a blob."""


class NotFoundError(ToolctxError, KeyError):
    """An id names nothing that exists, or nothing the caller is allowed to see."""

    def __str__(self) -> str:
        # KeyError quotes its argument; these carry whole sentences.
        return str(self.args[0]) if self.args else ""


class UnknownAgentError(NotFoundError):
    """The memory store holds no agent with this id."""


class UnknownItemError(NotFoundError):
    """The agent has no context item with this id (another agent's items count as absent)."""


class UnknownCheckpointError(NotFoundError):
    """The agent has no checkpoint with this id."""


class ToolctxWarning(UserWarning):
    """toolctx could not store or load something; the tool call itself was unaffected."""

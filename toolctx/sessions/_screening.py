"""Screening a call for secrets before it is kept: its arguments, result, name, tags, description and id."""

from __future__ import annotations

from collections.abc import Callable

from toolctx._naming import sanitize_tool_name
from toolctx._platform import fork_safe_lock
from toolctx.redaction import Redactor
from toolctx.sessions._echoes import redacted_values, scrub_json, scrub_text
from toolctx.sessions._records import Call

__all__ = ["CallScreen"]

_NAMES_KEPT = 10_000  # distinct tool names and tags whose redacted form is remembered


class CallScreen:
    """A session's redactor applied to whole calls; remembers the redacted form of names and tags it has seen.

    Given a function that builds the redactor (the default one, compiled once a process), it is built when a call
    is first screened or the redactor first asked for: reopening a conversation to read it back does not wait for it.
    """

    def __init__(self, redactor: Redactor | Callable[[], Redactor]) -> None:
        self._redactor = redactor
        self._building = fork_safe_lock()
        self._names: dict[str, str] = {}  # tool name or tag -> its redacted form

    @property
    def redactor(self) -> Redactor:
        """The redactor (built now if it was given as a function)."""
        redactor = self._redactor
        if isinstance(redactor, Redactor):
            return redactor
        with self._building:  # (built once, even when several threads store their first calls at once)
            built = self._redactor
            if not isinstance(built, Redactor):
                built = self._redactor = built()
            return built

    def screen(self, call: Call, data: bytes) -> tuple[bytes, bytes, tuple[str, ...]]:
        """The call's redacted arguments and result JSON, and the secret argument values removed elsewhere.

        The call's own fields are redacted in place (its id with the arguments and
        the result, in one scan when they are small).
        """
        args_json = call.args_json
        redacted_args, data, call_id = self.redactor.redact_call_with_id(args_json, data, call.call_id)
        call.call_id = call_id
        echoes: tuple[str, ...] = ()
        if redacted_args != args_json:  # a secret argument: find where the tool echoed it
            # (not a placeholder such as "test": "Ran 3 tests" is no echo of password="test")
            echoes = tuple(v for v in redacted_values(args_json, redacted_args) if not self.redactor.is_placeholder(v))
            data = scrub_json(data, echoes)
        self._fields(call, echoes)
        return redacted_args, data, echoes

    def _fields(self, call: Call, echoes: tuple[str, ...]) -> None:
        """Redact the call's name, tags and description, the other places a secret can hide (the id is done)."""
        known = self._names  # (looked up here first: on nearly every call each is a name seen before, no echoes)
        name = call.tool_name
        clean = None if echoes else known.get(name)
        if clean is None:
            clean = self._redacted(name, echoes)
        if clean != name:
            call.tool_name, call.safe_name = clean, sanitize_tool_name(clean)
        task_id = call.task_id
        if isinstance(task_id, str):
            clean = None if echoes else known.get(task_id)
            call.task_id = self._redacted(task_id, echoes) if clean is None else clean
        query_id = call.query_id
        if query_id is not None:
            clean = None if echoes else known.get(query_id)
            call.query_id = self._redacted(query_id, echoes) if clean is None else clean
        if call.call_id is not None and echoes:  # (redacted with the arguments and result)
            call.call_id = scrub_text(call.call_id, echoes)
        if echoes and call.description is not None:
            call.description = scrub_text(call.description, echoes)

    def _redacted(self, text: str, echoes: tuple[str, ...]) -> str:
        """``text`` redacted. Names and tags repeat from call to call: each distinct one is redacted once."""
        clean = self._names.get(text)
        if clean is None:
            clean = self.redactor.redact_text(text)
            if len(self._names) < _NAMES_KEPT:
                self._names[text] = clean
        return scrub_text(clean, echoes) if echoes else clean

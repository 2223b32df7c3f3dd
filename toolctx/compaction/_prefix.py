"""What a model call sends before the messages, estimated: its system prompt and tool definitions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import Generic, TypeVar

from toolctx._internal import internal_error
from toolctx.tokens import estimate_tokens

__all__ = ["PrefixSize"]

S = TypeVar("S")
T = TypeVar("T")

_TOOLS_KEPT = 256  # tools whose estimate is remembered, per PrefixSize


class PrefixSize(Generic[S, T]):
    """The estimated tokens a model call sends before the messages: its system prompt and tool definitions.

    That is what the first stand-in makes the provider read again uncached: it
    brings ``read_context`` into the tool list, which comes first in the prompt.
    ``system_text`` and ``tool_text`` give what the model is sent of each, near
    enough (a tool's text may be empty: ``read_context`` itself, say).

    A conversation sends the same tool objects on every call, and turning a tool
    into its definition costs more than estimating it: each tool is estimated
    once and remembered by object (up to 256, kept alive while remembered). The
    system prompt is remembered by its text, since instructions made per call
    come back as new strings. A call with the same objects as the one before
    costs a comparison of identities; a system message made anew for each call
    costs reading its text. It never raises: a part that cannot be
    read counts as empty (and is logged).
    """

    def __init__(self, system_text: Callable[[S], str | bytes], tool_text: Callable[[T], str | bytes]) -> None:
        self.system_text = system_text
        self.tool_text = tool_text
        self._tools: dict[int, tuple[T, int]] = {}
        self._system: tuple[str | bytes, int] = ("", 0)
        self._last: tuple[S | None, int] = (None, 0)  # the last system prompt, and its tokens
        self._last_tools: tuple[tuple[T, ...], int] = ((), 0)  # the last tools, and their tokens

    def __call__(self, system: S | None, tools: Sequence[T]) -> int:
        last_tools = self._last_tools
        if len(last_tools[0]) != len(tools) or not all(map(is_, last_tools[0], tools)):
            last_tools = self._last_tools = (tuple(tools), sum(map(self._tool_tokens, tools)))
        last = self._last
        if last[0] is not system:  # (a framework may make its system message anew for each call)
            last = self._last = (system, self._system_tokens(system))
        return last[1] + last_tools[1]

    def _system_tokens(self, system: S | None) -> int:
        if system is None:
            return 0
        text = _read(self.system_text, system)
        known, tokens = self._system
        if text != known:
            tokens = estimate_tokens(text)
            self._system = (text, tokens)
        return tokens

    def _tool_tokens(self, tool: T) -> int:
        found = self._tools.get(id(tool))
        if found is not None and found[0] is tool:
            return found[1]
        if len(self._tools) >= _TOOLS_KEPT:
            self._tools.clear()
        tokens = estimate_tokens(_read(self.tool_text, tool))
        self._tools[id(tool)] = (tool, tokens)
        return tokens


def _read(text_of: Callable[[T], str | bytes], part: T) -> str | bytes:
    try:
        return text_of(part)
    except Exception as exc:  # an estimate for a decision: never worth breaking the model call
        internal_error("could not read a system prompt or tool definition to estimate its size; counted as empty", exc)
        return ""

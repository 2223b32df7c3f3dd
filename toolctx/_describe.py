"""Human-readable one-line descriptions of tool calls.

Descriptions are what keyword and BM25 selection match queries against and what a
model reads in a stand-in, so the default aims to read like a note a person would
write: ``get_income_statements(ticker="AAPL", period="annual", limit=4)`` becomes
``"AAPL income statements (period=annual, limit=4)"``.

A tool can override it with a format string over its parameters
(``"{ticker} financials ({period})"``) or with a callable taking the bound
arguments as a dict.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Collection, Mapping
from typing import Any

from toolctx.errors import ConfigError

__all__ = ["Describer", "default_description", "humanize_tool_name", "make_describer"]

Describer = Callable[[Mapping[str, Any]], str]

MAX_DESCRIPTION = 200
_VALUE_LIMIT = 60
_WORD_BREAK = re.compile(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])")
_IDENTIFIER = re.compile(r"[A-Z][A-Z0-9.\-]{0,11}")
_DROPPED_VERBS = frozenset({"get", "fetch"})


@functools.lru_cache(maxsize=1024)
def humanize_tool_name(name: str) -> str:
    """``"get_incomeStatements"`` -> ``"income statements"``."""
    words = [w.lower() for w in _WORD_BREAK.split(name) if w]
    if len(words) > 1 and words[0] in _DROPPED_VERBS:
        words = words[1:]
    return " ".join(words) or name


def _shorten(text: str, limit: int = _VALUE_LIMIT) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``limit`` characters with "…"."""
    # Collapsing a prefix gives the start of the collapsed whole, so a long value (a file written
    # through an argument) is not split whole; when the prefix collapses to more than the limit, the
    # result is the one the whole would give.
    head = " ".join(text[: 4 * limit + 64].split())
    if len(head) <= limit and len(text) > 4 * limit + 64:
        head = " ".join(text.split())  # mostly whitespace: collapse all of it
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        short = _shorten(value)
        return f'"{short}"' if " " in short or not short else short
    if isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if len(items) <= 3 and all(isinstance(i, (str, int, float)) for i in items):
            return _shorten("[" + ", ".join(_format_value(i) for i in items) + "]")
        return f"[{len(items)} items]"
    if isinstance(value, Mapping):
        return f"{{{len(value)} keys}}"
    return type(value).__name__


def default_description(tool_name: str, args: Mapping[str, Any]) -> str:
    """Describe a call from its tool name and arguments (``None`` values are left out).

    A leading argument that looks like an identifier (``AAPL``, ``BRK.B``) goes in
    front of the humanized tool name; another leading string follows it; the rest
    are listed as ``key=value`` in parentheses.
    """
    items = [(k, v) for k, v in args.items() if v is not None]
    head = humanize_tool_name(tool_name)
    if items and isinstance(items[0][1], str):
        first = items.pop(0)[1]
        head = f"{first} {head}" if _IDENTIFIER.fullmatch(first) else f"{head} {_format_value(first)}"
    if items:
        head += " (" + ", ".join(f"{k}={_format_value(v)}" for k, v in items) + ")"
    return _shorten(head, MAX_DESCRIPTION)


def make_describer(tool_name: str, spec: str | Describer | None, parameters: Collection[str]) -> Describer:
    """Resolve a tool's ``description`` option once, when the tool is decorated.

    ``parameters`` are the names the tool accepts; a format string naming any other
    field is rejected here rather than failing on every call.
    """
    if spec is None:
        return lambda args: default_description(tool_name, args)
    if isinstance(spec, str):
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(spec) if f is not None]
        except ValueError as exc:
            raise ConfigError(
                f"description {spec!r} of tool {tool_name!r} is not a valid format string: {exc}"
            ) from exc
        for field in fields:
            root = re.split(r"[.\[]", field, maxsplit=1)[0]
            if not root or root not in parameters:
                raise ConfigError(
                    f"description {spec!r} of tool {tool_name!r} refers to {{{field}}}, but the tool's "
                    f"parameters are {sorted(parameters)}; use one of those names in braces"
                )
        return spec.format_map
    if callable(spec):
        return spec
    raise ConfigError(
        f"description of tool {tool_name!r} must be a format string or a callable taking the "
        f"arguments dict, got {type(spec).__name__}: {spec!r:.80}"
    )

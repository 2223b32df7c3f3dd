"""The adapters' ``by_reference`` setting: tools whose parameters take a handle in place of a value.

For tools the user did not decorate with ``@persist_context(by_reference=...)``,
the LangChain middleware and the Agents SDK's ``persist_tools`` take a mapping of
tool name to ``True`` (every string parameter) or parameter names, and resolve the
handles in a model's call before the framework validates and runs it, within the
conversation (:func:`toolctx.sessions.resolve_arguments` does the resolving). A
parameter's JSON schema decides what it gets: the exact text for ``"type":
"string"`` (or no type), the JSON value for any other type.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from toolctx.errors import ConfigError, HandleError
from toolctx.sessions import ContextSession, Scope, resolve_arguments
from toolctx.telemetry import events

__all__ = ["HandleParameters", "is_text_schema"]


def is_text_schema(schema: object) -> bool:
    """Whether a parameter with this JSON schema takes text: ``"string"`` (alone or with null), or no type."""
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if kind is None:
        options = schema.get("anyOf") or schema.get("oneOf")
        if not isinstance(options, list):
            return True
        kinds = [o.get("type") for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
        return "string" in kinds and all(k == "string" for k in kinds)
    kinds = kind if isinstance(kind, list) else [kind]
    return "string" in kinds and all(k in ("string", "null") for k in kinds)


class HandleParameters:
    """An adapter's ``by_reference`` setting: for each tool named, ``True`` (its string parameters) or the names
    of the parameters that take handles."""

    def __init__(self, option: Mapping[str, bool | Collection[str]] | None = None) -> None:
        self.tools: dict[str, bool | tuple[str, ...]] = {}  # (True: every string parameter)
        if option is None:
            return
        if not isinstance(option, Mapping):
            raise ConfigError(
                "by_reference maps tool names to True (every string parameter) or to parameter names, "
                f'as {{"write_file": ["content"]}}; got {option!r:.100}'
            )
        for tool, chosen in option.items():
            names = (chosen,) if isinstance(chosen, str) else chosen
            if not isinstance(tool, str) or not (
                isinstance(names, bool) or (isinstance(names, Collection) and all(isinstance(n, str) for n in names))
            ):
                raise ConfigError(
                    f"by_reference maps tool names to True or to parameter names; got {tool!r:.60}: {chosen!r:.100}"
                )
            if names:
                self.tools[tool] = True if names is True else tuple(names)

    def __bool__(self) -> bool:
        return bool(self.tools)

    def __contains__(self, tool: object) -> bool:
        return tool in self.tools

    def parameters(self, tool: str, properties: Mapping[str, Any] | None) -> tuple[tuple[str, ...], frozenset[str]]:
        """The parameters of ``tool`` (whose JSON schema ``properties`` are given, if known) that take handles,
        and those of them that take JSON values rather than text."""
        chosen = self.tools.get(tool, ())
        known = properties if isinstance(properties, Mapping) else {}
        every = tuple(n for n, schema in known.items() if is_text_schema(schema)) if chosen is True else ()
        names = every if isinstance(chosen, bool) else chosen
        return names, frozenset(n for n in names if n in known and not is_text_schema(known[n]))

    def check(self, tool: str, properties: Mapping[str, Any] | None) -> None:
        """ConfigError if the setting names a parameter that ``tool`` (with these ``properties``) does not have."""
        chosen = self.tools.get(tool)
        if isinstance(chosen, tuple) and isinstance(properties, Mapping):
            wrong = [n for n in chosen if n not in properties]
            if wrong:
                raise ConfigError(
                    f"by_reference names {wrong} that tool {tool!r} does not take; "
                    f"its parameters are {list(properties)}"
                )

    def resolve(
        self,
        session: ContextSession,
        tool: str,
        args: Mapping[str, Any],
        properties: Mapping[str, Any] | None,
        scope: Scope,
    ) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]] | None:
        """A model's ``args`` for ``tool`` with the handles in its opted-in parameters resolved within ``scope``:
        the arguments to run with, the notes to store the call with, and the parameters resolved; None when
        there is nothing to resolve. HandleError (its message for the model) when a handle is refused or could
        not be looked up."""
        names, decoded = self.parameters(tool, properties)
        if not names:
            return None
        try:
            found = resolve_arguments(session, args, names, scope=scope, decoded=decoded)
        except HandleError:
            raise
        except Exception as exc:
            events.handle_unreadable(f"could not resolve a handle passed to tool {tool!r}", exc)
            raise HandleError(
                f"the handle passed to {tool} could not be looked up ({type(exc).__name__}: {exc!s:.200}); "
                "pass the value itself.",
                reason="unreadable",
            ) from exc
        return None if found is None else (found[0], found[1], names)

"""``@persist_context(by_reference=...)``: the parameters of a tool that take a handle in place of a value.

Decided when the tool is decorated: which parameters opted in, and which of them
take the JSON value rather than the text (those declared as anything but a
string). At call time a call none of whose arguments starts with ``ctx:`` costs one
scan of the arguments; the rest (binding, looking the handle up, the note that the
argument was passed by reference) is :func:`toolctx.sessions.resolve_arguments`.
"""

from __future__ import annotations

import contextlib
import inspect
import types
import typing
from collections.abc import Callable, Collection
from typing import Any

from toolctx._naming import HANDLE_PREFIX
from toolctx.errors import ConfigError, HandleError
from toolctx.sessions import Call, host_scope, resolve_arguments
from toolctx.telemetry import events

__all__ = ["ByReference", "is_text_annotation"]

_SIMPLE_KINDS = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
)
_TEXT_WORDS = frozenset({"str", "None", "Any", "object", "typing.Any", "NoneType"})


def is_text_annotation(annotation: Any) -> bool:
    """Whether a parameter declared so takes text: ``str`` (alone or with None), ``Any``, or no annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object or annotation is str:
        return True
    if isinstance(annotation, str):  # (not evaluated: read as written, "str | None", "Optional[str]")
        words = annotation.replace("Optional[", "").replace("]", "").replace(" ", "").split("|")
        return "str" in words and all(word in _TEXT_WORDS for word in words)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return is_text_annotation(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        return str in kinds and all(is_text_annotation(a) for a in kinds)
    return False


class ByReference:
    """The parameters of one decorated tool that take handles (``names``), and those that get JSON values."""

    def __init__(
        self, tool: str, func: Callable[..., Any], signature: inspect.Signature, option: bool | Collection[str]
    ) -> None:
        # (annotations written as strings, evaluated if they can be: "dict[str, Any]" is not text; a name only a
        # type checker sees leaves them as written)
        with contextlib.suppress(Exception):
            signature = inspect.signature(func, eval_str=True)
        parameters = signature.parameters
        if option is True:
            chosen = [
                name
                for name, p in parameters.items()
                if p.kind in _SIMPLE_KINDS and is_text_annotation(p.annotation) and name not in ("self", "cls")
            ]
        else:
            chosen = [option] if isinstance(option, str) else list(option)  # type: ignore[arg-type]
            wrong = [n for n in chosen if n not in parameters or parameters[n].kind not in _SIMPLE_KINDS]
            if wrong or not all(isinstance(n, str) for n in chosen):
                raise ConfigError(
                    f"by_reference names {wrong or chosen} that tool {tool!r} does not take as a named parameter; "
                    f"its parameters are {list(parameters)}"
                )
        self.tool = tool
        self.names = tuple(chosen)
        self.decoded = frozenset(n for n in self.names if not is_text_annotation(parameters[n].annotation))

    def resolved(
        self,
        signature: inspect.Signature,
        positional: tuple[str, ...] | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call: Call | None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``args`` and ``kwargs`` with every handle in an opted-in parameter replaced by what it names, each
        noted on ``call``. ``positional``: the names ``args`` bind to in order, for a signature without ``*args``
        or ``**kwargs`` (None: bound with ``signature``). HandleError if a handle is refused or not looked up."""
        if not any(map(_maybe_handle, args)) and not any(map(_maybe_handle, kwargs.values())):
            return args, kwargs
        if positional is not None and len(args) <= len(positional):
            given = dict(zip(positional, args, strict=False))
            given.update(kwargs)
        else:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:  # (the tool rejects this call itself)
                return args, kwargs
            given = bound.arguments
        try:
            session, scope, done = host_scope(self.tool)
            names = [n for n in self.names if n not in done and n in given]
            found = resolve_arguments(session, given, names, scope=scope, decoded=self.decoded)
        except HandleError:
            raise
        except Exception as exc:
            events.handle_unreadable(f"could not resolve a handle passed to tool {self.tool!r}", exc)
            raise HandleError(
                f"the handle passed to {self.tool} could not be looked up ({type(exc).__name__}: {exc!s:.200}); "
                "pass the value itself.",
                reason="unreadable",
            ) from exc
        if found is None:
            return args, kwargs
        values, notes = found
        if call is not None:
            call.args_notes = (*call.args_notes, *notes)
        if positional is None or len(args) > len(positional):
            for name in names:
                bound.arguments[name] = values[name]
            return bound.args, bound.kwargs
        replaced, kwargs = list(args), dict(kwargs)
        for name in names:
            if name in kwargs:
                kwargs[name] = values[name]
            else:
                replaced[positional.index(name)] = values[name]
        return tuple(replaced), kwargs


def _maybe_handle(value: object) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(HANDLE_PREFIX)

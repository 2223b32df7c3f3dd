"""``@persist_context``: store every call of a tool in the current session.

Everything that can be decided once is decided when the tool is decorated: the
signature and how to bind arguments against it, the safe file name, the
description formatter, sync or async wrapper. A call then binds its arguments,
hashes them, runs the tool and hands the result to the session.

The wrapper (built on wrapt) keeps the tool's name, docstring, signature and
type, so LangChain's ``@tool`` and the Agents SDK's ``@function_tool`` see the
same function. Persisting never changes what the caller gets: the tool's own
result or exception comes through unchanged, and toolctx's own failures are
logged and warned about instead of raised, even when a warnings filter makes
warnings errors, and even when the value's own code (a ``__repr__``, say) raises
a ``BaseException``. Only ``KeyboardInterrupt`` passes through: the user asked the
program to stop.

A generator tool (sync or async, or a function returning a generator) hands
back a generator that passes everything through (values sent in, exceptions
thrown in, closing) and is stored once, when it finishes, raises or is closed,
as the list of the items it yielded. A generator cancelled or stopped by a
``BaseException`` (``asyncio.CancelledError``, ``SystemExit``) is not stored, as a
plain tool's call is not.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Generator
from types import FunctionType, GeneratorType
from typing import Any, ParamSpec, TypeVar, overload

import wrapt

from toolctx._by_reference import ByReference
from toolctx._checks import output_limit
from toolctx._defaults import byte_count
from toolctx._describe import Describer, default_description, make_describer
from toolctx._internal import internal_error
from toolctx._limits import OutputLimit, declare_limit
from toolctx._naming import sanitize_tool_name
from toolctx._serialize import clean_text, encode
from toolctx.errors import ConfigError, HandleError, SessionClosedError
from toolctx.redaction import REDACTED
from toolctx.sessions import Call, ContextSession, SavePath, current_session
from toolctx.telemetry import events

__all__ = ["persist_context"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

_SIMPLE_KINDS = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
)
_POSITIONAL_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Binder:
    """Binds call arguments to parameter names, the same way for any call style.

    ``f(1, b=2)``, ``f(a=1, b=2)`` and ``f(1)`` (with ``b=2`` the default) all bind to
    ``{"a": 1, "b": 2}``. Plain signatures (no ``*args``/``**kwargs``) take a fast
    path that avoids ``Signature.bind``.
    """

    def __init__(self, signature: inspect.Signature, ignore: frozenset[str], skip_first: bool) -> None:
        params = list(signature.parameters.values())
        if skip_first and params and params[0].kind in _POSITIONAL_KINDS:
            params = params[1:]
        self.signature = signature.replace(parameters=params)
        self.simple = all(p.kind in _SIMPLE_KINDS for p in params)
        self.positional = tuple(p.name for p in params if p.kind in _POSITIONAL_KINDS)
        # -1 sends every call to Signature.bind (signatures with *args or **kwargs).
        self.max_positional = len(self.positional) if self.simple else -1
        self.defaults = tuple((p.name, p.default) for p in params if p.default is not inspect.Parameter.empty)
        self.count = len(params)
        self.ignore = ignore

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) <= self.max_positional:
            # (no ``strict=``: args is never the longer, checked above; the keyword costs zip a third of its time)
            bound = dict(zip(self.positional, args))  # noqa: B905
            if kwargs:
                bound.update(kwargs)
            if len(bound) < self.count:
                for name, default in self.defaults:
                    bound.setdefault(name, default)
        else:
            try:
                ba = self.signature.bind(*args, **kwargs)
            except TypeError:  # the tool rejects this call too; record what was passed
                return {"args": list(args), "kwargs": dict(kwargs)}
            ba.apply_defaults()
            bound = dict(ba.arguments)
        if self.ignore:
            for name in self.ignore:
                bound.pop(name, None)
        return bound


# Parameters the frameworks fill in themselves, recognised by their annotation's name (so no
# framework is imported): LangChain's ToolRuntime, RunnableConfig, callback managers and
# Injected* markers (InjectedState, InjectedStore, InjectedToolCallId, InjectedToolArg), the
# Agents SDK's RunContextWrapper and ToolContext. They are not the model's arguments: they
# would put the user's context data into the store and make every call hash differently.
_INJECTED = re.compile(
    r"\b(?:ToolRuntime|RunnableConfig|RunContextWrapper|ToolContext|Injected\w*|\w*CallbackManager\w*)\b"
)


def _injected(signature: inspect.Signature) -> frozenset[str]:
    """The parameters of ``signature`` that a framework injects, by the name of their annotation."""
    names: set[str] = set()
    for parameter in signature.parameters.values():
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            continue
        # The repr names the class, what Optional[...] wraps, and Annotated[...]'s markers.
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if _INJECTED.search(text):
            names.add(parameter.name)
    return frozenset(names)


# What begin() captures before the tool runs: the save path of the session current when
# the call started, and the call itself. A plain tuple: this is on every call's path.
_Started = tuple[SavePath, Call]


class _Tool:
    """A decorated tool's settings, resolved once."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None,
        description: str | Describer | None,
        ignore: Collection[str],
        threshold: int | None,
        record_errors: bool,
        by_reference: bool | Collection[str] = False,
        max_output_tokens: OutputLimit | None = None,
    ) -> None:
        name = name if name is not None else getattr(func, "__name__", type(func).__name__)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"name must be a non-empty str, got {name!r:.80}")
        self.name = clean_text(name)
        self.safe_name = sanitize_tool_name(name)
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"cannot read the signature of {func!r:.80}: {exc}") from exc
        if isinstance(ignore, str):
            ignore = (ignore,)
        unknown = [n for n in ignore if n not in signature.parameters]
        if unknown:
            raise ConfigError(
                f"ignore names {unknown} that tool {self.name!r} does not have; "
                f"its parameters are {list(signature.parameters)}"
            )
        ignored = frozenset(ignore) | _injected(signature)
        self.binders = (_Binder(signature, ignored, False), _Binder(signature, ignored, True))
        first = next(iter(signature.parameters.values()), None)
        # A classmethod over this wrapper passes the class as the first argument on Python
        # 3.13+, where classmethod no longer binds through the wrapper's __get__.
        self.cls_first = first is not None and first.name == "cls" and first.kind in _POSITIONAL_KINDS
        self.order = tuple(signature.parameters)
        self.describe = make_describer(self.name, description, signature.parameters.keys())
        self.custom_description = description is not None
        self.threshold = None if threshold is None else byte_count("threshold", threshold)
        self.record_errors = bool(record_errors)
        self.references = ByReference(self.name, func, signature, by_reference) if by_reference else None
        # (held here, so the adapters find it by the tool's name for as long as the tool exists)
        self.declared = (
            None
            if max_output_tokens is None
            else declare_limit(self.name, output_limit("max_output_tokens", max_output_tokens))
        )

    def begin(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Started | None:
        """Capture the arguments as they are before the tool runs; never raises."""
        try:
            # wrapt passes the instance (or class) separately for bound methods and
            # classmethods; the first parameter is then not among ``args``.
            if instance is None and self.cls_first and args and isinstance(args[0], type):
                instance, args = args[0], args[1:]
            bound = self.binders[instance is not None].bind(args, kwargs)
            args_json, notes = encode(bound, sort_keys=True)
            session = current_session()
            description = self._description(bound, session) if self.custom_description else None
            call = Call(self.name, self.safe_name, args_json, notes, self.order, description, self.threshold)
            return session.save_path, call
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # even a BaseException from the arguments' own code stays in here
            events.save_failed(
                "arguments", f"could not capture the arguments of tool {self.name!r}; this call is not stored", exc
            )
            return None

    def referenced(
        self, started: _Started | None, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments the tool runs with: handles passed in its ``by_reference`` parameters replaced by what
        they name. A refusal (HandleError) is stored as the call's error and raised: the tool does not run."""
        assert self.references is not None
        lead: tuple[Any, ...] = ()
        if instance is None and self.cls_first and args and isinstance(args[0], type):
            lead, args, instance = args[:1], args[1:], args[0]
        binder = self.binders[instance is not None]
        positional = binder.positional if binder.simple else None
        try:
            args, kwargs = self.references.resolved(
                binder.signature, positional, args, kwargs, None if started is None else started[1]
            )
            return lead + args, kwargs
        except HandleError as exc:
            self.end(started, None, exc)
            raise

    def _description(self, bound: dict[str, Any], session: ContextSession) -> str:
        """The tool's own description of this call, with secret arguments masked."""
        redactor = session.redactor
        if redactor is not None:
            bound = {k: REDACTED if redactor.is_secret_key(k) else v for k, v in bound.items()}
        try:
            text = self.describe(bound)
            if not isinstance(text, str):
                raise TypeError(f"the description callable returned {type(text).__name__}, not str")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            internal_error(f"the description of tool {self.name!r} failed; using the default one", exc)
            return default_description(self.name, bound)
        return clean_text(text if redactor is None else redactor.redact_text(text))

    def end(self, started: _Started | None, result: Any, error: BaseException | None) -> None:
        """Hand the call to the current session; never raises (but see internal_error)."""
        if started is None or (error is not None and not self.record_errors):
            return
        saver, call = started
        try:
            if saver.closed:  # the block ended while the tool ran: keep the call anyway
                saver = current_session().save_path
            try:
                saver.save(call, result, error)
            except SessionClosedError:  # it ended just now, between the check and the save
                current_session().save_path.save(call, result, error)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a result's or exception's own code may raise anything
            events.save_failed("store", f"could not store a call of tool {self.name!r}", exc)

    def sync_wrapper(
        self, wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        started = self.begin(instance, args, kwargs)
        if self.references is not None:
            args, kwargs = self.referenced(started, instance, args, kwargs)
        try:
            result = wrapped(*args, **kwargs)
        except Exception as exc:
            self.end(started, None, exc)
            raise
        if type(result) is GeneratorType:  # a generator tool: store what it yields
            return self._recorded(started, result)
        self.end(started, result, None)
        return result

    async def async_wrapper(
        self, wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        started = self.begin(instance, args, kwargs)
        if self.references is not None:
            args, kwargs = self.referenced(started, instance, args, kwargs)
        try:
            result = await wrapped(*args, **kwargs)
        except Exception as exc:
            self.end(started, None, exc)
            raise
        self.end(started, result, None)
        return result

    def async_generator_wrapper(
        self, wrapped: Callable[..., AsyncGenerator[Any, Any]], instance: Any, args: tuple[Any, ...], kwargs: Any
    ) -> AsyncGenerator[Any, Any]:
        started = self.begin(instance, args, kwargs)
        if self.references is not None:
            args, kwargs = self.referenced(started, instance, args, kwargs)
        try:
            generator = wrapped(*args, **kwargs)
        except Exception as exc:
            self.end(started, None, exc)
            raise
        return self._recorded_async(started, generator)

    def _recorded(self, started: _Started | None, generator: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        """Pass ``generator`` through (values sent, exceptions thrown, closing) and store what it yielded.

        The call is stored once, when the generator finishes, raises or is closed:
        its result is the list of the items it yielded up to then.
        """
        items: list[Any] = []
        error: Exception | None = None
        advance: Callable[[Any], Any] = generator.send
        value: Any = None
        try:
            while True:
                try:
                    item = advance(value)
                except StopIteration as stop:
                    return stop.value
                items.append(item)
                try:
                    value = yield item
                except GeneratorExit:
                    generator.close()
                    raise
                except BaseException as exc:  # thrown in by the consumer: the tool's generator handles it
                    advance, value = generator.throw, exc
                else:
                    advance = generator.send
        except Exception as exc:
            error = exc
            raise
        except GeneratorExit:  # closed by the consumer: what it yielded up to then is stored
            raise
        except BaseException:  # cancelled or exiting: not stored, as a plain tool's call would not be
            started = None
            raise
        finally:
            self.end(started, items, error)

    async def _recorded_async(
        self, started: _Started | None, generator: AsyncGenerator[Any, Any]
    ) -> AsyncGenerator[Any, Any]:
        """:meth:`_recorded` for an async generator."""
        items: list[Any] = []
        error: Exception | None = None
        advance: Callable[[Any], Awaitable[Any]] = generator.asend
        value: Any = None
        try:
            while True:
                try:
                    item = await advance(value)
                except StopAsyncIteration:
                    return
                items.append(item)
                try:
                    value = yield item
                except GeneratorExit:
                    await generator.aclose()
                    raise
                except BaseException as exc:
                    advance, value = generator.athrow, exc
                else:
                    advance = generator.asend
        except Exception as exc:
            error = exc
            raise
        except GeneratorExit:
            raise
        except BaseException:
            started = None
            raise
        finally:
            self.end(started, items, error)


class _FunctionTool(wrapt.FunctionWrapper[..., Any]):
    """wrapt's wrapper of a plain function, called without wrapt's look-up of ``__self__``.

    Called directly (not through a class or an instance), wrapt's own ``__call__`` first
    asks the function for ``__self__``, in case it is a bound method: a plain function
    raises AttributeError, whose message costs about 4,000 instructions on every call.
    Accessed through a class or an instance, the function binds as before (``__get__``
    makes wrapt's bound wrapper, whose call is wrapt's own).
    """

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        wrapper: Callable[..., Any] = self._self_wrapper  # (typed by wrapt as a method of the proxy)
        return wrapper(self.__wrapped__, None, args, kwargs)


@overload
def persist_context(func: classmethod[T, P, R], /) -> classmethod[T, P, R]: ...
@overload
def persist_context(func: staticmethod[P, R], /) -> staticmethod[P, R]: ...
@overload
def persist_context(func: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def persist_context(
    *,
    name: str | None = None,
    description: str | Describer | None = None,
    ignore: Collection[str] = (),
    threshold: int | None = None,
    record_errors: bool = True,
    enabled: bool = True,
    by_reference: bool | Collection[str] = False,
    max_output_tokens: OutputLimit | None = None,
) -> Callable[[T], T]: ...
def persist_context(
    func: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | Describer | None = None,
    ignore: Collection[str] = (),
    threshold: int | None = None,
    record_errors: bool = True,
    enabled: bool = True,
    by_reference: bool | Collection[str] = False,
    max_output_tokens: OutputLimit | None = None,
) -> Any:
    """Store every call of the decorated tool in the current toolctx session.

    Works bare (``@persist_context``) or with options, on sync and async
    functions, methods, class methods and static methods.

    ``name``: the tool name to record (default: the function's ``__name__``).
    ``description``: a format string over the parameters (``"{ticker} ({period})"``)
    or a callable taking the bound arguments dict; default: built from the name
    and arguments.
    ``ignore``: parameter names to leave out of the stored and hashed arguments
    (clients, handles, secrets). Parameters a framework injects are always left
    out, recognised by their annotation: LangChain's ``ToolRuntime``,
    ``RunnableConfig``, callback managers and ``Injected*`` markers, the Agents
    SDK's ``RunContextWrapper`` and ``ToolContext``.
    ``threshold``: bytes from which this tool's results go to disk rather than
    memory, overriding the session's (where they are stored; the model is shown
    the same either way). Called on an event loop's thread (an async tool), a
    result over it is written by a pool thread, so the loop goes on: it is read
    from memory until its file lands, and the session's end waits for that.
    ``max_output_tokens``: what the model is shown, with an adapter
    (``ToolContextMiddleware``, ``persist_tools``, the assembler): this tool's own
    limit, tokens over which its output reaches the model as a stand-in with a
    handle, ``"never"`` (always whole, never compacted) or ``"always"`` (a stand-in
    whenever it is shorter than the output); see
    :class:`~toolctx.compaction.CompactionSettings`, whose ``tool_limits`` entry for
    the tool, if any, wins. It is found by the tool's name (``name``), which the
    framework's tool must share (``@tool`` and ``@function_tool`` take the
    function's name unless given another).
    ``record_errors``: store exceptions the tool raises as error contexts (they
    are re-raised unchanged either way).
    ``enabled``: ``False`` returns the function undecorated.
    ``by_reference``: parameters that take a handle in place of a value (``True``:
    every parameter annotated ``str``, ``str | None``, ``Annotated[str, ...]``, ``Any``, ``object`` or not at
    all). A model passes
    ``content="ctx:<id>"`` (or a part of it: ``ctx:<id>#args.content``,
    ``ctx:<id>#lines=10-40``, ``ctx:<id>#path=$.items``) and the tool receives the
    stored value: the exact text, or for a parameter declared as another type the
    JSON value. The call is stored with the handle as the argument and a note
    saying it was passed by reference. A handle that is malformed, unknown, another
    conversation's, a failed call's or a redacted copy's raises
    :class:`~toolctx.HandleError` (its message written for the model) and the tool
    does not run. Elsewhere a string starting with ``ctx:`` is an ordinary value.
    """

    def decorate(target: Any) -> Any:
        if not enabled:
            return target
        if isinstance(target, type):
            raise ConfigError(
                f"persist_context decorates functions and methods, not classes; got class {target.__qualname__}"
            )
        inner = target.__func__ if isinstance(target, (classmethod, staticmethod)) else target
        if not callable(inner):
            raise ConfigError(
                f"persist_context needs a function or method, got {type(target).__name__}: {target!r:.80}"
            )
        tool = _Tool(
            inner,
            name=name,
            description=description,
            ignore=ignore,
            threshold=threshold,
            record_errors=record_errors,
            by_reference=by_reference,
            max_output_tokens=max_output_tokens,
        )
        wrapper: Callable[..., Any] = tool.sync_wrapper
        if inspect.isasyncgenfunction(inner):
            wrapper = tool.async_generator_wrapper
        elif inspect.iscoroutinefunction(inner):
            wrapper = tool.async_wrapper
        # A plain function (not a method object that carries its own ``__self__``) is called through
        # _FunctionTool; methods, class and static methods through wrapt's own call, which binds them.
        plain = type(target) is FunctionType and "__self__" not in target.__dict__
        return (_FunctionTool if plain else wrapt.FunctionWrapper)(target, wrapper)

    if func is None:
        return decorate
    return decorate(func)

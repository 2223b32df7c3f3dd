"""The events toolctx reports on itself: each one line where it happens, counted, and sent to OpenTelemetry when on.

Called by the save path, the compaction policy, ``read_context``, handle
resolution and the framework adapters (one line each, so the code around them
reads as before). Each adds to the per-process counts
(:func:`toolctx.diagnostics.counters`) and, once :func:`toolctx.telemetry.enable`
ran (or ``TOOLCTX_OTEL=1`` was set when the first event came), makes a span and
adds to the OpenTelemetry instruments. Off, an event costs an increment and a
test of one global.

The ``*_failed`` events stand in for :func:`toolctx.diagnostics.internal_error`:
they count the failure, then log and warn it as it would have been.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from toolctx._counters import HANDLE_REASONS, SAVE_REASONS, cells, per_thread, slot
from toolctx._internal import internal_error
from toolctx.errors import HandleError
from toolctx.models import StorageKind

if TYPE_CHECKING:
    from toolctx.telemetry._otel import OtelSink

__all__ = [
    "ENVIRONMENT_VARIABLE",
    "batch_started",
    "compacted",
    "compaction_failed",
    "handle_unreadable",
    "manifest_failed",
    "read_back",
    "read_back_failed",
    "refusals",
    "save_failed",
    "saved",
    "spill_failed",
    "stood_in",
    "store_failed",
]

ENVIRONMENT_VARIABLE = "TOOLCTX_OTEL"
"""Set to ``1`` (or ``true``, ``yes``, ``on``) to send spans and metrics to OpenTelemetry's global providers."""

P = ParamSpec("P")
R = TypeVar("R")

_MEMORY, _DISK, _NONE = StorageKind.MEMORY, StorageKind.DISK, StorageKind.NONE
_SAVES_MEMORY, _SAVES_DISK, _SAVES_OBJECT = slot("saves.memory"), slot("saves.disk"), slot("saves.object")
_BYTES = slot("bytes_stored")
_STAND_INS, _FREED = slot("stand_ins"), slot("tokens_freed")
_BATCHES, _COMPACTION_FAILURES = slot("compaction_batches"), slot("compaction_failures")
_CACHE_BREAKS, _CACHE_BREAK_TOKENS = slot("cache_breaks"), slot("cache_break_tokens")
_READS = slot("read_backs")
_READ_FAILED = {r: slot(f"read_back_failures.{r}") for r in ("unknown", "invalid", "error")}
_SAVE_FAILED = {r: slot(f"save_failures.{r}") for r in SAVE_REASONS}
_REFUSED = {r: slot(f"handle_refusals.{r}") for r in HANDLE_REASONS}
_local = per_thread()
_MISSING = "No stored output "  # (how read_context begins its answer for a handle it does not find)


class _FromEnvironment:
    """The sink before the first event: reads ``TOOLCTX_OTEL`` once (importing toolctx reads nothing), then
    stands aside for what it says."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_from_environment(), name)


class _Silent:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


_sink: Any = _FromEnvironment()  # None (off), an OtelSink, or this until the first event


def _from_environment() -> Any:
    global _sink
    if not isinstance(_sink, _FromEnvironment):  # (enable() or disable() ran meanwhile)
        return _sink or _Silent()
    wanted = os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
    _sink = None
    if wanted in ("1", "true", "yes", "on"):
        try:
            from toolctx.telemetry._otel import OtelSink

            _sink = OtelSink()
        except Exception as exc:
            internal_error(
                f"{ENVIRONMENT_VARIABLE}={wanted} but OpenTelemetry could not be set up; telemetry is off", exc
            )
    elif wanted not in ("", "0", "false", "no", "off"):
        internal_error(f"{ENVIRONMENT_VARIABLE} must be 1 or 0 (true/false, yes/no, on/off), got {wanted!r:.40}")
    return _sink or _Silent()


def use(new: OtelSink | None) -> None:
    """Send events to ``new`` from now on (None: count them only)."""
    global _sink
    _sink = new


def sink() -> OtelSink | None:
    """Where events go besides the counts (None: nowhere), reading ``TOOLCTX_OTEL`` if no event did yet."""
    if isinstance(_sink, _FromEnvironment):
        _from_environment()
    return _sink  # type: ignore[no-any-return]


# -- saves ------------------------------------------------------------------------------------


class _Saved(Protocol):
    """What :func:`saved` reads of a stored call's record."""

    @property
    def id(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def storage(self) -> StorageKind: ...
    @property
    def timestamp_ns(self) -> int: ...
    @property
    def call(self) -> Any: ...


S = TypeVar("S", bound=_Saved)


def saved(record: S, threshold: int, shared: bool) -> S:
    """A call's output was kept (returns ``record``). Where it went: its storage, or object storage for an
    output at least ``threshold`` bytes long in a ``shared`` store (its upload may still run in the background).
    An output that could not be written (storage ``none``) was counted by :func:`store_failed` instead."""
    storage, size = record.storage, record.size
    try:  # (cells(), inlined: this runs on every save)
        counts: list[int] = _local.cells
    except AttributeError:
        counts = cells()
    if storage is _MEMORY and not shared:  # (the usual case first)
        counts[_SAVES_MEMORY] += 1
        where = "memory"
    elif storage is _NONE:
        return record
    elif shared and (storage is _DISK or size >= threshold):
        counts[_SAVES_OBJECT] += 1
        where = "object"
    elif storage is _DISK:
        counts[_SAVES_DISK] += 1
        where = "disk"
    else:
        counts[_SAVES_MEMORY] += 1
        where = "memory"
    counts[_BYTES] += size
    if _sink is not None:
        _sink.saved(record.id, record.call.tool_name, where, size, record.timestamp_ns)
    return record


def save_failed(reason: str, message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """A save failed for ``reason`` (a key of :class:`~toolctx.diagnostics.Counters`' ``save_failures``);
    logged and warned as :func:`~toolctx.diagnostics.internal_error` would."""
    cells()[_SAVE_FAILED[reason]] += 1
    if _sink is not None:
        _sink.failed("save", reason, message, exc)
    internal_error(message, exc, **fields)


def store_failed(shared: bool, message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """The store refused an output: an upload to object storage (``shared``) or a local write."""
    save_failed("upload" if shared else "write", message, exc, **fields)


def manifest_failed(message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """A kept session's manifest could not list an output (in a shared store it is then shown whole)."""
    save_failed("manifest", message, exc, **fields)


def spill_failed(message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """An in-memory output could not move to the store (the memory budget is exceeded; it stays in memory)."""
    save_failed("spill", message, exc, **fields)


# -- what the model is shown ----------------------------------------------------------------------


def stood_in(tool: str, freed: int, resent: int) -> None:
    """An output of ``tool`` is shown as a stand-in from tool time on, freeing about ``freed`` tokens;
    ``resent``: the tokens the change makes the provider read uncached (0: it breaks no cache)."""
    counts = cells()
    counts[_STAND_INS] += 1
    counts[_FREED] += freed if freed > 0 else 0
    if resent:
        counts[_CACHE_BREAKS] += 1
        counts[_CACHE_BREAK_TOKENS] += resent
    if _sink is not None:
        _sink.stood_in(tool, freed if freed > 0 else 0, resent)


def batch_started(shown: int) -> tuple[int, int]:
    """A batch is being made of a conversation that shows ``shown`` tokens; hand the result to :func:`compacted`."""
    return (time.time_ns() if _sink is not None else 0), shown


def compacted(started: tuple[int, int], edits: Sequence[Any], sizes: Sequence[int], shown: int) -> None:
    """A batch made ``edits`` (none: no batch), leaving ``shown`` tokens in a conversation whose items now
    take ``sizes`` tokens each. The cache break's cost is every item from the first one changed on (the
    system prompt and tools before them are read from the cache still). An edit is read for its ``result``,
    ``args``, ``position`` and ``call_position`` (:class:`toolctx.compaction.Edit`)."""
    if not edits:
        return
    items, first = 0, len(sizes)
    for edit in edits:
        if edit.result is not None:
            items += 1
            first = edit.position if edit.position < first else first
        if edit.args:
            items += len(edit.args)
            first = edit.call_position if 0 <= edit.call_position < first else first
    freed = started[1] - shown
    freed = freed if freed > 0 else 0
    resent = sum(sizes[first:])
    counts = cells()
    counts[_BATCHES] += 1
    counts[_STAND_INS] += items
    counts[_FREED] += freed
    counts[_CACHE_BREAKS] += 1
    counts[_CACHE_BREAK_TOKENS] += resent
    if _sink is not None:
        _sink.compacted(started[0] or None, items, freed, resent)


def compaction_failed(message: str, exc: BaseException | None = None, **fields: Any) -> None:
    """A compaction step failed and the prompt goes out as it was; logged and warned as internal_error would."""
    cells()[_COMPACTION_FAILURES] += 1
    if _sink is not None:
        _sink.failed("compaction", "compaction", message, exc)
    internal_error(message, exc, **fields)


# -- reading back -------------------------------------------------------------------------------


_reading: ContextVar[bool] = ContextVar("toolctx_reading_back", default=False)
_raised: ContextVar[BaseException | None] = ContextVar("toolctx_read_back_raised", default=None)


def read_back(function: Callable[P, str]) -> Callable[P, str]:
    """Count (and, on, trace) each call of ``function``, a ``read_context`` body taking the session, then the
    handle (or the model's arguments, holding it as ``id``). An answer that does not show stored text (it
    starts with ``[``, as every page does) is a failure: ``unknown`` for a handle it did not find, else
    ``invalid``; an exception is ``error``. One body calling another counts once."""

    @functools.wraps(function)
    def reading(*args: P.args, **kwargs: P.kwargs) -> str:
        if _reading.get():
            return function(*args, **kwargs)
        start = time.time_ns() if _sink is not None else 0
        ref = args[1] if len(args) > 1 else kwargs.get("ref", kwargs.get("given"))
        ref = ref.get("id") if isinstance(ref, Mapping) else ref
        token = _reading.set(True)
        try:
            answer = function(*args, **kwargs)
        except Exception as exc:
            _read(start, ref, "error", exc)
            _raised.set(exc)  # (counted: read_back_failed, for the same exception, does not count it again)
            raise
        finally:
            _reading.reset(token)
        reason = None if answer.startswith("[") else "unknown" if answer.startswith(_MISSING) else "invalid"
        _read(start, ref, reason, None)
        return answer

    return reading


def read_back_failed(message: str, exc: BaseException) -> None:
    """A ``read_context`` call failed before it could read (its session could not be found, say): counted as
    a read-back that failed (``error``), unless the read-back itself raised it (counted then), and logged and
    warned as internal_error would."""
    if _raised.get() is not exc:
        _read(time.time_ns() if _sink is not None else 0, None, "error", exc)
    _raised.set(None)
    internal_error(message, exc)


def _read(start: int, ref: object, reason: str | None, exc: BaseException | None) -> None:
    counts = cells()
    counts[_READS] += 1
    if reason is not None:
        counts[_READ_FAILED[reason]] += 1
    if _sink is not None:
        _sink.read_back(start or None, ref, reason, exc)


# -- handles passed as arguments -----------------------------------------------------------------------


def refusals(function: Callable[P, R]) -> Callable[P, R]:
    """Count each :class:`~toolctx.HandleError` ``function`` raises (by its reason), and pass it on."""

    @functools.wraps(function)
    def resolving(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except HandleError as exc:
            _refused(exc.reason, str(exc), exc)
            raise

    return resolving


def _refused(reason: str, message: str, exc: BaseException | None) -> None:
    cells()[_REFUSED.get(reason, _REFUSED["other"])] += 1
    if _sink is not None:
        _sink.failed("resolve_handle", reason, message, exc)


def handle_unreadable(message: str, exc: BaseException, **fields: Any) -> None:
    """A handle could not be looked up (the store failed): counted as refused (``unreadable``), logged and
    warned as internal_error would; the caller raises the HandleError for the model."""
    _refused("unreadable", message, exc)
    internal_error(message, exc, **fields)

"""toolctx's spans and metrics through the OpenTelemetry API (imported only when telemetry is enabled).

Names follow OpenTelemetry's conventions: spans and instruments are named
``toolctx.<what>``, units are UCUM (``By``, ``{token}``), the tool a save is for is
the GenAI conventions' ``gen_ai.tool.name`` and a failure's exception class is
``error.type``. Metric attributes stay few-valued (where an output went, why
something failed), so a backend's series stay few.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["OtelSink"]

_SCOPE = "toolctx"
_SAVE_OPERATIONS = "save"
_NOW_WINDOW_NS = 10_000_000_000  # a stamp older than this (a queued call, a test's clock) is not the save's start


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("toolctx")
    except metadata.PackageNotFoundError:  # (a source tree never installed)
        return "0.0.0"


def _qualified(kind: type) -> str:
    """An exception class's fully-qualified name, as ``error.type`` and the exception event name it."""
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


class OtelSink:
    """Sends each event as a span and to the instruments, through the providers given or the global ones."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from opentelemetry import metrics, trace
        from opentelemetry.trace import Status, StatusCode

        version = _version()
        self.tracer = trace.get_tracer(_SCOPE, version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, version, meter_provider=meter_provider)
        self.status, self.error_code = Status, StatusCode.ERROR
        counter, histogram = meter.create_counter, meter.create_histogram
        self.saves = counter("toolctx.saves", "{save}", "Tool outputs stored, by where they went")
        self.bytes_stored = counter("toolctx.stored.bytes", "By", "Serialised bytes of the tool outputs stored")
        self.save_size = histogram("toolctx.save.size", "By", "Serialised size of each tool output stored")
        self.save_failures = counter("toolctx.save.failures", "{failure}", "Saves that failed, by reason")
        self.stand_ins = counter("toolctx.stand_ins", "{stand-in}", "Outputs, arguments and texts shown as stand-ins")
        self.tokens_freed = counter("toolctx.tokens.freed", "{token}", "Prompt tokens the stand-ins freed")
        self.batches = counter("toolctx.compaction.batches", "{batch}", "Compaction batches made")
        self.batch_freed = histogram("toolctx.compaction.tokens_freed", "{token}", "Tokens one batch freed")
        self.compaction_failures = counter(
            "toolctx.compaction.failures", "{failure}", "Compaction steps that failed, leaving the prompt as it was"
        )
        self.cache_breaks = counter("toolctx.cache_breaks", "{break}", "Prompt changes that break the prompt cache")
        self.cache_break_tokens = counter(
            "toolctx.cache_break.tokens", "{token}", "Tokens re-sent uncached because of a cache break (estimated)"
        )
        self.read_backs = counter("toolctx.read_backs", "{read}", "read_context calls, by outcome")
        self.read_back_failures = counter("toolctx.read_back.failures", "{failure}", "read_context calls that failed")
        self.refusals = counter("toolctx.handle.refusals", "{refusal}", "Handles passed as arguments and refused")

    def error_status(self, text: str) -> Any:
        return self.status(self.error_code, text)

    def _span(self, name: str, start_ns: int | None, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(name, start_time=start_ns, attributes=attributes)

    def saved(self, context_id: str, tool: str, storage: str, size: int, stamped_ns: int) -> None:
        now = time.time_ns()
        start = stamped_ns if now - _NOW_WINDOW_NS <= stamped_ns <= now else now
        self._span(
            "toolctx.save",
            start,
            {
                "gen_ai.tool.name": tool,
                "toolctx.storage": storage,
                "toolctx.size": size,
                "toolctx.context.id": context_id,
            },
        ).end()
        where = {"toolctx.storage": storage}
        self.saves.add(1, where)
        self.bytes_stored.add(size, where)
        self.save_size.record(size, where)

    def failed(self, operation: str, reason: str, message: str, exc: BaseException | None) -> None:
        """One failure toolctx carried on from: a span with an error status and the exception as its event."""
        attributes = {"toolctx.failure.reason": reason}
        if exc is not None:
            attributes["error.type"] = _qualified(type(exc))
        span = self._span(f"toolctx.{operation}", None, {**attributes, "toolctx.failure.message": message})
        if exc is not None:
            span.record_exception(exc)
        span.set_status(self.error_status(message))
        span.end()
        if operation == _SAVE_OPERATIONS:
            self.save_failures.add(1, attributes)
        elif operation == "compaction":
            self.compaction_failures.add(1, attributes)
        elif operation == "resolve_handle":
            self.refusals.add(1, {"toolctx.failure.reason": reason})

    def stood_in(self, tool: str, freed: int, resent: int) -> None:
        self._span(
            "toolctx.stand_in",
            None,
            {"gen_ai.tool.name": tool, "toolctx.tokens.freed": freed, "toolctx.cache_break.tokens": resent},
        ).end()
        when = {"toolctx.stand_in.when": "tool_time"}
        self.stand_ins.add(1, when)
        self.tokens_freed.add(freed, when)
        if resent:
            self.cache_breaks.add(1)
            self.cache_break_tokens.add(resent)

    def compacted(self, start_ns: int, items: int, freed: int, resent: int) -> None:
        self._span(
            "toolctx.compaction",
            start_ns,
            {"toolctx.compaction.items": items, "toolctx.tokens.freed": freed, "toolctx.cache_break.tokens": resent},
        ).end()
        when = {"toolctx.stand_in.when": "batch"}
        self.stand_ins.add(items, when)
        self.tokens_freed.add(freed, when)
        self.batches.add(1)
        self.batch_freed.record(freed)
        self.cache_breaks.add(1)
        self.cache_break_tokens.add(resent)

    def read_back(self, start_ns: int, ref: object, reason: str | None, exc: BaseException | None) -> None:
        attributes: dict[str, Any] = {"toolctx.read_back.outcome": reason or "ok"}
        if isinstance(ref, str):
            attributes["toolctx.context.id"] = ref[:200]
        span = self._span("toolctx.read_context", start_ns, attributes)
        if exc is not None:
            span.record_exception(exc)
        if reason is not None:
            span.set_status(self.error_status(f"read_context failed: {reason}"))
            self.read_back_failures.add(1, {"toolctx.failure.reason": reason})
        span.end()
        self.read_backs.add(1, {"toolctx.read_back.outcome": reason or "ok"})

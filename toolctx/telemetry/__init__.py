"""What toolctx did, counted per process, and optionally traced and measured with OpenTelemetry.

When storing an output or compacting a conversation fails, toolctx logs and warns
and carries on (the tool's result and the prompt go out unchanged). These doors
make that visible:

- :func:`toolctx.diagnostics.counters`: a snapshot of per-process counts (saves by
  where they went, bytes stored, save failures by reason, stand-ins shown, tokens
  freed, compaction batches, cache breaks and the tokens they re-send uncached,
  read-backs, handle refusals), always on, with no dependency;
  :func:`toolctx.diagnostics.reset_counters` counts from zero again (for tests);
- :func:`enable` / :func:`disable`: spans and metrics through the OpenTelemetry
  API (``pip install 'toolctx[otel]'``), to the providers given or the global
  ones; or set ``TOOLCTX_OTEL=1`` before the first event. Off (the default),
  nothing of OpenTelemetry is imported and no span is made;
- :mod:`toolctx.telemetry.events`: the events themselves, for adapters and plugins
  built on toolctx that store or compact on their own.
"""

from __future__ import annotations

from typing import Any

from toolctx.telemetry import events

__all__ = ["disable", "enable", "enabled", "events"]


def enable(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Send toolctx's spans and metrics to OpenTelemetry from now on, process-wide.

    ``tracer_provider`` / ``meter_provider``: OpenTelemetry SDK providers (or any
    implementing the API); None uses the global ones (``opentelemetry.trace`` and
    ``opentelemetry.metrics``' ``set_*_provider``), as they are when an event
    comes. Calling it again replaces the providers. Raises ImportError (install
    ``toolctx[otel]``) if the OpenTelemetry API is not installed. The counts of
    :func:`toolctx.diagnostics.counters` are kept either way.
    """
    try:
        from toolctx.telemetry._otel import OtelSink

        sink = OtelSink(tracer_provider, meter_provider)
    except ImportError as exc:
        raise ImportError(
            f"toolctx telemetry needs the OpenTelemetry API: pip install 'toolctx[otel]' ({exc})"
        ) from exc
    events.use(sink)


def disable() -> None:
    """Stop sending spans and metrics (what was sent stays sent); the counts go on. Also overrides ``TOOLCTX_OTEL``."""
    events.use(None)


def enabled() -> bool:
    """Whether spans and metrics are being sent (by :func:`enable` or ``TOOLCTX_OTEL=1``)."""
    return events.sink() is not None

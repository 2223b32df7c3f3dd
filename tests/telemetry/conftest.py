"""Counting starts from zero in each test; OpenTelemetry is off unless a test turns it on with ``otel``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from toolctx import telemetry
from toolctx.diagnostics import reset_counters


@dataclass
class Otel:
    """An SDK tracer and meter provider exporting to memory, enabled for toolctx for the test."""

    spans: Any
    reader: Any

    def finished(self, name: str | None = None) -> list[Any]:
        return [s for s in self.spans.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        """Every data point of ``metric`` (each with its attributes), from one collection."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def total(self, metric: str, **attributes: Any) -> int:
        """The sum of ``metric``'s points whose attributes include ``attributes``."""
        return sum(
            p.value
            for p in self.points(metric)
            if all(p.attributes.get(k.replace("__", ".")) == v for k, v in attributes.items())
        )


@pytest.fixture(autouse=True)
def _counting_from_zero() -> Iterator[None]:
    telemetry.disable()
    reset_counters()
    yield
    telemetry.disable()


@pytest.fixture
def otel() -> Iterator[Otel]:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    yield Otel(exporter, reader)
    telemetry.disable()
    meter_provider.shutdown()
    tracer_provider.shutdown()

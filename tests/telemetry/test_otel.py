"""Spans and metrics through OpenTelemetry's SDK (in-memory exporters), from real sessions and agent loops."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolctx import session, telemetry
from toolctx.compaction import read_context
from toolctx.diagnostics import counters

from .conftest import Otel
from .scenario import run

ROOT = Path(__file__).resolve().parents[2]

if os.environ.get("CI") == "true":  # (the SDK is in the dev extra: under CI it may not be missing)
    import opentelemetry.sdk  # noqa: F401


def test_saves_a_failure_read_backs_and_a_refusal_make_spans_and_metrics(tmp_path: Path, otel: Otel) -> None:
    counts = run(tmp_path)
    saves = otel.finished("toolctx.save")
    ok = [s for s in saves if s.status.is_ok]
    assert sorted(s.attributes["gen_ai.tool.name"] for s in ok) == ["report", "search", "search", "write"]
    [big] = [s for s in ok if s.attributes["gen_ai.tool.name"] == "report"]
    assert big.attributes["toolctx.storage"] == "disk"
    assert big.attributes["toolctx.size"] == 50_002
    assert big.end_time >= big.start_time
    [failed] = [s for s in saves if not s.status.is_ok]
    assert failed.attributes["toolctx.failure.reason"] == "write"
    assert failed.attributes["error.type"] == "OSError"
    assert "could not store the output of tool 'unlucky'" in failed.status.description
    [event] = failed.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "OSError"

    reads = otel.finished("toolctx.read_context")
    assert [s.attributes["toolctx.read_back.outcome"] for s in reads] == ["ok", "unknown", "invalid"]
    assert [s.status.is_ok for s in reads] == [True, False, False]
    [refusal] = otel.finished("toolctx.resolve_handle")
    assert refusal.attributes["toolctx.failure.reason"] == "unknown"
    assert refusal.attributes["error.type"] == refusal.events[0].attributes["exception.type"]
    assert refusal.attributes["error.type"] == "toolctx.errors.HandleError"

    assert otel.total("toolctx.saves") == counts["saves.memory"] + counts["saves.disk"] == 4
    assert otel.total("toolctx.saves", toolctx__storage="disk") == 1
    assert otel.total("toolctx.stored.bytes") == counts["bytes_stored"]
    assert otel.total("toolctx.save.failures", toolctx__failure__reason="write") == 1
    assert otel.total("toolctx.read_backs") == 3
    assert otel.total("toolctx.read_back.failures", toolctx__failure__reason="unknown") == 1
    assert otel.total("toolctx.handle.refusals", toolctx__failure__reason="unknown") == 1
    assert sum(p.count for p in otel.points("toolctx.save.size")) == 4  # (one series per storage)


def test_a_langchain_agent_loop_makes_a_batch_span_with_what_it_freed(tmp_path: Path, otel: Otel) -> None:
    pytest.importorskip("langchain")
    from tests.integrations.test_langchain import compaction_agent
    from tests.integrations.test_langchain import run as run_agent

    _, agent = compaction_agent()
    with session(tmp_path):
        run_agent(agent, "collect everything", use_async=False)
    batches = otel.finished("toolctx.compaction")
    assert batches
    snapshot = counters()
    assert snapshot.compaction_batches == len(batches)
    attributes = [b.attributes for b in batches]
    assert sum(a["toolctx.compaction.items"] for a in attributes) == snapshot.stand_ins >= 4
    assert sum(a["toolctx.tokens.freed"] for a in attributes) == snapshot.tokens_freed > 0
    assert sum(a["toolctx.cache_break.tokens"] for a in attributes) == snapshot.cache_break_tokens > 0
    assert otel.total("toolctx.compaction.batches") == len(batches)
    assert otel.total("toolctx.stand_ins", toolctx__stand_in__when="batch") == snapshot.stand_ins
    assert otel.total("toolctx.tokens.freed") == snapshot.tokens_freed
    assert otel.total("toolctx.cache_breaks") == snapshot.cache_breaks == len(batches)
    assert otel.total("toolctx.cache_break.tokens") == snapshot.cache_break_tokens


def test_a_big_output_gets_a_stand_in_span_and_its_read_back_one(tmp_path: Path, otel: Otel) -> None:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from toolctx_langchain import ToolContextMiddleware

    from tests.integrations.test_langchain import BIG, call, chat, fetch_report, handle_in
    from tests.integrations.test_langchain import run as run_agent

    model = chat(
        call("fetch_report", "c1", region="emea"),
        lambda messages: call("read_context", "c2", id=handle_in(messages), offset=0, limit=100),
        AIMessage(content="done"),
    )
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    with session(tmp_path):
        run_agent(agent, "report", use_async=False)
    [stand_in] = otel.finished("toolctx.stand_in")
    assert stand_in.attributes["gen_ai.tool.name"] == "fetch_report"
    assert stand_in.attributes["toolctx.tokens.freed"] > 5_000  # (about 40 KB of text)
    assert stand_in.attributes["toolctx.cache_break.tokens"] > 0  # (the first: read_context joins the tools)
    [read] = otel.finished("toolctx.read_context")
    assert read.status.is_ok
    assert read.attributes["toolctx.read_back.outcome"] == "ok"
    assert counters().stand_ins == 1
    assert counters().read_backs == 1
    assert otel.total("toolctx.stand_ins", toolctx__stand_in__when="tool_time") == 1
    assert len(BIG) > 5_000


def test_when_off_no_span_is_made_and_the_counts_go_on(tmp_path: Path, otel: Otel) -> None:
    telemetry.disable()
    assert not telemetry.enabled()
    with session(tmp_path) as s:
        pointer = s.save_context("t", {}, "x" * 50_000)
        read_context(s, pointer.handle)
    assert otel.finished() == []
    assert otel.points("toolctx.saves") == []
    assert counters().saved == 1
    assert counters().read_backs == 1


def test_the_environment_variable_sends_to_the_global_providers(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    script = (
        "import sys, toolctx\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "with toolctx.session(sys.argv[1]) as s:\n"
        "    s.save_context('t', {}, 'x')\n"
        "print([s.name for s in exporter.get_finished_spans()], toolctx.telemetry.enabled())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'integrations'}", "TOOLCTX_OTEL": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['toolctx.save'] True"

"""The per-process counts: what toolctx did and what it could not do, read without any extra dependency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import toolctx
from toolctx import telemetry
from toolctx.compaction import answer_read_context
from toolctx.diagnostics import counters, reset_counters
from toolctx.storage import DictStore

from .scenario import run

ROOT = Path(__file__).resolve().parents[2]


def test_saves_failures_read_backs_and_refusals_are_counted(tmp_path: Path) -> None:
    counts = run(tmp_path)
    snapshot = counters()
    assert counts == snapshot.as_dict()
    # (the call refused a handle is stored too, as an error: errors are context)
    assert dict(snapshot.saves) == {"memory": 3, "disk": 1, "object": 0}
    assert snapshot.saved == 4
    assert snapshot.bytes_stored == 2 * 202 + 50_002 + 4  # (each output as JSON: a string, and the error's null)
    assert snapshot.save_failures["write"] == 1
    assert snapshot.failed_saves == 1
    assert snapshot.uploads_failed == 0
    assert snapshot.read_backs == 3
    assert dict(snapshot.read_back_failures) == {"unknown": 1, "invalid": 1, "error": 0}
    assert snapshot.handle_refusals["unknown"] == 1
    assert sum(snapshot.handle_refusals.values()) == 1
    assert snapshot.stand_ins == snapshot.compaction_batches == snapshot.cache_breaks == 0


def test_a_shared_store_counts_object_saves_and_failed_uploads(tmp_path: Path) -> None:
    run(tmp_path, shared=True)
    snapshot = counters()
    assert dict(snapshot.saves) == {"memory": 3, "disk": 0, "object": 1}
    assert snapshot.uploads_failed == 1
    assert snapshot.save_failures["write"] == 0


def test_the_counts_are_the_same_without_opentelemetry_installed(tmp_path: Path) -> None:
    here = run(tmp_path / "here")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'integrations'}", "TOOLCTX_OTEL": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.telemetry.scenario", str(tmp_path / "there")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout.splitlines()[-1]) == here  # (asked for, OpenTelemetry missing: counted only)
    assert "TOOLCTX_OTEL=1 but OpenTelemetry could not be set up" in out.stderr


def test_a_models_read_context_call_counts_once_and_bad_arguments_count_as_invalid(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        pointer = s.save_context("t", {}, "x" * 50_000)
        assert answer_read_context(s, {"id": pointer.handle, "limit": 10}).endswith("x" * 10)
        assert answer_read_context(s, {"id": pointer.handle, "colour": "red"}).startswith("read_context takes")
        assert answer_read_context(s, ["not", "an", "object"]).startswith("read_context takes")  # type: ignore[arg-type]
    snapshot = counters()
    assert snapshot.read_backs == 3
    assert dict(snapshot.read_back_failures) == {"unknown": 0, "invalid": 2, "error": 0}


def test_reset_counts_from_zero_and_each_snapshot_stands_still(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        s.save_context("t", {"n": 1}, "x")
        before = counters()
        s.save_context("t", {"n": 2}, "x")
        assert before.saved == 1
        assert counters().saved == 2
        reset_counters()
        assert counters().saved == 0
        s.save_context("t", {"n": 3}, "x")
    assert counters().saved == 1


def test_threads_lose_no_count(tmp_path: Path) -> None:
    with toolctx.session(tmp_path, store=DictStore()) as s:

        def save(worker: int) -> None:
            for n in range(200):
                s.save_context("t", {"worker": worker, "n": n}, "x" * 10)

        threads = [threading.Thread(target=save, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counters().saves["memory"] == 8 * 200
        reset_counters()  # (the threads ended: their counts are folded in, and reset like the others)
        assert counters().saved == 0


def test_telemetry_is_off_by_default_and_importing_toolctx_imports_no_opentelemetry(tmp_path: Path) -> None:
    script = (
        "import sys, toolctx\n"
        "from toolctx import telemetry\n"
        "with toolctx.session(sys.argv[1]) as s:\n"
        "    s.save_context('t', {}, 'x' * 50_000)\n"
        "print(telemetry.enabled(), [m for m in sys.modules if m.startswith('opentelemetry')])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TOOLCTX_OTEL"}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{ROOT / 'integrations'}"
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False []"


def test_a_wrong_environment_value_is_said_and_leaves_telemetry_off(tmp_path: Path) -> None:
    script = "import toolctx.telemetry as t; print(t.enabled())"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'integrations'}", "TOOLCTX_OTEL": "maybe"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert "TOOLCTX_OTEL must be 1 or 0" in out.stderr


def test_enable_without_opentelemetry_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"pip install 'toolctx\[otel\]'"):
        telemetry.enable()
    assert not telemetry.enabled()

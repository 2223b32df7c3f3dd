"""Expiry and the sweep of a shared store at 100,000 conversations, and what a request pays meanwhile.

    python bench/retention.py [--conversations 100000] [--with-objects 10000] [--orphans 2000]

The services are real and started here: moto's S3 server over HTTP on loopback and a
PostgreSQL server (the session index). The workload: ``--conversations`` conversations
in the index, all expired, each with one listed call; the first ``--with-objects`` of
them also have their payload in S3 (moto keeps objects in one Python process: a
hundred thousand of them would measure moto). ``--orphans`` more sessions have objects
and no index row (workers killed before listing). Measured:

- expiry (``Conversations.collect()``, as its background thread runs it): wall time, per
  conversation, and the requests it makes (S3: a listing and one bulk delete per
  conversation with objects, a listing for one without; index: a lease, the rows);
- the sweep (``toolctx.index.sweep``): wall time for the orphans among the rest;
- requests meanwhile: a new conversation opened, one call stored and the conversation
  closed (``Conversations.get`` + ``save_context``), timed in a loop before expiry and
  while it runs in its background thread: median and p99, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SECOND = 1_000_000_000
LINE = b'{"op":"put","file":"report_0_0_0_abcdefghij.json","id":"abcdefghij"}\n'  # (one listed call each)


def populate(index: Any, store: str, conversations: int, with_objects: int, orphans: int) -> list[str]:
    """The conversations, all expired a day ago, and their objects (parallel puts); their ids."""
    import obstore
    from sqlalchemy import insert

    from toolctx.index._schema import calls, sessions

    past = time.time_ns() - 86_400 * SECOND
    rows = [
        {"session_id": f"conv-{n:032x}", "store": store, "created_ns": past, "used_ns": past, "expires_ns": past}
        for n in range(conversations)
    ]
    entries = [
        {"session_id": r["session_id"], "record_id": "abcdefghij", "task": "t", "call_id": "c", "entry": LINE}
        for r in rows
    ]
    with index.engine.begin() as conn:
        for start in range(0, len(rows), 10_000):
            conn.execute(insert(sessions), rows[start : start + 10_000])
            conn.execute(insert(calls), entries[start : start + 10_000])
    target = obstore.store.from_url(store)

    def put(name: str) -> None:
        obstore.put(target, f"{name}/report_0_0_0_abcdefghij.json", b'{"result": "x"}')

    names = [r["session_id"] for r in rows[:with_objects]] + [f"20261129T000000-{n:08x}" for n in range(orphans)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, names))
    return [r["session_id"] for r in rows]


def timed_requests(conversations: Any, label: str, until: threading.Event | None, count: int) -> list[float]:
    spent = []
    n = 0
    while (until is None and n < count) or (until is not None and not until.is_set()):
        started = time.perf_counter()
        session = conversations.get(f"{label}-{n}")
        session.save_context("report", {"n": n}, "figures " * 50, task_id=f"{label}-{n}")
        spent.append(time.perf_counter() - started)
        n += 1
    return spent


def timed_sweep(store: str, index: Any) -> dict[str, Any]:
    from toolctx.index import sweep

    started = time.perf_counter()
    swept = sweep(store, index, grace=0, now=time.time() + 1)
    return {"swept": len(swept), "seconds": round(time.perf_counter() - started, 1)}


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "requests": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1e3, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--with-objects", type=int, default=10_000)
    parser.add_argument("--orphans", type=int, default=2_000)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()

    import toolctx
    from tests.postgres_server import PostgresServer
    from tests.s3_server import S3Server
    from toolctx.index import SessionIndex

    s3, postgres = S3Server().start(), PostgresServer(fsync=True).start()
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "conversations": options.conversations,
        "with_objects": options.with_objects,
        "orphans": options.orphans,
    }
    try:
        os.environ.update(s3.environment())
        store = f"s3://{s3.bucket()}/conversations"
        index = SessionIndex(postgres.url)
        with tempfile.TemporaryDirectory() as tmp:
            # (timed before the store fills: this worker's own hourly collection runs now, with nothing to do)
            serving = toolctx.Conversations(Path(tmp) / "serving", store=store, index=postgres.url)
            report["requests_idle"] = summary(timed_requests(serving, "idle", None, 300))
            started = time.perf_counter()
            populated = populate(index, store, options.conversations, options.with_objects, options.orphans)
            report["populate_seconds"] = round(time.perf_counter() - started, 1)
            collector = toolctx.Conversations(Path(tmp) / "collector", store=store, index=postgres.url)
            done = threading.Event()
            removed: list[str] = []

            def collect() -> None:
                try:
                    removed.extend(collector.collect())
                finally:
                    done.set()

            started = time.perf_counter()
            thread = threading.Thread(target=collect)
            thread.start()
            during = timed_requests(serving, "busy", done, 0)
            thread.join()
            seconds = time.perf_counter() - started
            report["expiry"] = {
                "removed": len(removed),
                "seconds": round(seconds, 1),
                "ms_per_conversation": round(seconds * 1e3 / max(1, len(removed)), 3),
                "left_in_index": len(index.known(populated)),
            }
            report["requests_during_expiry"] = summary(during)
            report["ratio_median"] = round(
                report["requests_during_expiry"]["median_ms"] / report["requests_idle"]["median_ms"], 2
            )
            serving.close()
            collector.close()
        report["sweep"] = timed_sweep(store, index)
    finally:
        postgres.stop()
        s3.stop()
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

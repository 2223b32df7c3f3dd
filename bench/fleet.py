"""Recorded sessions served by a fleet: every turn on a worker process picked at random, on S3 + PostgreSQL.

    python bench/fleet.py --traces ../shared/traces/dev.jsonl [--workers 4] [--framework langchain|agents|both]
                          [--limit N] [--seed 7] [--json out.json]

The workload: the multi-turn sessions of the trace file (each user message is a
turn: a run of the real loop, LangChain's ``create_agent`` or the Agents SDK's
``Runner.run``, with the scripted model of ``bench/replay.py``). The services are
real and started here: an S3 endpoint over HTTP on loopback (moto's server) for the
payloads and a PostgreSQL server for the session index (``TOOLCTX_STORE``,
``TOOLCTX_INDEX``). Every session runs twice, on the same code path:

- **single process**: every turn on one worker process;
- **fleet**: every turn on one of ``--workers`` processes picked at random.

Each worker is a process that stays up between turns, with one ``Conversations``
(and for LangChain one ``ToolContextMiddleware``) for everything it serves.
LangChain's history goes back and forth with the client; the SDK's lives in a
SQLite session file every worker opens.

Reported, per framework: the model inputs of the two runs compared call by call
with the handles (random) numbered in order of appearance, the tokens of both
(``bench/replay.py``'s count), every stand-in ever shown read back from **every**
worker and compared with the recorded output, pairing and order errors, and the
turns that failed (``SessionBusyError`` or anything else) or that toolctx warned in.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _replay_measure import Figures, ModelInput, TokenCounter, Unit, measure, o200k_counter
from _replay_trace import Trace, load_traces, recorded_texts

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
HANDLE = re.compile(r"ctx:[0-9a-z]{7,64}")


class Fleet:
    """``size`` worker processes that stay up, each started on the shared store and index."""

    def __init__(self, size: int, traces: Path, local: Path) -> None:
        from _fleet_turns import start

        context = multiprocessing.get_context("spawn")
        self.workers = [ProcessPoolExecutor(max_workers=1, mp_context=context) for _ in range(size)]
        self.pids = [
            w.submit(start, str(traces), str(local / f"worker-{n}")).result() for n, w in enumerate(self.workers)
        ]

    def close(self) -> None:
        for worker in self.workers:
            worker.shutdown(cancel_futures=True)


def serve(
    trace: Trace, framework: str, workers: Sequence[ProcessPoolExecutor], route: random.Random, name: str, db: str
) -> tuple[list[ModelInput], list[int], list[str], list[str]]:
    """Every turn of ``trace`` on a worker picked by ``route``: (model inputs, pids, warnings, failures)."""
    from _fleet_turns import agents_turn, langchain_turn

    inputs: list[ModelInput] = []
    pids: list[int] = []
    said: list[str] = []
    failed: list[str] = []
    history: Any = [] if framework == "langchain" else db
    for index in range(len(trace.turns)):
        worker = route.choice(workers)
        try:
            if framework == "langchain":
                outcome = worker.submit(langchain_turn, trace.id, name, index, history).result(timeout=600)
                history = outcome["history"]
            else:
                outcome = worker.submit(agents_turn, trace.id, name, index, history).result(timeout=600)
        except Exception as exc:
            failed.append(f"{trace.id} turn {index}: {type(exc).__name__}: {exc}")
            break
        inputs += outcome["inputs"]
        pids.append(outcome["pid"])
        said += outcome["warnings"]
    return inputs, pids, said, failed


def numbered(inputs: Sequence[ModelInput]) -> list[ModelInput]:
    """The inputs with each handle replaced by its number of first appearance (handles are random)."""
    order: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return order.setdefault(match.group(0), f"ctx:h{len(order):08d}")

    out = []
    for model_input in inputs:
        units = tuple(
            Unit(u.role, tuple((k, HANDLE.sub(number, t)) for k, t in u.parts), u.calls, u.answers)
            for u in model_input.units
        )
        out.append(ModelInput(units, model_input.extra))
    return out


def restored_everywhere(
    trace: Trace, name: str, inputs: Sequence[ModelInput], workers: Sequence[ProcessPoolExecutor], figures: Figures,
    count: TokenCounter,
) -> tuple[Figures, int]:  # fmt: skip
    """Measure ``inputs``, reading every stand-in back from every worker: one that any worker reads
    differently, or not at all, counts as unrestorable. Also returns how many readings were made."""
    from _fleet_turns import read_all
    from _replay_trace import OutputBook

    wanted: list[tuple[str, str]] = []

    def ask(handle: str, part: str = "result") -> str | None:
        wanted.append((handle, part))
        return None

    outputs, args, texts = OutputBook(trace).by_id, {c.id: c.args for c in trace.calls}, recorded_texts(trace)
    measure(Figures(trace.id, trace.source, "probe", True), inputs, outputs, count, ask, None, args, texts)
    answers = [w.submit(read_all, name, wanted).result(timeout=600) for w in workers]

    def read(handle: str, part: str = "result") -> str | None:
        seen = {answer.get((handle, part)) for answer in answers}
        return seen.pop() if len(seen) == 1 else None

    from toolctx.redaction import Redactor

    measure(figures, inputs, outputs, count, read, Redactor().redact_text, args, texts)
    return figures, len(wanted) * len(workers)


def first(single: list[ModelInput], fleet: list[ModelInput]) -> None:
    """Print where the first differing model input differs."""
    for call, (x, y) in enumerate(zip(single, fleet, strict=False)):
        if x == y:
            continue
        for at, (u, v) in enumerate(zip(x.units, y.units, strict=False)):
            if u != v:
                print(f"call {call}, unit {at} ({u.role}):\n  single: {u.parts!r:.600}\n  fleet:  {v.parts!r:.600}",
                      file=sys.stderr)  # fmt: skip
                return
        print(f"call {call}: {len(x.units)} units against {len(y.units)}", file=sys.stderr)
        return


def storage_figures(store: str, index: str) -> dict[str, Any]:
    """What the runs left in the bucket and the index: objects and bytes, rows, table sizes, and the
    statements PostgreSQL counted per table (inserts, updates, index scans)."""
    import statistics

    import obstore
    import psycopg

    from toolctx.storage import ObjectStore

    probe = ObjectStore(store, "probe")
    sizes = []
    for session_id in probe.sessions():
        listing = obstore.list(obstore.store.from_url(f"{store}/{session_id}"))
        sizes += [meta["size"] for batch in listing for meta in batch]
    figures: dict[str, Any] = {
        "objects": len(sizes),
        "object_bytes": sum(sizes),
        "object_bytes_median": statistics.median(sizes) if sizes else 0,
    }
    with psycopg.connect(index) as conn:
        for table in ("toolctx_sessions", "toolctx_calls", "toolctx_decisions"):
            rows, size = conn.execute(f"SELECT count(*), pg_total_relation_size('{table}') FROM {table}").fetchone()
            figures[table] = {"rows": rows, "bytes": size}
        time.sleep(1)  # (the statistics collector reports after a moment)
        for name, ins, upd, dele, scans in conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, coalesce(idx_scan, 0) + coalesce(seq_scan, 0) "
            "FROM pg_stat_user_tables WHERE relname LIKE 'toolctx_%'"
        ):
            figures.setdefault(name, {}).update(inserted=ins, updated=upd, deleted=dele, scans=scans)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--framework", choices=["langchain", "agents", "both"], default="both")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--session", action="append", default=[], help="only this session (repeatable)")
    parser.add_argument("--show-differences", action="store_true", help="print the first differing model input")
    parser.add_argument("--all-sessions", action="store_true", help="single-turn sessions too (one worker each)")
    options = parser.parse_args(argv)
    traces = [t for t in load_traces(options.traces) if len(t.turns) > 1 or options.all_sessions]
    if options.session:
        traces = [t for t in traces if t.id in options.session]
    if options.limit:
        traces = traces[: options.limit]
    frameworks = ["langchain", "agents"] if options.framework == "both" else [options.framework]

    from tests.postgres_server import PostgresServer
    from tests.s3_server import S3Server

    s3 = S3Server().start()
    postgres = PostgresServer().start()
    report: dict[str, Any] = {
        "sessions": len(traces),
        "turns": sum(len(t.turns) for t in traces),
        "tool_calls": sum(len(t.calls) for t in traces),
        "by_framework": {},
    }
    try:
        os.environ.update(s3.environment())
        os.environ["TOOLCTX_STORE"] = f"s3://{s3.bucket()}/conversations"
        os.environ["TOOLCTX_INDEX"] = postgres.url
        os.environ["PYTHONPATH"] = os.pathsep.join(sys.path)
        count = o200k_counter()
        with tempfile.TemporaryDirectory() as tmp:
            single = Fleet(1, options.traces, Path(tmp) / "single")
            fleet = Fleet(options.workers, options.traces, Path(tmp) / "fleet")
            try:
                for framework in frameworks:
                    report["by_framework"][framework] = run(
                        framework, traces, single, fleet, random.Random(options.seed), Path(tmp), count,
                        options.show_differences,
                    )  # fmt: skip
            finally:
                single.close()
                fleet.close()
        report["storage"] = storage_figures(os.environ["TOOLCTX_STORE"], postgres.url)
    finally:
        postgres.stop()
        s3.stop()
    report["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2))
    return 0


def run(
    framework: str, traces: list[Trace], single: Fleet, fleet: Fleet, route: random.Random, tmp: Path,
    count: TokenCounter, show: bool = False,
) -> dict[str, Any]:  # fmt: skip
    totals: dict[str, Any] = {
        "model_calls": 0, "identical_inputs": 0, "tokens_single": 0, "tokens_fleet": 0, "stand_ins": 0,
        "tokens_single_handles_numbered": 0, "tokens_fleet_handles_numbered": 0,
        "restored_everywhere": 0, "unrestorable": 0, "readings": 0, "pairing_errors": 0, "order_errors": 0,
        "failed_turns": [], "warnings": [], "workers_used": 0, "differing": [],
    }  # fmt: skip
    used: set[int] = set()
    for trace in traces:
        runs: dict[str, tuple[list[ModelInput], Figures]] = {}
        for label, group in (("single", single), ("fleet", fleet)):
            name = f"{trace.id}/{label}/{framework}"
            inputs, pids, said, failed = serve(trace, framework, group.workers, route, name, str(tmp / f"{label}.db"))
            totals["failed_turns"] += failed
            totals["warnings"] += said
            figures = Figures(trace.id, trace.source, framework, True, tool_calls=len(trace.calls))
            figures, readings = restored_everywhere(trace, name, inputs, group.workers, figures, count)
            runs[label] = (inputs, figures)
            if label == "fleet":
                used.update(pids)
                totals["readings"] += readings
        (a, fa), (b, fb) = runs["single"], runs["fleet"]
        na, nb = numbered(a), numbered(b)
        same = sum(x == y for x, y in zip(na, nb, strict=False))
        for label, shown in (("single", na), ("fleet", nb)):
            plain = measure(Figures(trace.id, trace.source, framework, True), shown, {}, count)
            totals[f"tokens_{label}_handles_numbered"] += plain.tokens
        totals["model_calls"] += len(b)
        totals["identical_inputs"] += same
        if same != len(a) or len(a) != len(b):
            totals["differing"].append(trace.id)
            if show:
                first(na, nb)
        totals["tokens_single"] += fa.tokens
        totals["tokens_fleet"] += fb.tokens
        totals["stand_ins"] += fb.stand_ins
        totals["restored_everywhere"] += fb.restored + fb.restored_redacted
        totals["unrestorable"] += len(fb.unrestorable) + len(fb.arguments_unrestorable) + len(fb.texts_unrestorable)
        totals["pairing_errors"] += fb.pairing_errors
        totals["order_errors"] += fb.order_errors
        print(f"{framework} {trace.id}: {len(b)} calls, {same} identical, tokens {fa.tokens} / {fb.tokens}",
              file=sys.stderr)  # fmt: skip
    totals["workers_used"] = len(used)
    return totals


if __name__ == "__main__":
    raise SystemExit(main())

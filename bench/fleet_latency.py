"""What a shared store costs a tool call and a model call, against the local path, in the same run.

    python bench/fleet_latency.py [--traces ../shared/traces/dev.jsonl] [--per-source 6] [--rounds 3] [--model-ms 0]

The workload: the first ``--per-source`` sessions of each source of the trace file,
replayed through LangChain's real loop (``bench/replay.py``'s scripted model) with
``ToolContextMiddleware(session=conversations)``, where ``conversations`` is either
``Conversations(<local folder>)`` (today's one-host path) or
``Conversations(store="s3://...", index="postgresql://...")`` on moto's S3 server over
HTTP on loopback and a PostgreSQL server, both started here, with uploads before the tool
returns (the default) or in the background (``background_uploads=True``). The three
alternate session by session, ``--rounds`` times. Reported: the wall time inside the middleware's tool hook
per tool call (the tool itself excluded) and inside its model hook per model call (the
model excluded): median, p90, p99, and the shared path's ratio to the local one.

The scripted model answers at once unless ``--model-ms`` says how long it takes (a real
one takes seconds): with 0, the work a hook leaves to background threads (uploads, index
writes) runs during the next hooks and holds up their thread at the interpreter lock, the
worst case for the shared path; with a model that takes some time, it runs meanwhile.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _replay_langchain
from _replay_measure import HookClock, o200k_counter
from _replay_trace import load_traces

import toolctx

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
WALLS: dict[str, list[float]] = {}


def _recording_add(self: HookClock, kind: str, cpu: float, wall: float) -> None:
    self.cpu[kind] += cpu
    self.wall += wall
    WALLS.setdefault(kind, []).append(wall)


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1e3

    return {"calls": len(ordered), "median_ms": round(statistics.median(ordered) * 1e3, 3),
            "p90_ms": round(at(0.9), 3), "p99_ms": round(at(0.99), 3)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--per-source", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=0.0, help="how long the scripted model takes to answer")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    if options.model_ms:
        respond = _replay_langchain.ScriptedChatModel._generate

        def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
            time.sleep(options.model_ms / 1e3)  # (inside the model call: not counted in the hook's time)
            return respond(self, *args, **kwargs)

        _replay_langchain.ScriptedChatModel._generate = slow  # type: ignore[method-assign]
    traces = load_traces(options.traces, limit=options.per_source)

    from toolctx_langchain import ToolContextMiddleware

    from tests.postgres_server import PostgresServer
    from tests.s3_server import S3Server

    HookClock.add = _recording_add  # type: ignore[method-assign]
    s3 = S3Server().start()
    postgres = PostgresServer().start()
    modes = ("local", "shared", "background")
    walls: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes}
    try:
        os.environ.update(s3.environment())
        store, index = f"s3://{s3.bucket()}/conversations", postgres.url
        count = o200k_counter()
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(options.rounds):
                for n, trace in enumerate(traces):
                    turn = (n + round_) % len(modes)
                    for mode in modes[turn:] + modes[:turn]:  # (each mode first as often as the others)
                        where = Path(tmp) / f"{mode}-{round_}"
                        shared = {"store": store, "index": index} if mode != "local" else {}
                        if mode == "background":
                            shared["background_uploads"] = True
                        conversations = toolctx.Conversations(where, **shared)
                        _replay_langchain.ToolContextMiddleware = (  # type: ignore[misc]
                            lambda conversations=conversations: ToolContextMiddleware(session=conversations)
                        )
                        WALLS.clear()
                        renamed = dataclasses.replace(trace, id=f"{trace.id}#{round_}")
                        _replay_langchain.replay_langchain(renamed, True, count)
                        conversations.close()
                        for kind, values in WALLS.items():
                            walls[mode].setdefault(kind, []).extend(values)
    finally:
        postgres.stop()
        s3.stop()
    report: dict[str, Any] = {
        "workload": f"{len(traces)} sessions ({options.per_source} per source) x {options.rounds} rounds, LangChain, "
        f"the model answering after {options.model_ms:g} ms",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    for kind in ("tool", "model"):
        local = quantiles(walls["local"][kind])
        report[kind] = {"local": local}
        for mode in modes[1:]:
            other = quantiles(walls[mode][kind])
            report[kind][mode] = {**other, "ratio_median": round(other["median_ms"] / local["median_ms"], 2),
                                  "extra_p99_ms": round(other["p99_ms"] - local["p99_ms"], 3)}  # fmt: skip
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

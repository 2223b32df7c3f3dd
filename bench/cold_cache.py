"""What storing a tool call costs with the CPU's caches warm, and after an agent loop has evicted them.

    python bench/cold_cache.py --traces ../shared/traces/dev.jsonl [--source S] [--runs 3] [--evict-mib 8]

Every adapter's tool hook stores the call (its arguments parsed, redacted, encoded
and hashed, its output kept) and decides how the output is shown
(``toolctx.compaction.persist_call`` and ``shown_output``; the arguments parsed as the
Agents SDK adapter parses the model's JSON). In a real agent loop the framework runs
megabytes of its own code and data between two tool calls, so the hook starts with
the core's private caches holding little of toolctx's code or data.

This replays the recorded calls of the trace file through that path, one session per
recorded session, in two ways: back to back (warm), and after writing a buffer of
``--evict-mib`` MiB (several times the core's L2 cache) before each call (evicted).
Thread CPU time per call; the median over calls of each run, then over runs. Pin
it to one core (``taskset -c 1``) for steady figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _replay_trace import Call, load_traces
from toolctx_openai_agents.tools import parse_arguments

import toolctx
from toolctx.compaction import CompactionSettings
from toolctx.compaction._persist import persist_call, shown_output
from toolctx.standins import output_text

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
MODES = ("warm", "evicted")


def _evict(buffer: bytearray) -> None:
    """Read each 64-byte cache line of ``buffer``: the core's caches end up holding it instead."""
    bytes(memoryview(buffer)[::64])


def run_once(sessions: Sequence[Sequence[Call]], evict: bytearray | None, directory: Path) -> list[float]:
    """Seconds of thread CPU per call, every recorded call stored as a persisted tool stores it."""
    settings = CompactionSettings()
    spent: list[float] = []
    for calls in sessions:
        with toolctx.session(directory) as session:
            for call in calls:
                arguments = json.dumps(call.args)  # what the model sent
                if evict is not None:
                    _evict(evict)
                started = time.thread_time()
                saved = persist_call(session, call.name, parse_arguments(arguments), call.output, call_id=call.id)
                shown_output(settings, session, saved, output_text(call.output))
                spent.append(time.thread_time() - started)
    return spent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--evict-mib", type=int, default=8, help="MiB written before each call when evicting")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.evict_mib < 1:
        parser.error(f"--runs and --evict-mib must be at least 1, got {args.runs} and {args.evict_mib}")
    sessions = [trace.calls for trace in load_traces(args.traces, args.source)]
    sessions = [calls for calls in sessions if calls]
    if not sessions:
        parser.error(f"no recorded tool calls in {args.traces} (sources: {args.source or 'all'})")
    buffer = bytearray(args.evict_mib << 20)
    medians: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="toolctx-cold-") as tmp:
        for _ in range(args.runs):
            for mode in MODES:
                spent = run_once(sessions, buffer if mode == "evicted" else None, Path(tmp))
                medians[mode].append(statistics.median(spent) * 1e6)
    calls = sum(map(len, sessions))
    print(f"{len(sessions)} sessions, {calls:,} calls, {args.runs} runs of each mode, {args.evict_mib} MiB evicted\n")
    print("| caches | median µs per call, each run | median |")
    print("|---|---|---:|")
    for mode in MODES:
        runs = " / ".join(f"{m:.1f}" for m in medians[mode])
        print(f"| {mode} | {runs} | {statistics.median(medians[mode]):.1f} |")
    ratio = statistics.median(medians["evicted"]) / statistics.median(medians["warm"])
    print(f"\nevicted / warm: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

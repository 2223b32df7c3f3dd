"""What the adapters' hooks cost with the CPU's caches warm, and after an agent loop has evicted them.

    python bench/cold_cache.py --traces ../shared/traces/dev.jsonl [--source S] [--runs 3] [--evict-mib 8]

In a real agent loop the framework runs megabytes of its own code and data between
two hook calls, so each hook starts with the core's private caches holding little
of toolctx's code or data. Two hooks are replayed outside the loop, one toolctx
session per recorded session, in two ways: back to back (warm), and after reading a
buffer of ``--evict-mib`` MiB (several times the core's L2 cache) before each call
(evicted). Thread CPU time; the median over runs of each run's figure.

- Tool hook: what every adapter's tool hook does per call. It stores the call (its
  arguments parsed as the Agents SDK adapter parses the model's JSON, redacted,
  encoded and hashed; its output kept) and decides how the output is shown
  (``toolctx.compaction.persist_call`` and ``shown_output``). Median per call.
- Model hook: the Agents SDK filter (``compact_tool_outputs()``) given, call after
  call, the very inputs the SDK handed it in a replay of the session through
  ``Runner.run`` (the outputs it reads stored first, outside the timing). Mean per
  model call, as the batches it makes now and then are part of its cost.

Pin it to one core (``taskset -c 1``) for steady figures.
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

from types import SimpleNamespace
from typing import Any, NamedTuple

from _replay_agents import replay_agents
from _replay_trace import Call, Trace, load_traces
from agents.run_config import ModelInputData
from toolctx_openai_agents import compact_tool_outputs
from toolctx_openai_agents.tools import parse_arguments

import toolctx
from toolctx.compaction import CompactionSettings, notes, output_text, persist_call, shown_output

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
MODES = ("warm", "evicted")
HOOKS = {"tool": "tool hook (median)", "model": "model hook, Agents SDK (mean)"}


def _evict(buffer: bytearray) -> None:
    """Read each 64-byte cache line of ``buffer``: the core's caches end up holding it instead."""
    bytes(memoryview(buffer)[::64])


def tool_hook(sessions: Sequence[Sequence[Call]], evict: bytearray | None, directory: Path) -> list[float]:
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


Inputs = list[tuple[list[Any], Any]]  # (items, instructions) of each model call


def filter_inputs(trace: Trace) -> Inputs:
    """What the Agents SDK hands its input filter on each model call of ``trace``, replayed with toolctx."""
    inputs: Inputs = []
    replay_agents(trace, True, len, inputs)
    return inputs


class ModelCall(NamedTuple):
    seconds: float  # thread CPU in the filter
    fifth: int  # which fifth of its session the call is in, 0-4
    edits: int  # stand-ins the call's batch made (0: no batch)
    shown: int  # estimated tokens of the messages sent after it


def model_hook(sessions: Sequence[tuple[Trace, Inputs]], evict: bytearray | None, directory: Path) -> list[ModelCall]:
    """Each model call of ``compact_tool_outputs()``, fed each session's recorded inputs in turn."""
    agent = SimpleNamespace(tools=[])
    made: list[ModelCall] = []
    for trace, inputs in sessions:
        calls = {call.id: call for call in trace.calls}
        with toolctx.session(directory) as session:
            compact = compact_tool_outputs()
            compactor = compact.compactor  # type: ignore[attr-defined]
            stored: set[str] = set()
            for n, (items, instructions) in enumerate(inputs):
                arguments = {i.get("call_id"): i.get("arguments") for i in items if _kind(i) == "function_call"}
                for item in items:  # what the tool hook stored before this call
                    call = calls.get(item.get("call_id")) if _kind(item) == "function_call_output" else None
                    if call is not None and call.id not in stored:
                        args = parse_arguments(str(arguments.get(call.id) or ""))
                        persist_call(session, call.name, args, call.output, call_id=call.id)
                        stored.add(call.id)
                data = SimpleNamespace(model_data=ModelInputData(input=items, instructions=instructions), agent=agent)
                decided = len(compactor.decided)
                if evict is not None:
                    _evict(evict)
                started = time.thread_time()
                compact(data)  # type: ignore[arg-type]
                seconds = time.thread_time() - started
                edits = len(compactor.decided) - decided
                made.append(ModelCall(seconds, n * 5 // len(inputs), edits, notes(session).shown_tokens))
    return made


def _kind(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--evict-mib", type=int, default=8, help="MiB read before each call when evicting")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.evict_mib < 1:
        parser.error(f"--runs and --evict-mib must be at least 1, got {args.runs} and {args.evict_mib}")
    traces = [trace for trace in load_traces(args.traces, args.source) if trace.calls]
    if not traces:
        parser.error(f"no recorded tool calls in {args.traces} (sources: {args.source or 'all'})")
    recorded = [(trace, filter_inputs(trace)) for trace in traces]
    buffer = bytearray(args.evict_mib << 20)
    figures: dict[tuple[str, str], list[float]] = {(hook, mode): [] for hook in HOOKS for mode in MODES}
    by_fifth: list[list[ModelCall]] = []
    with tempfile.TemporaryDirectory(prefix="toolctx-cold-") as tmp:
        for _ in range(args.runs):
            for mode in MODES:
                evict = buffer if mode == "evicted" else None
                spent = tool_hook([trace.calls for trace in traces], evict, Path(tmp))
                figures["tool", mode].append(statistics.median(spent) * 1e6)
                made = model_hook(recorded, evict, Path(tmp))
                figures["model", mode].append(statistics.mean(c.seconds for c in made) * 1e6)
                if mode == "warm":
                    by_fifth.append(made)
    calls = sum(len(trace.calls) for trace in traces)
    model_calls = sum(len(inputs) for _, inputs in recorded)
    print(
        f"{len(traces)} sessions, {calls:,} tool calls, {model_calls:,} model calls, "
        f"{args.runs} runs of each mode, {args.evict_mib} MiB evicted\n"
    )
    print("| hook | caches | µs per call, each run | median |")
    print("|---|---|---|---:|")
    for (hook, mode), runs in figures.items():
        each = " / ".join(f"{m:.1f}" for m in runs)
        print(f"| {HOOKS[hook]} | {mode} | {each} | {statistics.median(runs):.1f} |")
    print()
    for hook, name in HOOKS.items():
        ratio = statistics.median(figures[hook, "evicted"]) / statistics.median(figures[hook, "warm"])
        print(f"{name}: evicted / warm {ratio:.1f}x")
    print("\nThe model hook over the fifths of each session (warm; medians over runs; the messages'")
    print("estimated tokens after a call that made a batch, median):\n")
    print(
        "| fifth | median µs per model call | stand-ins made per call | calls making a batch | tokens left by a batch |"
    )
    print("|---|---:|---:|---:|---:|")
    for fifth in range(5):
        parts = [[c for c in made if c.fifth == fifth] for made in by_fifth]
        if not parts[0]:  # (sessions too short to have a call in every fifth)
            continue
        micro = statistics.median(statistics.median(c.seconds for c in part) * 1e6 for part in parts)
        edits = statistics.median(sum(c.edits for c in part) / len(part) for part in parts)
        batches = statistics.median(sum(c.edits > 0 for c in part) / len(part) for part in parts)
        left = [c.shown for c in parts[0] if c.edits]  # (the same in every run)
        tokens = statistics.median(left) if left else 0
        print(f"| {fifth + 1} | {micro:.1f} | {edits:.2f} | {batches:.0%} | {tokens:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What one compaction batch costs in the real loop: its parts, what is fixed per batch, and how often one comes.

    python bench/batch_parts.py --traces ../shared/traces/dev.jsonl [--longest 13] [--min-gain 1000 3000] [--runs 3]

Replays the ``--longest`` coding sessions through the Agents SDK's ``Runner.run``
exactly as ``bench/replay.py`` does with toolctx (``--source``: the coding ones by
default), once per ``--min-gain`` value
and run (alternating, each in a process of its own), and times every model hook
call's ``Compactor.view`` in thread CPU. For the calls that made a batch it splits
the time (each part without the others it runs): taking in the new items,
storing the calls the tool hooks queued (the queue's drain, wherever it runs),
the rest of the edits of old calls, the edits of old assistant text, and applying
the edits; and fits ``time = fixed + per edit x edits`` over
the batches (least squares). Also: the batches per tool call, and both hooks'
CPU per tool call (median over sessions, as ``bench/replay.py`` reports it).

The timers around the parts add a little to each batch. Pin it to one core
(``taskset -c 1``) for steady figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
DEFAULT_SOURCE = "mini-swe-agent-swebench"
PARTS = ("intake", "drain", "edits", "texts", "apply")


def _timed(owner: Any, name: str, part: str, spent: dict[str, int], running: list[list[int]]) -> None:
    """Add the thread CPU of ``owner.name`` to ``spent[part]``, less that of the timed parts it runs (``running``
    is the stack of parts under way); a part that re-enters itself (the drain) counts once."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        if running and running[-1][0] == id(timed):  # (re-entered: already timed)
            return original(*args, **kwargs)
        frame = [id(timed), time.thread_time_ns(), 0]  # (which part, its start, its timed parts' time)
        running.append(frame)
        try:
            return original(*args, **kwargs)
        finally:
            running.pop()
            elapsed = time.thread_time_ns() - frame[1]
            spent[part] += elapsed - frame[2]
            if running:
                running[-1][2] += elapsed

    setattr(owner, name, timed)


def one_run(traces_path: Path, source: str, longest: int, min_gain: int) -> dict[str, Any]:
    """The figures of one replay of the longest sessions with ``min_gain`` (in a child process)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import _replay_agents
    from _replay_trace import load_traces
    from toolctx_openai_agents import compact_tool_outputs

    from toolctx.compaction import Compactor
    from toolctx.sessions._saving import SavePath

    def with_min_gain() -> Any:
        return compact_tool_outputs(min_gain=min_gain)

    _replay_agents.compact_tool_outputs = with_min_gain  # type: ignore[attr-defined,assignment]
    spent: dict[str, int] = defaultdict(int)
    running: list[list[int]] = []
    _timed(Compactor, "_add", "intake", spent, running)
    _timed(SavePath, "store_queued", "drain", spent, running)
    _timed(Compactor, "_edit", "edits", spent, running)  # (old calls: old assistant text is timed apart)
    _timed(Compactor, "_text_edit", "texts", spent, running)
    _timed(Compactor, "_apply", "apply", spent, running)
    batches: list[dict[str, float]] = []
    others: list[float] = []
    view = Compactor._view

    def timed_view(self: Any, items: Any, key: Any, task: Any, session: Any, now: bool = False) -> Any:
        spent.clear()
        started = time.thread_time_ns()
        shown, edits = view(self, items, key, task, session, now)
        total = (time.thread_time_ns() - started) / 1000
        if not edits:
            others.append(total)
            return shown, edits
        batches.append({"total": total, "count": len(edits), **{part: spent[part] / 1000 for part in PARTS}})
        return shown, edits

    Compactor._view = timed_view  # type: ignore[method-assign]
    traces = [trace for trace in load_traces(traces_path, [source]) if trace.calls]
    traces = sorted(traces, key=lambda trace: -len(trace.calls))[:longest]
    if not traces:
        raise SystemExit(f"no session of source {source!r} with tool calls in {traces_path}")
    per_call, tool_calls = [], 0
    for trace in traces:
        figures = _replay_agents.replay_agents(trace, True, len)
        per_call.append(figures.hook_cpu_per_tool_call * 1e6)
        tool_calls += figures.tool_calls
    counts, totals = [b["count"] for b in batches], [b["total"] for b in batches]
    fit = statistics.linear_regression(counts, totals) if len(set(counts)) > 1 else None  # (needs two sizes)
    return {
        "sessions": len(traces),
        "tool_calls": tool_calls,
        "batches": len(batches),
        "edits_per_batch": statistics.mean(counts) if batches else 0.0,
        "hooks_per_tool_call": statistics.median(per_call),
        "without_batch": statistics.median(others) if others else None,
        "batch": statistics.median(totals) if batches else None,
        "parts": {part: statistics.mean(b[part] for b in batches) for part in PARTS} if batches else None,
        "fixed": None if fit is None else fit.intercept,
        "per_edit": None if fit is None else fit.slope,
    }


def _median(values: Sequence[float | None]) -> str:
    """The median of the runs' figures; a dash if a run had none (no batch, or batches of a single size)."""
    known = [value for value in values if value is not None]
    return f"{statistics.median(known):.0f}" if known and len(known) == len(values) else "–"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--source", default=DEFAULT_SOURCE, help=f"the sessions' source (default: {DEFAULT_SOURCE})")
    parser.add_argument("--longest", type=int, default=13, help="the N sessions with the most tool calls")
    parser.add_argument("--min-gain", type=int, nargs="+", default=[1000], help="min_gain values, alternated")
    parser.add_argument("--runs", type=int, default=3, help="runs of every value, in turn")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.longest < 1 or args.runs < 1 or any(gain < 0 for gain in args.min_gain):
        parser.error("--longest and --runs must be at least 1 and --min-gain values at least 0")
    if args.child:
        print(json.dumps(one_run(args.traces, args.source, args.longest, args.min_gain[0])))
        return 0
    if not args.traces.is_file():
        parser.error(f"no trace file at {args.traces}")
    runs: dict[int, list[dict[str, Any]]] = {gain: [] for gain in args.min_gain}
    for _ in range(args.runs):
        for gain in args.min_gain:
            command = [sys.executable, __file__, "--traces", str(args.traces), "--source", args.source]
            command += ["--longest", str(args.longest), "--min-gain", str(gain), "--child"]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode:
                sys.stderr.write(done.stderr)
                return done.returncode
            runs[gain].append(json.loads(done.stdout.splitlines()[-1]))
    first = runs[args.min_gain[0]][0]
    print(f"the {first['sessions']} longest {args.source} sessions ({first['tool_calls']:,} tool calls), Agents SDK,")
    print(f"{args.runs} runs of each min_gain, alternating (µs of thread CPU; medians over runs; the batches")
    print("and edits are the first run's: the replay makes the same ones every time)\n")
    print(
        "| `min_gain` | batches per 100 tool calls | edits per batch | both hooks per tool call, each run | "
        "a model call without a batch | with one | fixed per batch | per edit |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for gain, figures in runs.items():
        cells = " | ".join(
            _median([f[key] for f in figures]) for key in ("without_batch", "batch", "fixed", "per_edit")
        )
        each = " / ".join(f"{f['hooks_per_tool_call']:.0f}" for f in figures)
        rate = 100 * figures[0]["batches"] / figures[0]["tool_calls"]
        print(f"| {gain:,} | {rate:.1f} | {figures[0]['edits_per_batch']:.1f} | {each} | {cells} |")
    print("\nA batch's parts (mean µs per batch, medians over runs):\n")
    print("| `min_gain` | " + " | ".join(PARTS) + " |")
    print("|---:|" + "---:|" * len(PARTS))
    for gain, figures in runs.items():
        cells = " | ".join(_median([f["parts"][part] if f["parts"] else None for f in figures]) for part in PARTS)
        print(f"| {gain:,} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

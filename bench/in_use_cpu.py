"""What keeping what is in use costs the adapters' hooks: the same sessions with and without it, interleaved.

    python bench/in_use_cpu.py [--traces ../shared/traces/dev.jsonl] [--sessions 6] [--rounds 3]
                               [--framework langchain|agents]

Workload: the first ``--sessions`` recorded coding sessions of 50-199 tool calls,
replayed through the framework's real loop (``bench/replay.py``'s drivers) with the
adapter at its defaults ("with") and with ``in_use_lines=0, record_chars=0`` (the
policy before it: "without"), alternately in one process, ``--rounds`` times each.
Figures: thread CPU inside the adapter's model and tool hooks (the model and the tools
excluded), in µs per tool call, summed over the sessions of a round; the median of
the rounds and the ratio with / without of those medians. In one process and
interleaved, both sides see the same load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _replay_measure import TokenCounter
from _replay_trace import load_traces
from replay import DEFAULT_TRACES, replayer

WITHOUT = {"in_use_lines": 0, "record_chars": 0}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--framework", choices=["langchain", "agents"], default="langchain")
    args = parser.parse_args(argv)
    traces = [t for t in load_traces(args.traces, ["mini-swe-agent-swebench"]) if 50 <= len(t.calls) < 200][
        : args.sessions
    ]
    if not traces:
        raise SystemExit(f"no coding sessions of 50-199 tool calls in {args.traces}")
    run = replayer(args.framework)
    count: TokenCounter = lambda text: len(text) // 4  # noqa: E731 (tokens are not what is measured here)
    calls = sum(len(t.calls) for t in traces)
    figures: dict[str, dict[str, list[float]]] = {side: {"model": [], "tool": []} for side in ("with", "without")}
    for _ in range(args.rounds):
        for side, options in (("with", {}), ("without", WITHOUT)):
            done = [run(t, True, count, options=options) for t in traces]
            figures[side]["model"].append(sum(f.hook_cpu_model for f in done) / calls * 1e6)
            figures[side]["tool"].append(sum(f.hook_cpu_tool for f in done) / calls * 1e6)
    print(f"{len(traces)} coding sessions, {calls:,} tool calls, {args.framework}, {args.rounds} rounds")
    print("| hook | without, µs per tool call (rounds) | with | with / without |")
    print("|---|---|---|---:|")
    for hook in ("model", "tool"):
        without, with_ = figures["without"][hook], figures["with"][hook]
        ratio = statistics.median(with_) / statistics.median(without)
        print(
            f"| {hook} | {statistics.median(without):,.0f} ({', '.join(f'{x:,.0f}' for x in without)}) "
            f"| {statistics.median(with_):,.0f} ({', '.join(f'{x:,.0f}' for x in with_)}) | {ratio:.2f} |"
        )


if __name__ == "__main__":
    main()

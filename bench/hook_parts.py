"""Where the hooks' time goes in the real loop: the Agents SDK adapter with one part taken out at a time.

    python bench/hook_parts.py --traces ../shared/traces/dev.jsonl [--source S] [--limit 25] [--runs 3]

Each variant replays the same recorded sessions through ``Runner.run`` exactly as
``bench/replay.py`` does with toolctx (``persist_tools`` + ``read_context`` +
``compact_tool_outputs()``), in a process of its own, and reports the thread CPU
inside the tool hook and the model hook (the filter) per tool call (medians over
sessions). A part is taken out by replacing one toolctx function for that process
only; the figures say what the part costs inside the loop, where the framework's
own work between two calls leaves the caches cold (see ``bench/cold_cache.py``),
which a timing of the part on its own would not show. The variants change what
the model is shown (the scan, the batches): never do this outside a benchmark.
Variants, run in turn within each run:

- ``full``: the hooks as they are;
- ``no-scan``: the redaction prefilter finds nothing (the secret scan's cost);
- ``no-stand-in``: the tool hook never decides on a stand-in (``shown_output``);
- ``no-store``: the tool hook neither stores nor queues the call (it still parses the arguments);
- ``floor``: the tool hook only calls the tool (the wrapper and the timing);
- ``no-text``: old assistant text is never a candidate (``text_chars`` past any text);
- ``no-batch``: the filter makes no batch (it still takes in every new item);
- ``no-policy``: the filter hands the input on as it came (its own wrapper only).

Pin it to one core (``taskset -c 1``) for steady figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
DEFAULT_SOURCE = "mini-swe-agent-swebench"
VARIANTS = {
    "full": "the hooks as they are",
    "no-scan": "without the secret scan",
    "no-stand-in": "tool hook: without the stand-in decision",
    "no-store": "tool hook: without storing the call",
    "floor": "tool hook: calling the tool only",
    "no-text": "filter: without assistant text",
    "no-batch": "filter: without batches",
    "no-policy": "filter: handing the input on",
}


def take_out(variant: str) -> None:
    """Replace the part ``variant`` names, in this process."""
    from toolctx_openai_agents import tools

    from toolctx.compaction import (
        CompactionSettings,
        Compactor,
        SavedCall,
        _tooltime,  # (the one tool-time rule: its steps are taken out where it calls them)
    )
    from toolctx.redaction._prefilter import Prefilter

    if variant == "no-scan":
        Prefilter.found = lambda self, data: frozenset()  # type: ignore[method-assign]
    elif variant == "no-stand-in":
        _tooltime.shown_output = lambda *args: None  # type: ignore[assignment]
    elif variant == "no-store":
        _tooltime.persist_call = lambda session, name, *args, **kwargs: SavedCall(name, False, False)  # type: ignore[assignment]
        _tooltime.queue_call = lambda *args, **kwargs: False  # type: ignore[assignment]
    elif variant == "floor":

        async def invoke_only(self: Any, ctx: Any, arguments: str) -> Any:
            return await self.invoke(ctx, arguments)

        tools._Persisted.__call__ = invoke_only  # type: ignore[method-assign]
    elif variant == "no-text":
        made = CompactionSettings.of  # (every host resolves its settings here)

        def without_text(settings: Any = None, /, **options: Any) -> CompactionSettings:
            return made(settings, **options) if settings is not None else made(**{"text_chars": 1 << 62, **options})

        CompactionSettings.of = staticmethod(without_text)  # type: ignore[method-assign,assignment]
    elif variant == "no-batch":
        Compactor._compact = lambda self, *args: []  # type: ignore[method-assign]
    elif variant == "no-policy":
        Compactor.view = lambda self, items, *args, **kwargs: (list(items), [])  # type: ignore[method-assign]
    elif variant != "full":
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")


def one_run(traces_path: Path, source: str, limit: int, variant: str) -> tuple[float, float]:
    """The medians over sessions of the tool hook's and the model hook's µs per tool call (in a child process)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _replay_agents import replay_agents
    from _replay_trace import load_traces

    take_out(variant)
    traces = [trace for trace in load_traces(traces_path, [source]) if trace.calls][:limit]
    tool, model = [], []
    for trace in traces:
        figures = replay_agents(trace, True, len)
        tool.append(figures.hook_cpu_tool / figures.tool_calls * 1e6)
        model.append(figures.hook_cpu_model / figures.tool_calls * 1e6)
    return statistics.median(tool), statistics.median(model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--source", default=DEFAULT_SOURCE, help=f"the sessions' source (default: {DEFAULT_SOURCE})")
    parser.add_argument("--limit", type=int, default=25, help="sessions replayed per run (the first ones)")
    parser.add_argument("--runs", type=int, default=3, help="runs of every variant, in turn")
    parser.add_argument("--child", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.limit < 1 or args.runs < 1:
        parser.error(f"--limit and --runs must be at least 1, got {args.limit} and {args.runs}")
    if args.child:
        print(json.dumps(one_run(args.traces, args.source, args.limit, args.child)))
        return 0
    if not args.traces.is_file():
        parser.error(f"no trace file at {args.traces}")
    figures: dict[str, list[tuple[float, float]]] = {variant: [] for variant in VARIANTS}
    for _ in range(args.runs):
        for variant in VARIANTS:
            command = [sys.executable, __file__, "--traces", str(args.traces), "--source", args.source]
            command += ["--limit", str(args.limit), "--child", variant]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            figures[variant].append(tuple(json.loads(done.stdout.splitlines()[-1])))
    print(f"{args.source}: the first {args.limit} sessions, {args.runs} runs of each variant")
    print("(µs per tool call, medians over sessions; each run's tool hook + model hook, then medians)\n")
    print("| variant | each run, tool + model hook | tool hook | model hook | both | less than the full hooks |")
    print("|---|---|---:|---:|---:|---:|")
    full = statistics.median(t + m for t, m in figures["full"])
    for variant, runs in figures.items():
        each = " / ".join(f"{t:.1f} + {m:.1f}" for t, m in runs)
        tool, model = statistics.median(t for t, _ in runs), statistics.median(m for _, m in runs)
        both = statistics.median(t + m for t, m in runs)
        print(f"| {VARIANTS[variant]} | {each} | {tool:.1f} | {model:.1f} | {both:.1f} | {full - both:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

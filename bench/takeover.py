"""A run taken over by another worker mid-way: what the model is shown, with and without shared decisions.

    python bench/takeover.py [--traces ../shared/traces/dev.jsonl] [--sessions 6] [--share 0.3] [--seed 1]

The workload: the first ``--sessions`` coding sessions of the trace file (one turn each,
the long runs where compaction does its work), replayed through the Agents SDK's real
loop (``bench/replay.py``'s scripted model). At a random ``--share`` of the model calls a
new ``compact_tool_outputs()`` filter takes over, as a worker that never served the run
would (a resumed run, a run handed to another process). Each session runs three ways:

- **one worker**: one filter throughout (the reference);
- **taken over, local session**: the filter replaced, the session in a local folder
  (what a new worker knew before decisions were kept with the session);
- **taken over, shared session**: the filter replaced, the session in a shared store
  (``memory:///``, an object store kept in this process), where the decisions travel.

Reported per session: model calls, how many show the model exactly what the reference
showed (handles numbered in order of appearance, since they are random), the tokens, and
the cache-weighted tokens (``bench/replay.py``'s: the leading part of a call identical to
the previous call's counts a tenth), where a prompt that changes under the model costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _replay_agents as replay
from _replay_measure import Figures, HookClock, ModelInput, o200k_counter
from _replay_trace import Trace, load_traces
from toolctx_openai_agents import compact_tool_outputs

import toolctx

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
HANDLE = re.compile(r"ctx:[0-9a-z]{7,64}")


class TakenOver(replay._Replay):
    """The replay, with a new filter (a worker that never served the run) at a random share of model calls."""

    share = 0.0
    seed = 1

    def input_filter(self) -> Any:
        pick = random.Random(self.seed)
        current = {"filter": compact_tool_outputs(**self.options)}

        def run(data: Any) -> Any:
            if pick.random() < self.share:
                current["filter"] = compact_tool_outputs(**self.options)
            return current["filter"](data)

        return run


def served(trace: Trace, share: float, seed: int, store: str | None) -> tuple[list[ModelInput], Figures]:
    taken = TakenOver(trace, HookClock(), True)
    taken.share, taken.seed = share, seed
    figures = Figures(trace.id, trace.source, "agents", True, tool_calls=len(trace.calls))
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp, store=store, keep=True) as session:
        session.conversation = trace.id
        asyncio.run(replay._run(taken, figures, o200k_counter()))
    return taken.inputs, figures


def numbered(inputs: list[ModelInput]) -> list[Any]:
    order: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return order.setdefault(match.group(0), f"h{len(order)}")

    return [tuple((u.role, tuple((k, HANDLE.sub(number, t)) for k, t in u.parts)) for u in i.units) for i in inputs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    traces = [t for t in load_traces(options.traces) if len(t.turns) == 1][: options.sessions]
    rows = []
    for trace in traces:
        one, reference = served(trace, 0.0, options.seed, None)
        row: dict[str, Any] = {"session": trace.id, "model_calls": len(one), "tokens_one_worker": reference.tokens,
                               "cache_weighted_one_worker": round(reference.cache_weighted)}  # fmt: skip
        for label, store in (("local", None), ("shared", "memory:///")):
            inputs, figures = served(trace, options.share, options.seed, store)
            row[f"identical_{label}"] = sum(a == b for a, b in zip(numbered(one), numbered(inputs), strict=False))
            row[f"tokens_{label}"] = figures.tokens
            row[f"cache_weighted_{label}"] = round(figures.cache_weighted)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Secret redaction on real agent sessions: the cost per tool call.

    python bench/redaction.py [--traces ../shared/traces/dev.jsonl] [--rounds 5]

Replays the argument and output of every tool call in the trace file (real,
public coding and customer-service sessions; see that folder's README) through

- ``toolctx``: ``Redactor.redact_call`` as a session runs it: one scan that finds
  which fragments occur, then only the rules those fragments belong to;
- ``every rule on a hit``: the reference, one scan that answers only "any
  fragment?", then the whole value parsed, walked with every rule and compared.

Both are timed in the same run, round by round; figures are medians over rounds
of the mean µs per call, per session source.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

import orjson

from toolctx.redaction import default_redactor

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"


def calls(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Canonical argument JSON and output JSON of every call, by session source."""
    found: dict[str, list[tuple[bytes, bytes]]] = defaultdict(list)
    with path.open("rb") as lines:
        for line in lines:
            session = orjson.loads(line)
            for turn in session["turns"]:
                for step in turn["steps"]:
                    for call in step["calls"]:
                        args = orjson.dumps(call["args"], option=orjson.OPT_SORT_KEYS)
                        found[session["source"]].append((args, orjson.dumps(call["output"])))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    redactor = default_redactor()
    prefilter = redactor._prefilter

    def every_rule(args: bytes, data: bytes) -> None:
        for part in (args, data):
            if prefilter(part):
                value = orjson.loads(part)
                if redactor.redact_value(value) != value:
                    orjson.dumps(redactor.redact_value(value))

    contenders = {"toolctx": redactor.redact_call, "every rule on a hit": every_rule}
    print(f"engine: {prefilter.engine}")
    print("| source | calls | outputs with a fragment | toolctx µs/call | every rule on a hit µs/call | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for source, pairs in sorted(calls(options.traces).items()):
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(options.rounds):
            for name, run in contenders.items():
                start = time.perf_counter()
                for args, data in pairs:
                    run(args, data)
                times[name].append((time.perf_counter() - start) / len(pairs) * 1e6)
        hits = sum(prefilter(args + b"\n" + data) for args, data in pairs)
        fast, slow = (statistics.median(times[name]) for name in contenders)
        share = f"{hits:,} ({hits / len(pairs):.0%})"
        print(f"| {source} | {len(pairs):,} | {share} | {fast:.1f} | {slow:.1f} | {slow / fast:.1f}x |")


if __name__ == "__main__":
    main()

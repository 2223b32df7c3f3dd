"""Secret redaction: the cost per tool call on real sessions, and throughput on large outputs.

    python bench/redaction.py [--traces ../shared/traces/dev.jsonl] [--rounds 5]
                              [--large-mb 100] [--large-rounds 5] [--skip-large]

**Per call.** Replays the argument and output of every tool call in the trace file
(real, public coding and customer-service sessions; see that folder's README) through

- ``toolctx``: ``Redactor.redact_call``, the work a session does for each call
  (``redact_call_with_id``, here without an id): one scan that finds which
  fragments occur, then only the rules those fragments belong to;
- ``every rule on a hit``: the reference, one scan that answers only "any
  fragment?", then the whole value parsed, walked with every rule and compared.

Both are timed in the same run, round by round; figures are medians over rounds
of the mean µs per call, per session source, for each scan engine (Hyperscan when
installed, and the ``re`` engine of a core install).

**Large outputs.** ``redact_call`` on one result of ``--large-mb`` MB (its JSON as a
session encodes it), for each engine: the text of the trace outputs repeated (real
code and logs, with the assignments and keys a coding agent sees), prose that says
``token`` on every line and log lines that say ``token``, ``bearer`` and ``https://``
without holding a secret, random bytes, and the bytes of the trace text.
Figures are the median seconds over ``--large-rounds`` runs, after one run to warm up,
and MB/s of the result's size, by the clock and by the process's CPU time (steadier on
a shared machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from toolctx._serialize import encode
from toolctx.redaction import Redactor, default_redactor

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
PROSE = "The tokenizer splits text into tokens; each token has an id and a secret-free embedding.\n"
LOG = "2024-05-01 INFO token refreshed for user 42 via bearer auth; see https://example.com/docs\n"


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


def redactors() -> dict[str, Redactor]:
    """The default redactor, and the same rules on the ``re`` engine a core install uses."""
    engines = {default_redactor()._prefilter.engine: default_redactor()}
    hyperscan = sys.modules.get("hyperscan")
    sys.modules["hyperscan"] = None  # type: ignore[assignment]
    try:
        engines["re"] = Redactor()
    finally:
        if hyperscan is None:
            del sys.modules["hyperscan"]
        else:
            sys.modules["hyperscan"] = hyperscan
    return engines


def per_call(traces: Path, rounds: int, engines: dict[str, Redactor]) -> None:
    print(
        "| engine | source | calls | outputs with a fragment | toolctx µs/call | every rule on a hit µs/call |", end=""
    )
    print(" ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for source, pairs in sorted(calls(traces).items()):
        for engine, redactor in engines.items():
            prefilter = redactor._prefilter

            def every_rule(args: bytes, data: bytes, redactor: Redactor = redactor) -> None:
                for part in (args, data):
                    if redactor._prefilter(part):
                        value = orjson.loads(part)
                        if redactor.redact_value(value) != value:
                            orjson.dumps(redactor.redact_value(value))

            contenders: dict[str, Callable[[bytes, bytes], Any]] = {
                "toolctx": redactor.redact_call,
                "every rule on a hit": every_rule,
            }
            times: dict[str, list[float]] = {name: [] for name in contenders}
            for _ in range(rounds):
                for name, run in contenders.items():
                    start = time.perf_counter()
                    for args, data in pairs:
                        run(args, data)
                    times[name].append((time.perf_counter() - start) / len(pairs) * 1e6)
            hits = sum(prefilter(args + b"\n" + data) for args, data in pairs)
            fast, slow = (statistics.median(times[name]) for name in contenders)
            share = f"{hits:,} ({hits / len(pairs):.0%})"
            print(f"| {engine} | {source} | {len(pairs):,} | {share} | {fast:.1f} | {slow:.1f} | {slow / fast:.1f}x |")


def large_inputs(traces: Path, size: int) -> dict[str, Any]:
    outputs = [data for pairs in calls(traces).values() for _, data in pairs]
    text = "\n".join(orjson.loads(data) for data in outputs)
    text = (text * (size // len(text) + 1))[:size]
    return {
        "trace text": text,
        "prose saying token": (PROSE * (size // len(PROSE) + 1))[:size],
        "log lines saying token, bearer, https://": (LOG * (size // len(LOG) + 1))[:size],
        "random bytes": os.urandom(size),
        "bytes of trace text": text.encode()[:size],
    }


def large(traces: Path, megabytes: int, rounds: int, engines: dict[str, Redactor]) -> None:
    print(f"\n| engine | {megabytes} MB result | JSON MB | changed | median s | MB/s | median CPU s | MB/s of CPU |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    inputs = large_inputs(traces, megabytes * 1_000_000)
    for engine, redactor in engines.items():
        for name, value in inputs.items():
            data = encode(value)[0]
            times, cpu = [], []
            for _ in range(rounds + 1):  # the first run warms up (Hyperscan's placing database)
                start, start_cpu = time.perf_counter(), time.process_time()
                stored = redactor.redact_call(b'{"path":"x"}', data)[1]
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            seconds, cpu_seconds = statistics.median(times[1:]), statistics.median(cpu[1:])
            size = len(value) / 1e6
            changed = "yes" if stored is not data else "no"
            print(
                f"| {engine} | {name} | {len(data) / 1e6:.0f} | {changed} | {seconds:.2f} | {size / seconds:.0f} "
                f"| {cpu_seconds:.2f} | {size / cpu_seconds:.0f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--large-mb", type=int, default=100)
    parser.add_argument("--large-rounds", type=int, default=5)
    parser.add_argument("--skip-large", action="store_true")
    options = parser.parse_args()
    engines = redactors()
    per_call(options.traces, options.rounds, engines)
    if not options.skip_large:
        large(options.traces, options.large_mb, options.large_rounds, engines)


if __name__ == "__main__":
    main()

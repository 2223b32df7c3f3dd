"""Resident memory of a long session, against holding the results in memory.

    python bench/memory.py

Each scenario runs in a fresh interpreter and reports how much its resident set
grew (VmRSS, after a garbage collection) over the calls:

- toolctx, 2,000 calls returning 256 KiB each (the disk path): should stay flat;
- reference, the same 2,000 results kept as orjson bytes, as an in-memory cache would;
- toolctx, 100,000 calls returning ~200 B each (the in-memory path, with the default
  4 MiB budget): what each remembered call costs once the budget is full.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SCENARIO = r"""
import gc, json, sys, tempfile
sys.path.insert(0, sys.argv[1])
from payloads import search_results
import orjson, toolctx

def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

kind, calls, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
payload = search_results(size)

def search(query, page=1):
    return payload

with tempfile.TemporaryDirectory(dir=sys.argv[5] or None) as tmp:
    if kind == "reference":
        kept = [orjson.dumps(search(payload, page=-1))]
        gc.collect(); before = rss_mb()
        for i in range(calls):
            kept.append(orjson.dumps(search("q", page=i)))
    else:
        tool = toolctx.persist_context(search)
        with toolctx.session(tmp) as s:
            tool("q", page=-1)
            gc.collect(); before = rss_mb()
            for i in range(calls):
                tool("q", page=i)
            assert len(s) == calls + 1
            gc.collect(); after = rss_mb()
    if kind == "reference":
        gc.collect(); after = rss_mb()
print(json.dumps({"before": before, "after": after, "growth": after - before}))
"""

SCENARIOS = [
    ("toolctx, 2,000 x 256 KiB (disk path)", "toolctx", 2_000, 256 * 1024),
    ("in-memory reference, 2,000 x 256 KiB kept as orjson bytes", "reference", 2_000, 256 * 1024),
    ("toolctx, 100,000 x ~200 B (memory path, 4 MiB budget)", "toolctx", 100_000, 200),
]


def main() -> None:
    here = str(Path(__file__).parent)
    base = "/dev/shm" if Path("/dev/shm").is_dir() else ""
    print("| scenario | RSS before (MB) | RSS after (MB) | growth (MB) | per call |")
    print("|---|---:|---:|---:|---:|")
    for label, kind, calls, size in SCENARIOS:
        with tempfile.TemporaryDirectory():
            out = subprocess.run(
                [sys.executable, "-c", SCENARIO, here, kind, str(calls), str(size), base],
                capture_output=True,
                text=True,
                check=True,
            )
        figures = json.loads(out.stdout)
        per_call = figures["growth"] * 1024 * 1024 / calls
        print(
            f"| {label} | {figures['before']:,.1f} | {figures['after']:,.1f} | {figures['growth']:,.1f} | "
            f"{per_call:,.0f} B |",
            flush=True,
        )


if __name__ == "__main__":
    main()

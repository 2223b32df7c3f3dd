"""Reopening a long conversation: the time and memory a new process spends to serve its next turn.

    python bench/reopen.py [--calls 20000] [--runs 7] [--dir DIR]
    python bench/reopen.py write DIR [--calls 20000]      # only write the conversation
    python bench/reopen.py open DIR [--warm]               # only reopen it once, in this process

The workload: one conversation of ``--calls`` tool calls stored through
:class:`toolctx.Conversations` (its defaults: every output on disk, the session kept),
outputs of 200 B to 8 KB of text, in turns of 20 calls. Then, ``--runs`` times, a fresh
Python process imports toolctx, reopens the conversation (``Conversations.get``, the
first thing a worker does for a turn) and reads one call back by its handle, as the
turn's first ``read_context`` would. Reported: the median, min and max of the time
``get`` takes, of the CPU time reopening and reading the call back take, and of the
process's peak RSS growth over a bare ``import toolctx`` (until the call is read back).
``--warm``: the process has built the default redactor first, as a worker that already
served a turn has (it is built once a process, the first time a session needs it).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import toolctx
import toolctx.redaction

CONVERSATION = "chat-20000"
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def write(directory: Path, calls: int) -> None:
    conversations = toolctx.Conversations(directory)
    for turn in range(0, calls, 20):
        with conversations.open(CONVERSATION) as s:
            for i in range(turn, min(turn + 20, calls)):
                body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(30 + (i * 7919) % 1200))
                args = {"pattern": f"p{i}", "path": f"src/m{i % 97}.py"}
                pointer = s.save_context("grep", args, body, call_id=f"call_{i}")
    conversations.close()
    (directory / "last-handle").write_text(pointer.id)


def reopen(directory: Path, warm: bool = False) -> dict[str, float]:
    if warm:
        toolctx.redaction.default_redactor()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time()
    start = time.perf_counter()
    conversations = toolctx.Conversations(directory)
    s = conversations.get(CONVERSATION)
    opened = time.perf_counter() - start
    [last] = s.load_contexts([(directory / "last-handle").read_text()])
    assert isinstance(last.result, str)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time() - cpu
    calls = len(s)
    conversations.close()
    return {"seconds": opened, "cpu_seconds": cpu, "rss_growth_mb": (peak - before) / 1024, "calls": calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", choices=("all", "write", "open"), default="all")
    parser.add_argument("dir", nargs="?", type=Path)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warm", action="store_true", help="build the default redactor before reopening")
    options = parser.parse_args()
    if options.mode == "write":
        write(options.dir, options.calls)
        return
    if options.mode == "open":
        print(json.dumps(reopen(options.dir, options.warm)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        directory = options.dir or Path(scratch)
        if not (directory / "written").exists():
            start = time.perf_counter()
            write(directory, options.calls)
            (directory / "written").touch()
            print(f"wrote {options.calls:,} calls in {time.perf_counter() - start:.1f} s")
        runs = []
        for _ in range(options.runs):
            out = subprocess.run(
                [sys.executable, __file__, "open", str(directory), *(["--warm"] if options.warm else [])],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs.append(json.loads(out))
        for key in ("seconds", "cpu_seconds", "rss_growth_mb"):
            values = [r[key] for r in runs]
            print(
                f"reopen {key}: median {statistics.median(values):.3f}, "
                f"min {min(values):.3f}, max {max(values):.3f} ({len(runs)} runs, {runs[0]['calls']:,} calls)"
            )


if __name__ == "__main__":
    main()

"""Per-call cost of persisting tool results: toolctx against what users would use instead.

    python bench/core.py                       # tmpfs (/dev/shm) and the normal disk
    python bench/core.py --rounds 7 --json out.json
    python bench/core.py --peak-mb 200 --tmpfs '' --disk ''   # only the peak memory of a 200 MB string

For results of about 200 B, 4 KiB, 64 KiB and 1 MiB (search hits with non-ASCII
text) it times, in one run and interleaved round by round:

- ``bare``: the undecorated tool call;
- ``floor``: what persisting cannot avoid: ``orjson.dumps`` of the result (the
  in-memory path), or ``orjson.dumps`` plus writing a new file (the disk path);
- ``toolctx``: the ``@persist_context`` tool inside a session (default threshold;
  a memory budget large enough that the in-memory path is what is measured);
- ``toolctx redact=False``: the same with secret redaction turned off;
- ``toolctx all-disk``: the same with ``threshold=0``, every result written to a file;
- ``toolctx all-disk durable``: that with ``durable=True`` (an fsync of each file and of
  the directory per call);
- ``diskcache`` memoize and ``joblib.Memory(...).cache``, called with distinct
  arguments so every call persists.

Each contender runs batches sized to take about ``--batch-seconds``; a round runs
every contender once on a fresh directory; the figure is the median per-call time
over the rounds, with the min-max range across rounds.

``--peak-mb N``: the peak memory (tracemalloc, in a fresh process, the string
made before measuring) of persisting one string of N MB, which goes to disk, as
a multiple of its size: the floor is holding its JSON once (1.0x).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import diskcache
import joblib
import orjson
from payloads import SIZES, search_results

import toolctx
from toolctx._defaults import DEFAULT_THRESHOLD

Call = Callable[[int], Any]
Setup = Callable[[Path, dict[str, Any]], Any]  # a context manager factory yielding a Call

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL


def make_tool(payload: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    def search(query: str, page: int = 1) -> dict[str, Any]:
        """Search the web."""
        return payload

    return search


@contextmanager
def bare(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    tool = make_tool(payload)
    yield lambda i: tool("quarterly revenue", page=i)


@contextmanager
def floor_memory(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    tool = make_tool(payload)
    yield lambda i: orjson.dumps(tool("quarterly revenue", page=i))


@contextmanager
def floor_disk(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    tool = make_tool(payload)
    prefix = str(directory) + "/r"

    def call(i: int) -> None:
        data = orjson.dumps(tool("quarterly revenue", page=i))
        fd = os.open(f"{prefix}{i}.json", _FLAGS, 0o600)
        os.write(fd, data)
        os.close(fd)

    yield call


@contextmanager
def with_toolctx(
    directory: Path,
    payload: dict[str, Any],
    threshold: int = DEFAULT_THRESHOLD,
    redact: bool = True,
    durable: bool = False,
) -> Iterator[Call]:
    tool = toolctx.persist_context(make_tool(payload))
    with toolctx.session(directory, threshold=threshold, memory_budget=1 << 40, redact=redact, durable=durable):
        yield lambda i: tool("quarterly revenue", page=i)


@contextmanager
def toolctx_no_redact(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    with with_toolctx(directory, payload, redact=False) as call:
        yield call


@contextmanager
def toolctx_all_disk(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    with with_toolctx(directory, payload, threshold=0) as call:
        yield call


@contextmanager
def toolctx_durable(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    with with_toolctx(directory, payload, threshold=0, durable=True) as call:
        yield call


@contextmanager
def with_diskcache(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    cache = diskcache.Cache(str(directory))
    tool = cache.memoize()(make_tool(payload))
    try:
        yield lambda i: tool("quarterly revenue", page=i)
    finally:
        cache.close()


@contextmanager
def with_joblib(directory: Path, payload: dict[str, Any]) -> Iterator[Call]:
    tool = joblib.Memory(str(directory), verbose=0).cache(make_tool(payload))
    yield lambda i: tool("quarterly revenue", page=i)


CONTENDERS: dict[str, Setup] = {
    "bare": bare,
    "floor memory": floor_memory,
    "floor disk": floor_disk,
    "toolctx": with_toolctx,
    "toolctx redact=False": toolctx_no_redact,
    "toolctx all-disk": toolctx_all_disk,
    "toolctx all-disk durable": toolctx_durable,
    "diskcache": with_diskcache,
    "joblib": with_joblib,
}


def batch_size(setup: Setup, payload: dict[str, Any], base: Path, seconds: float) -> int:
    """How many calls take about ``seconds`` (measured once, on a throwaway directory)."""
    with tempfile.TemporaryDirectory(dir=base) as tmp, setup(Path(tmp), payload) as call:
        call(-1)
        start = time.perf_counter()
        probes = 0
        while time.perf_counter() - start < seconds / 10 and probes < 10_000:
            call(-2 - probes)
            probes += 1
        per_call = (time.perf_counter() - start) / probes
    return max(5, min(50_000, int(seconds / per_call)))


def run_batch(setup: Setup, payload: dict[str, Any], base: Path, calls: int) -> float:
    """Seconds per call for one batch on a fresh directory (cleanup not timed)."""
    directory = Path(tempfile.mkdtemp(dir=base))
    try:
        with setup(directory, payload) as call:
            call(-1)  # warm up: first-call costs (directory creation, imports) are not per-call costs
            gc.collect()
            start = time.perf_counter()
            for i in range(calls):
                call(i)
            elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return elapsed / calls


def measure(base: Path, rounds: int, seconds: float, only: list[str]) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    for label, size in SIZES.items():
        if only and label not in only:
            continue
        payload = search_results(size)
        sizes = {name: batch_size(setup, payload, base, seconds) for name, setup in CONTENDERS.items()}
        per_size = results[label] = {name: [] for name in CONTENDERS}
        for _ in range(rounds):
            for name, setup in CONTENDERS.items():
                per_size[name].append(run_batch(setup, payload, base, sizes[name]) * 1e6)
        print(f"  {label}: " + ", ".join(f"{n} {statistics.median(v):.1f}" for n, v in per_size.items()), flush=True)
    return results


_PEAK = """
import gc, sys, tempfile, tracemalloc
import toolctx

size = int(sys.argv[1])
text = ("quarterly revenue grew by 4% in the north region; " * (size // 50 + 1))[:size]

@toolctx.persist_context
def fetch(n: int) -> str:
    return text

with tempfile.TemporaryDirectory(dir=sys.argv[2]) as directory, toolctx.session(directory):
    fetch(0)
    gc.collect()
    tracemalloc.start()
    fetch(1)
    print(tracemalloc.get_traced_memory()[1])
"""


def peak_memory(megabytes: int, base: str, rounds: int) -> list[float]:
    """Peak traced memory of persisting a ``megabytes`` MB string, over its size, once per round."""
    size = megabytes * 1_000_000
    ratios = []
    for _ in range(rounds):
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, str(size), base], cwd=base, capture_output=True, text=True, check=True
        )
        ratios.append(int(done.stdout.split()[-1]) / size)
    return ratios


def table(title: str, results: dict[str, dict[str, list[float]]], ranges: bool) -> str:
    def cell(values: list[float]) -> str:
        text = f"{statistics.median(values):,.1f}"
        return f"{text} ({min(values):,.1f}–{max(values):,.1f})" if ranges else text

    lines = [
        f"### {title}",
        "",
        "Median µs per call" + (" (min–max over rounds)" if ranges else "") + ".",
        "",
        "| result | " + " | ".join(CONTENDERS) + " |",
        "|---|" + "---:|" * len(CONTENDERS),
    ]
    for label, per_size in results.items():
        lines.append(f"| {label} | " + " | ".join(cell(per_size[name]) for name in CONTENDERS) + " |")
    lines += [
        "",
        "| result | path | overhead over bare (µs) | toolctx / floor | redact=False / floor "
        "| diskcache / toolctx | joblib / toolctx |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, per_size in results.items():
        med = {name: statistics.median(values) for name, values in per_size.items()}
        in_memory = len(orjson.dumps(search_results(SIZES[label]))) < DEFAULT_THRESHOLD
        floor = med["floor memory"] if in_memory else med["floor disk"]
        lines.append(
            f"| {label} | {'memory' if in_memory else 'disk'} | {med['toolctx'] - med['bare']:,.1f} | "
            f"{med['toolctx'] / floor:.2f}x | {med['toolctx redact=False'] / floor:.2f}x | "
            f"{med['diskcache'] / med['toolctx']:.1f}x | {med['joblib'] / med['toolctx']:.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-seconds", type=float, default=0.25)
    parser.add_argument("--tmpfs", default="/dev/shm", help="a tmpfs directory ('' to skip)")
    parser.add_argument(
        "--disk", default=str(Path(__file__).parent / ".scratch"), help="a directory on disk ('' to skip)"
    )
    parser.add_argument("--json", help="also write the raw figures to this file")
    parser.add_argument("--sizes", nargs="*", default=[], choices=list(SIZES), help="only these result sizes")
    parser.add_argument("--peak-mb", type=int, default=0, help="also the peak memory of persisting a string this big")
    options = parser.parse_args()
    report: dict[str, Any] = {}
    output = []
    for title, where, ranges in (
        ("tmpfs", options.tmpfs, False),
        ("normal disk", options.disk, True),
    ):
        if not where:
            continue
        base = Path(where)
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=base, prefix="toolctx-bench-"))
        try:
            print(f"{title} ({work}):", flush=True)
            report[title] = measure(work, options.rounds, options.batch_seconds, options.sizes)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        output.append(table(f"{title} ({where})", report[title], ranges))
    if options.peak_mb:
        ratios = peak_memory(options.peak_mb, tempfile.gettempdir(), options.rounds)
        report["peak"] = {f"{options.peak_mb} MB": ratios}
        output.append(
            f"### Peak memory, one {options.peak_mb} MB string\n\n"
            f"Traced peak over the string's size: median {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}–{max(ratios):.2f}x over {len(ratios)} runs); the floor is 1.00x.\n"
        )
    print()
    print("\n".join(output))
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

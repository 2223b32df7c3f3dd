"""Selection latency and index memory at 1k, 10k and 100k stored calls.

    python bench/selection_speed.py                  # numpy scores the postings when it is installed
    python bench/selection_speed.py --without-numpy  # as the core install does, in pure Python

For each size, a session stores synthetic calls drawn from a catalogue of tools
(names, arguments and results built from a vocabulary of ~2,000 words and
numbers, so postings lists have realistic lengths). Reported:

- index: the time to index every call (done at the first search; saving
  only queues them) and the memory the index then holds (tracemalloc, measured
  in a separate pass because tracing slows allocation);
- top-10: ``select_relevant_contexts(question, k=10)`` over all calls, median
  and 90th percentile over 60 different questions of 2-6 words;
- budgeted: the same with ``budget_tokens=2000`` instead of ``k``.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from typing import Any

if "--without-numpy" in sys.argv:
    sys.modules["numpy"] = None  # type: ignore[assignment]  # what an install without numpy sees

import toolctx
from toolctx.storage import DictStore

TOOLS = [
    ("search_code", ["query", "path"]),
    ("read_file", ["path"]),
    ("web_search", ["query"]),
    ("fetch_page", ["url"]),
    ("get_income_statements", ["ticker", "period"]),
    ("get_stock_price", ["ticker"]),
    ("get_logs", ["service", "since"]),
    ("query_metrics", ["metric", "window"]),
    ("search_email", ["query"]),
    ("get_weather", ["city", "date"]),
    ("run_tests", ["path"]),
    ("search_flights", ["origin", "destination", "date"]),
]


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "tor", "va", "sel", "dun", "pra", "ix", "om", "bel", "quo", "zen", "ta"]
    words = {"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(3000)}
    return sorted(words)[:2000]


def make_calls(count: int, seed: int = 11) -> list[tuple[str, dict[str, Any], Any]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    # Zipf-like word use: a few words are very common, most are rare.
    weights = [1 / (rank + 1) for rank in range(len(words))]
    calls = []
    for _ in range(count):
        tool, params = rng.choice(TOOLS)
        args = {p: " ".join(rng.choices(words, weights, k=rng.randint(1, 3))) for p in params}
        rows = [
            {"title": " ".join(rng.choices(words, weights, k=6)), "value": rng.randint(0, 10**6)}
            for _ in range(rng.randint(1, 8))
        ]
        calls.append((tool, args, {"rows": rows, "summary": " ".join(rng.choices(words, weights, k=30))}))
    return calls


def questions(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    words = vocabulary(random.Random(11))
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=rng.randint(2, 6))) for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def stored_session(size: int) -> Any:
    s = toolctx.session(store=DictStore(), memory_budget=1 << 34, redact=False)
    for tool, args, result in make_calls(size):
        s.save_context(tool, args, result)
    return s


def index_memory(size: int) -> float:
    """Bytes the index holds once built (tracemalloc, in a pass of its own: it slows allocation)."""
    with stored_session(size) as s:
        index = s._saver.index
        index.search(["warmup"])  # numpy and first-use costs out of the way
        queued = [(r.id, r.search_text, r.index_text(), r.tokens) for r in s._saver.records.values()]
        index.clear()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for entry in queued:
            index.add(*entry)
        index.search(["warmup"])
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return held / 1e6


def measure(size: int) -> dict[str, float]:
    with stored_session(size) as s:
        start = time.perf_counter()
        s._saver.index.search(["warmup"])  # the first search indexes every call saved so far
        build = time.perf_counter() - start
        asked = questions(60)
        for question in asked[:5]:
            s.select_relevant_contexts(question, k=10)  # warm caches
        top10 = []
        for question in asked:
            start = time.perf_counter()
            s.select_relevant_contexts(question, k=10)
            top10.append((time.perf_counter() - start) * 1e3)
        budgeted = []
        for question in asked:
            start = time.perf_counter()
            s.select_relevant_contexts(question, budget_tokens=2000)
            budgeted.append((time.perf_counter() - start) * 1e3)
        return {
            "build_s": build,
            "index_mb": index_memory(size),
            "top10_median_ms": statistics.median(top10),
            "top10_p90_ms": percentile(top10, 0.9),
            "budget_median_ms": statistics.median(budgeted),
            "terms": float(len(s._saver.index._postings)),
        }


def main() -> None:
    from toolctx.selection._index import _accelerator

    print(f"Scoring with {'numpy' if _accelerator() is not None else 'pure Python (no numpy)'}.\n")
    print(
        "| stored calls | index build (s) | index memory (MB) | distinct terms | top-10 median (ms) | top-10 p90 (ms) "
        "| budget 2,000 tokens median (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in (1_000, 10_000, 100_000):
        row = measure(size)
        print(
            f"| {size:,} | {row['build_s']:.2f} | {row['index_mb']:.1f} | {row['terms']:,.0f} | "
            f"{row['top10_median_ms']:.2f} | {row['top10_p90_ms']:.2f} | {row['budget_median_ms']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

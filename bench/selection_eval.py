"""Ranking quality of the selection strategies on the labelled set in bench/eval_set.py.

    python bench/selection_eval.py

For each question, every strategy ranks all stored calls; recall@k is the share
of the question's answering calls found in the top k, averaged over questions;
MRR is the mean of 1 / rank of the first answering call (0 when none is ranked).
The calls are saved in the order listed, a few microseconds apart, so recency
only breaks ties in favour of later calls.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from eval_set import CALLS, QUERIES

import toolctx
from toolctx.selection import bm25, keyword, recency
from toolctx.storage import DictStore

STRATEGIES: dict[str, Any] = {
    "keyword (seed)": keyword(),
    "bm25": bm25(),
    "bm25 * 0.9 + recency * 0.1": bm25() * 0.9 + recency(half_life=timedelta(hours=6)) * 0.1,
    "bm25 * 0.7 + keyword * 0.3": bm25() * 0.7 + keyword() * 0.3,
}


def evaluate() -> dict[str, dict[str, float]]:
    with toolctx.session(store=DictStore(), memory_budget=1 << 30) as s:
        key_of: dict[str, str] = {}
        for key, (tool, args, result) in CALLS.items():
            key_of[s.save_context(tool, args, result).id] = key
        table: dict[str, dict[str, float]] = {}
        for name, strategy in STRATEGIES.items():
            recall3 = recall5 = reciprocal = 0.0
            for question, answers in QUERIES.items():
                ranked = s.select_relevant_contexts(question, k=len(CALLS), strategy=strategy, min_score_ratio=0)
                keys = [key_of[p.id] for p in ranked]
                recall3 += len(answers & set(keys[:3])) / len(answers)
                recall5 += len(answers & set(keys[:5])) / len(answers)
                first = next((i for i, k in enumerate(keys, 1) if k in answers), None)
                reciprocal += 1 / first if first else 0.0
            n = len(QUERIES)
            table[name] = {"recall@3": recall3 / n, "recall@5": recall5 / n, "MRR": reciprocal / n}
    return table


def main() -> None:
    table = evaluate()
    print(f"{len(CALLS)} stored calls in 6 domains, {len(QUERIES)} questions\n")
    print("| strategy | recall@3 | recall@5 | MRR |")
    print("|---|---:|---:|---:|")
    for name, row in table.items():
        print(f"| {name} | {row['recall@3']:.3f} | {row['recall@5']:.3f} | {row['MRR']:.3f} |")


if __name__ == "__main__":
    main()

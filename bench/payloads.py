"""Realistic tool results for the benchmarks: search hits with non-ASCII text."""

from __future__ import annotations

import random
from typing import Any

import orjson

SIZES = {"200 B": 200, "4 KiB": 4 * 1024, "64 KiB": 64 * 1024, "1 MiB": 1024 * 1024}

_WORDS = (  # noqa: SIM905 - reads better as prose
    "revenue growth quarterly naïve café résumé Zürich München São Paulo 東京 北京 Москва données "
    "analyse über straße façade coöperation señor año mañana jalapeño crème brûlée déjà vu smörgåsbord "
    "agent tool context memory pointer session budget latency throughput index query"
).split()


def search_results(target_bytes: int, seed: int = 7) -> dict[str, Any]:
    """A search-tool result whose orjson form is close to ``target_bytes`` (never over by much)."""
    rng = random.Random(seed)
    hits: list[dict[str, Any]] = []
    result: dict[str, Any] = {"query": "quarterly revenue growth", "total": 0, "hits": hits}
    while True:
        hit = {
            "rank": len(hits) + 1,
            "title": " ".join(rng.choices(_WORDS, k=6)).title(),
            "url": f"https://example.org/{rng.randrange(10**6)}/{rng.choice(_WORDS)}",
            "snippet": " ".join(rng.choices(_WORDS, k=24)),
            "score": round(rng.random(), 4),
            "published": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        }
        hits.append(hit)
        result["total"] = len(hits)
        if len(orjson.dumps(result)) > target_bytes:
            if len(hits) > 1:
                hits.pop()
                result["total"] = len(hits)
            else:  # a single hit is too big: trim its snippet to size
                over = len(orjson.dumps(result)) - target_bytes
                hit["snippet"] = hit["snippet"][: max(0, len(hit["snippet"]) - over)]
            return result

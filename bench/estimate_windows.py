"""The token estimate of a large output from windows, against the same estimate over every byte.

    python bench/estimate_windows.py [--traces ../shared/traces/dev.jsonl] [--rounds 5]

``estimate_tokens`` weighs every byte of an input up to 256 KiB; a larger one is weighed
from 16 windows of 4 KiB spread over it and scaled to its size. This compares, on
inputs of 300 KiB - 1 MiB, that estimate with the one the same weights give over every byte
(the reference, computed here): the joined test corpora of each kind, the ``1 MiB`` search
result of ``bench/payloads.py`` and the text of the trace file (its messages and outputs, in
order) cut into 1 MiB pieces. It prints the difference for each and the time of both on the
search result (median of ``--rounds`` runs of 20 calls).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson
from payloads import search_results

from tests.tokens.corpora import KINDS, corpus
from toolctx.tokens import _estimate as weights_of
from toolctx.tokens import estimate_tokens

HERE = Path(__file__).resolve().parent
DEFAULT_TRACES = HERE.parent.parent / "shared" / "traces" / "dev.jsonl"


def every_byte(data: bytes) -> float:
    """The estimate the same weights give over every byte of ``data`` (before rounding)."""
    sample = data if len(data) <= 1024 else data[:512] + data[len(data) // 2 : len(data) // 2 + 512]
    weights, after_punct, space_pairs = weights_of._MODELS[weights_of._kind(sample)]
    weighed = memoryview(data.translate(weights))
    total = sum((zlib.adler32(weighed[i : i + 1024]) & 0xFFFF) - 1 for i in range(0, len(weighed), 1024))
    punct = data.translate(weights_of._CLASSES).count(b".a")
    return total / 32 + after_punct * punct + space_pairs * data.count(b"  ")


def texts_of(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts_of(item)


def inputs(traces: Path) -> dict[str, bytes]:
    found = {f"test corpus: {kind}, joined": "".join(corpus(kind)).encode() for kind in KINDS}
    found["search result, 1 MiB"] = orjson.dumps(search_results(1 << 20))
    with traces.open() as lines:
        text = "\n".join(t for line in lines for t in texts_of(json.loads(line)["turns"])).encode()
    for start in range(0, len(text), 1 << 20):
        piece = text[start : start + (1 << 20)]
        if len(piece) > 256 * 1024:
            found[f"trace text, MiB {start >> 20}"] = piece
    return {name: data for name, data in found.items() if len(data) > 256 * 1024}


def clock(function: Any, data: bytes, rounds: int) -> float:
    runs = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(20):
            function(data)
        runs.append((time.perf_counter() - start) / 20 * 1e3)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| input | bytes | every byte | windows | difference |\n|---|---:|---:|---:|---:|")
    differences = []
    for name, data in inputs(args.traces).items():
        whole, windows = every_byte(data), estimate_tokens(data)
        differences.append(abs(windows - whole) / whole)
        print(f"| {name} | {len(data):,} | {whole:,.0f} | {windows:,} | {100 * (windows - whole) / whole:+.2f} % |")
    print(f"\n|difference|: median {100 * statistics.median(differences):.2f} %, max {100 * max(differences):.2f} %")
    one = orjson.dumps(search_results(1 << 20))
    print(
        f"1 MiB search result, ms per estimate (median of {args.rounds}): every byte "
        f"{clock(every_byte, one, args.rounds):.2f}, windows {clock(estimate_tokens, one, args.rounds):.2f}"
    )


if __name__ == "__main__":
    main()

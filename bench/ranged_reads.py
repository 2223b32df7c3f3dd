"""What ``read_context(offset, limit)`` costs on another worker: one ranged GET of its page, against the whole document.

    python bench/ranged_reads.py [--runs 5] [--reads 40]

An S3 API over HTTP on loopback (moto's server, started here as its own process, as
the tests start it). One worker stores a tool output of each size (a text of code-like
lines with non-ASCII characters, quotes and tabs: 1 to 6 bytes a character in the stored
JSON) in a session kept in the store; a second worker, which never held it in memory,
reads ``--reads`` pages of 4,000 characters at random offsets with ``read_context``:

- ``ranged``: as toolctx does it (the index notes where the characters lie; one ranged
  GET of the page's bytes);
- ``whole``: the same reads with that note dropped, so each reads the whole document
  (what toolctx did before, and still does for outputs under 64 KiB).

Both in the same run, alternating, ``--runs`` times: the median over the runs of the
per-read median (ms), the bytes fetched per read, and the ratio. Every page read is
checked against the stored text.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import toolctx
from toolctx.compaction import read_context
from toolctx.storage import ObjectStore

SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
PAGE = 4000


def text_of(chars: int) -> str:
    line = "def función_{n}(x):\n\treturn \"café\" if x else 'naïve'  # ✓ {n}\n"
    out, n = [], 0
    while sum(map(len, out)) < chars:
        out.append(line.format(n=n))
        n += 1
    return "".join(out)[:chars]


def counting_bytes() -> list[int]:
    """Count the bytes the object store returns (``[0]``, reset by the caller)."""
    fetched = [0]
    read_range, get = ObjectStore.read_range, ObjectStore.get

    def counted_range(self: ObjectStore, name: str, start: int, end: int) -> bytes:
        data = read_range(self, name, start, end)
        fetched[0] += len(data)
        return data

    def counted_get(self: ObjectStore, name: str) -> bytes:
        data = get(self, name)
        fetched[0] += len(data)
        return data

    ObjectStore.read_range = counted_range  # type: ignore[method-assign]
    ObjectStore.get = counted_get  # type: ignore[method-assign]
    return fetched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()

    from tests.s3_server import S3Server

    fetched = counting_bytes()
    s3 = S3Server().start()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        os.environ.update(s3.environment())
        store = f"s3://{s3.bucket()}/bench"
        pick = random.Random(5)
        with tempfile.TemporaryDirectory() as tmp:
            for label, chars in SIZES.items():
                text = text_of(chars)
                with toolctx.session(tmp, store=store, keep=True, threshold=0) as first:
                    saved = first.save_context("cat", {"path": "big.py"}, text, task_id="t")
                    for run in range(options.runs):
                        for way in ("ranged", "whole") if run % 2 == 0 else ("whole", "ranged"):
                            reader = toolctx.ContextSession.resume(first.session_id, store=store)
                            if way == "whole":
                                for record in reader.save_path.snapshot():
                                    record.spans = None
                            times, sizes = [], []
                            for _ in range(options.reads):
                                offset = pick.randrange(0, len(text) - PAGE)
                                fetched[0] = 0
                                started = time.perf_counter()
                                page = read_context(reader, saved.handle, offset, PAGE, scope="t")
                                times.append(time.perf_counter() - started)
                                sizes.append(fetched[0])
                                if page.partition("\n")[2] != text[offset : offset + PAGE]:
                                    raise SystemExit(f"{label} {way}: page at {offset} is not the stored text")
                            reader.close()
                            entry = results.setdefault(label, {}).setdefault(way, [])
                            entry.append(statistics.median(times) * 1e3)
                            results[label].setdefault(f"{way}_bytes", []).append(statistics.median(sizes))
    finally:
        s3.stop()
    report: dict[str, Any] = {
        "workload": f"{options.reads} reads of {PAGE:,} characters at random offsets x {options.runs} runs, "
        "from a second worker, moto S3 on loopback",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    for label, found in results.items():
        ranged, whole = statistics.median(found["ranged"]), statistics.median(found["whole"])
        report[label] = {
            "ranged_ms": round(ranged, 2),
            "whole_ms": round(whole, 2),
            "ratio": round(ranged / whole, 3),
            "ranged_bytes": int(statistics.median(found["ranged_bytes"])),
            "whole_bytes": int(statistics.median(found["whole_bytes"])),
        }
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where the time of one @persist_context call goes, stage by stage.

    python bench/breakdown.py            # every result size, on tmpfs when there is one

Each stage is timed on its own with the inputs a real call sees (medians of
several repeats, µs per call):

- dispatch: the wrapt wrapper and toolctx's begin/end hooks around the tool, with
  persistence short-circuited;
- bind: binding the call's arguments to parameter names;
- args json: canonical JSON of the bound arguments;
- redact: the secret scan of the arguments and of the result JSON;
- hash: xxh3 of the argument JSON;
- serialise: orjson of the result plus the exact-size copy kept in memory;
- record: everything else the session does to keep the call (memory path), or
  record + write: building the document, writing it atomically and listing it in
  the manifest (disk path);
- pointer (on request): building a ContextPointer when asked; not on the call path.

``decorated call - bare call`` is the whole overhead, measured end to end.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import wrapt
import xxhash
from payloads import SIZES, search_results

import toolctx
from toolctx._decorator import _Tool
from toolctx._defaults import DEFAULT_THRESHOLD
from toolctx._serialize import encode
from toolctx.redaction import default_redactor
from toolctx.sessions._records import Call

REPEATS = 7


def per_call(stmt: Callable[[], Any], number: int) -> float:
    """Median over REPEATS of the time per call of ``stmt``, in microseconds."""
    return statistics.median(timeit.repeat(stmt, number=number, repeat=REPEATS)) / number * 1e6


def breakdown(payload: dict[str, Any], directory: Path) -> dict[str, float]:
    def search(query: str, page: int = 1) -> dict[str, Any]:
        return payload

    tool = _Tool(search, name=None, description=None, ignore=(), threshold=None, record_errors=True)
    hollow = _Tool(search, name=None, description=None, ignore=(), threshold=None, record_errors=True)
    hollow.begin = lambda instance, args, kwargs: None  # type: ignore[method-assign]
    hollow.end = lambda call, result, error: None  # type: ignore[method-assign]
    no_persistence = wrapt.FunctionWrapper(search, hollow.sync_wrapper)
    decorated = toolctx.persist_context(search)

    result_json = encode(payload)[0]
    in_memory = len(result_json) < DEFAULT_THRESHOLD
    number = 20_000 if len(result_json) < 10_000 else 300
    bound = tool.binders[0].bind(("quarterly revenue",), {"page": 3})
    args_json = encode(bound, sort_keys=True)[0]
    redactor = default_redactor()

    row: dict[str, float] = {}
    row["bare call"] = per_call(lambda: search("quarterly revenue", page=3), number)
    row["dispatch"] = per_call(lambda: no_persistence("quarterly revenue", page=3), number) - row["bare call"]
    row["bind"] = per_call(lambda: tool.binders[0].bind(("quarterly revenue",), {"page": 3}), number)
    row["args json"] = per_call(lambda: encode(bound, sort_keys=True), number)
    row["redact"] = per_call(lambda: redactor.redact_call(args_json, result_json), number)
    row["hash"] = per_call(lambda: xxhash.xxh3_64_hexdigest(args_json), number)
    row["serialise"] = per_call(lambda: memoryview(encode(payload)[0]).tobytes(), number)
    with toolctx.session(directory, memory_budget=1 << 40) as s:
        save = s._saver.save
        # Distinct arguments per call, as in real use: a repeat of an identical call is not rewritten.
        distinct = iter(
            [encode({"page": i, "query": "quarterly revenue"}, sort_keys=True)[0] for i in range(number * REPEATS + 1)]
        )
        whole = per_call(lambda: save(Call("search", "search", next(distinct)), payload, None), number)
        stage = "record" if in_memory else "record + write"
        row[stage] = whole - row["serialise"] - row["redact"] - row["hash"]
        pointer = s.get_all_pointers()[-1]
        row["pointer (on request)"] = per_call(lambda: s.get_pointer(pointer.id), min(number, 5_000))
        row["decorated call"] = per_call(lambda: decorated("quarterly revenue", page=3), number)
    row["overhead (decorated - bare)"] = row["decorated call"] - row["bare call"]
    return row


def main() -> None:
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    rows: dict[str, dict[str, float]] = {}
    for label, size in SIZES.items():
        with tempfile.TemporaryDirectory(dir=base, prefix="toolctx-breakdown-") as tmp:
            rows[label] = breakdown(search_results(size), Path(tmp))
        print(f"{label}: " + ", ".join(f"{k} {v:.2f}" for k, v in rows[label].items()), flush=True)
    stages = list(dict.fromkeys(k for r in rows.values() for k in r))
    print("\n| stage (µs per call) | " + " | ".join(rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for stage in stages:
        print(f"| {stage} | " + " | ".join(f"{r[stage]:,.2f}" if stage in r else "" for r in rows.values()) + " |")


if __name__ == "__main__":
    main()

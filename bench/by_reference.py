"""What passing a handle instead of a value saves the model, and what resolving it costs.

    python bench/by_reference.py [--sizes 4,16,40,128] [--runs 7] [--calls 200]

The workload: a source file of N KB (toolctx's own modules, concatenated and cut to
size) read by a ``read_file`` tool and written back by ``write_file(path, content)``.

1. Tokens: the o200k_base tokens of the write call's arguments as the model emits them
   (the JSON of the function call), with the file's text by value, by its handle
   (``content="ctx:<id>"``), and thirty lines of it by handle (``#lines=100-129``).
2. CPU (``time.process_time``), median per call over ``--runs`` runs of ``--calls``
   calls: resolving the handle alone (``toolctx.sessions.resolve_arguments``, what the
   decorator and both adapters call), and the whole decorated ``write_file`` call by
   value and by handle (the call is stored either way: by value with the file in its
   arguments, by handle with the handle). The stored output is in memory under the
   session's 32 KiB threshold and on disk from it, so both paths are measured.

Needs the exact counter (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import toolctx
from toolctx.redaction import default_redactor
from toolctx.sessions import resolve_arguments

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _replay_measure import o200k_counter

ROOT = Path(__file__).resolve().parents[1]


def source_text(kilobytes: int) -> str:
    """``kilobytes`` KB of real Python source, cut at a line end. Modules the secret rules would change are left
    out (a handle to a redacted copy is refused: the benchmark measures the copies that pass)."""
    redactor = default_redactor()
    texts = (p.read_text(encoding="utf-8") for p in sorted((ROOT / "toolctx").rglob("*.py")))
    text = "".join(t for t in texts if redactor.redact_text(t) == t and redactor.replacement not in t)
    while len(text.encode()) < kilobytes * 1024:
        text += text
    cut = text.encode()[: kilobytes * 1024].decode("utf-8", "ignore")
    return cut[: cut.rfind("\n") + 1]


def cpu_per_call(action: Callable[[], object], calls: int, runs: int) -> float:
    """Median CPU microseconds per call of ``action`` over ``runs`` runs of ``calls`` calls."""
    timings = []
    for _ in range(runs):
        start = time.process_time_ns()
        for _ in range(calls):
            action()
        timings.append((time.process_time_ns() - start) / calls / 1000)
    return statistics.median(timings)


def measure(kilobytes: int, runs: int, calls: int, count: Callable[[str], int]) -> dict[str, float]:
    text = source_text(kilobytes)
    written: dict[str, str] = {}

    @toolctx.persist_context
    def read_file(path: str) -> str:
        return text

    @toolctx.persist_context(by_reference=("content",))
    def write_file(path: str, content: str) -> str:
        written[path] = content
        return f"wrote {len(content)} characters"

    def arguments(content: str) -> int:
        return count(json.dumps({"path": "copy.py", "content": content}, ensure_ascii=False))

    def fresh(measured: Callable[[toolctx.ContextSession, str], Callable[[], object]]) -> tuple[float, str, str]:
        """CPU per call of what ``measured`` makes, in a session of its own (so no run spills another's calls
        out of memory), with the file read in it; and where its output was stored, and its handle."""
        with tempfile.TemporaryDirectory() as folder, toolctx.session(folder) as s:
            read_file("toolctx/module.py")
            [pointer] = s.get_all_pointers()
            return cpu_per_call(measured(s, pointer.handle), calls, runs), str(pointer.storage), pointer.handle

    resolve, stored_on, handle = fresh(lambda s, h: lambda: resolve_arguments(s, {"content": h}, ("content",)))
    by_value = fresh(lambda s, h: lambda: write_file("copy.py", text))[0]
    by_handle = fresh(lambda s, h: lambda: write_file("copy.py", h))[0]
    assert written["copy.py"] == text
    return {
        "kb": kilobytes,
        "stored_on": stored_on,  # type: ignore[dict-item]
        "tokens_by_value": arguments(text),
        "tokens_by_handle": arguments(handle),
        "tokens_30_lines_by_handle": arguments(f"{handle}#lines=100-129"),
        "resolve_us": resolve,
        "call_by_value_us": by_value,
        "call_by_handle_us": by_handle,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4,16,40,128", help="file sizes in KB, comma-separated")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    count = o200k_counter()
    print(
        f"{'file':>7} {'stored':>7} {'tokens by value':>16} {'by handle':>10} {'30 lines':>9} "
        f"{'resolve µs':>11} {'call by value µs':>17} {'by handle µs':>13}"
    )
    for size in (int(s) for s in options.sizes.split(",")):
        row = measure(size, options.runs, options.calls, count)
        print(
            f"{size:>5}KB {row['stored_on']:>7} {row['tokens_by_value']:>16,} {row['tokens_by_handle']:>10,} "
            f"{row['tokens_30_lines_by_handle']:>9,} {row['resolve_us']:>11.1f} {row['call_by_value_us']:>17.1f} "
            f"{row['call_by_handle_us']:>13.1f}"
        )


if __name__ == "__main__":
    main()

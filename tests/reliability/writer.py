"""A process that saves contexts as fast as it can until it is killed (used by the crash tests)."""

from __future__ import annotations

import sys

import toolctx


def main() -> None:
    context_dir, session_id, threshold = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with toolctx.session(context_dir, session_id=session_id, keep=True, threshold=threshold, memory_budget=8192) as s:
        print("ready", flush=True)
        i = 0
        while True:  # sizes from 0 to ~18 KB: memory, disk and spills all happen
            s.save_context("writer", {"i": i}, {"i": i, "body": "é" * (i % 7 * 1500)})
            i += 1


if __name__ == "__main__":
    main()

"""What a handle costs a model, and what guessing handles finds.

    python bench/handles.py [--handles 5000] [--guesses 10000] [--calls 2000]

1. Tokens: the o200k_base tokens a handle adds to ``read_context(id="ctx:<id>")``
   (the call a model writes to read it back), for the ids toolctx makes now (ten
   random lowercase letters) against the ids it made before (a
   session's six random hex digits then the call's counter in hex, counters
   1-300), over ``--handles`` ids of each; mean and the 5th/95th percentiles.
2. Guessing: a session of ``--calls`` calls stored under one conversation and one
   call of another; from the other's own handle, ``--guesses`` guessed handles
   (its one-character neighbours, the earlier scheme's session part with every
   counter, then random ids) read with ``read_context`` without any scope. The
   count of guesses that found something is what a prompt-injected model of the
   other conversation could read.

Needs the exact counter (``pip install toolctx[tokens]``).
"""

from __future__ import annotations

import argparse
import random
import secrets
import statistics
import string
import sys
import tempfile

import toolctx
from toolctx._naming import legacy_pointer_id, new_pointer_id
from toolctx.compaction import read_context
from toolctx.tokens import get_counter

_CALL = 'read_context(id="ctx:{}")'


def handle_tokens(count: int) -> dict[str, list[int]]:
    counter = get_counter("o200k_base")
    base = counter.count(_CALL.format(""))
    rng = random.Random(0)
    earlier = [legacy_pointer_id(secrets.token_hex(3), rng.randint(1, 300)) for _ in range(count)]
    now = [new_pointer_id() for _ in range(count)]
    return {
        "earlier (6 hex + counter)": [counter.count(_CALL.format(i)) - base for i in earlier],
        "now (10 letters)": [counter.count(_CALL.format(i)) - base for i in now],
    }


def guessing(calls: int, guesses: int) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as s:
        for i in range(calls):
            s.record_call("fetch", {"i": i}, f"their output {i}", task_id="victim")
        mine = s.record_call("fetch", {}, "my output", task_id="attacker").id
        alphabet = string.ascii_lowercase + string.digits
        tried = {mine[:i] + c + mine[i + 1 :] for i in range(len(mine)) for c in alphabet}
        tried |= {legacy_pointer_id(mine[:6], n) for n in range(calls + 1)}
        tried.discard(mine)
        while len(tried) < guesses:
            tried.add(new_pointer_id())
        found = sum(not read_context(s, f"ctx:{g}").startswith("No stored output") for g in tried)
        return len(tried), found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--handles", type=int, default=5000)
    parser.add_argument("--guesses", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    print(f"o200k_base tokens a handle adds to read_context(...), over {options.handles:,} ids each:")
    for name, counts in handle_tokens(options.handles).items():
        cuts = statistics.quantiles(counts, n=20)
        print(f"  {name:28} mean {statistics.mean(counts):.2f}  p5 {cuts[0]:.0f}  p95 {cuts[-1]:.0f}")
    tried, found = guessing(options.calls, options.guesses)
    print(f"guessing: {tried:,} guessed handles against a session of {options.calls:,} calls: {found} found anything")
    return 0


if __name__ == "__main__":
    sys.exit(main())

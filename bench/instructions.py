"""Instructions per call of the 200 B hot path, counted by callgrind: a figure a busy machine does not move.

    python bench/instructions.py                      # this checkout
    python bench/instructions.py --tree ../other      # another checkout of toolctx, same payload and interpreter

Timings on a shared 2-core machine move by 30-50 % between runs; the number of instructions
the CPU executes for the same work does not (``valgrind --tool=callgrind`` counts them). For
each contender of ``bench/core.py`` (``bare``, ``floor memory``, ``toolctx``, ``toolctx
redact=False``) a fresh process makes ``--calls`` calls to warm up, then ``--calls`` more
inside ``functools.reduce``, and callgrind counts only what runs inside that function
(``--toggle-collect``): start-up, imports and the first calls are left out, and the count
divided by the calls is the figure. The result is the ``200 B`` search result of
``bench/payloads.py``. Where a garbage collection falls in the counted calls moves a figure
by a few hundred instructions a call.

Instructions are not microseconds (a cache miss costs more than an add), but a change that
removes work shows here at once; ``bench/core.py`` gives the time.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import functools, sys, tempfile
sys.path.insert(0, {bench!r})
import orjson
import toolctx
from payloads import SIZES, search_results
from core import make_tool

kind, calls = sys.argv[1], int(sys.argv[2])
payload = search_results(SIZES["200 B"])
tool = make_tool(payload)
with tempfile.TemporaryDirectory() as folder:
    if kind == "bare":
        call = lambda done, i: tool("quarterly revenue", page=i)
    elif kind == "floor memory":
        call = lambda done, i: orjson.dumps(tool("quarterly revenue", page=i))
    else:
        wrapped = toolctx.persist_context(tool)
        session = toolctx.session(folder, memory_budget=1 << 40, redact=kind == "toolctx")
        session.__enter__()
        call = lambda done, i: wrapped("quarterly revenue", page=i)
    for i in range(calls):  # (warming up: not counted)
        call(None, i)
    functools.reduce(call, range(calls, 2 * calls), None)  # (counted: callgrind collects inside reduce only)
"""

CONTENDERS = ("bare", "floor memory", "toolctx", "toolctx redact=False")
_COLLECTED = re.compile(rb"Collected : (\d+)")


def instructions(tree: Path, kind: str, calls: int) -> int:
    """The instructions callgrind counts for one process making ``calls`` calls of ``kind`` with ``tree``'s toolctx."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "integrations")]), "PYTHONHASHSEED": "0"}
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=functools_reduce",
             f"--callgrind-out-file={out.name}", sys.executable, "-c",
             _CHILD.format(bench=str(HERE)), kind, str(calls)],
            env=env, capture_output=True, check=False,
        )  # fmt: skip
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed for {kind!r} in {tree}: {done.stderr.decode(errors='replace')[-2000:]}")
    return int(found.group(1))


def per_call(tree: Path, kind: str, calls: int) -> float:
    """Instructions per counted call."""
    return instructions(tree, kind, calls) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, action="append", help="a checkout of toolctx (repeat; default: this one)")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    trees = args.tree or [HERE.parent]
    print(f"instructions per call, 200 B result ({args.calls} calls counted after as many, callgrind)")
    print("| tree | " + " | ".join(CONTENDERS) + " | toolctx over bare |")
    print("|---" * (len(CONTENDERS) + 2) + "|")
    for tree in trees:
        counts = {kind: per_call(tree.resolve(), kind, args.calls) for kind in CONTENDERS}
        cells = " | ".join(f"{counts[kind]:,.0f}" for kind in CONTENDERS)
        print(f"| {tree} | {cells} | {counts['toolctx'] - counts['bare']:,.0f} |")


if __name__ == "__main__":
    main()

"""How the time to build a fresh context grows with the size of the project's ``.gitignore``.

Workload: a generated project of ``--files`` Python files (default 2,000 in 100
folders) whose root ``.gitignore`` has 1,000, 10,000 and 50,000 lines, then a
build of a 20,000-token context (``repo_map=None, code_search=None``: the plain
search, so the scan and the ignore matching are most of the time). Each run
makes a new context system, so nothing is reused from the run before (the
ignore file is read and its patterns compiled again); a build of a tiny project
first takes the imports out of the figures. Figures are the median, min and
max of ``--runs`` runs, in seconds; the same project with an empty ``.gitignore``
is the baseline, and the time over it per 1,000 ignore lines is flat when the
growth is linear.

``--mix``: ``typical`` lines are what ignore files hold (folder and file names,
``*.ext``, anchored paths, ``**/dir/*.tmp``, negations, one line in a hundred a
glob with a class or a ``?``); ``globs`` makes every line a glob with no two
literal characters in a row (``[Bb]u?l[dD]7*/``), which cannot be looked up by
any part of a name: the worst case, every line tried on every path.

    python bench/fresh_ignore.py                          # 1,000 / 10,000 / 50,000 lines, 5 runs
    python bench/fresh_ignore.py --lines 10000 --runs 1   # one size, e.g. to time a whole process
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from toolctx.fresh import ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter

TASK = TaskSpec(id="bench", name="Fix the total computed by compute_total in the billing module")


def ignore_lines(count: int, mix: str) -> list[str]:
    """``count`` ignore lines, none of which matches a file of the generated project (all are kept)."""
    lines = []
    for i in range(count):
        if mix == "globs":
            lines.append(f"[Bb]u?l[dD]{i % 10}*/")
            continue
        kind = i % 100
        if kind == 0:
            lines.append(f"gen_?{i}[0-9].py")
        else:
            lines.append(
                (f"build{i}/", f"*.ext{i}", f"/top{i}.txt", f"**/cache{i}/*.tmp", f"!keep{i}.log", f"out{i}/gen.c")[
                    kind % 6
                ]
            )
    return lines


def write_project(root: Path, files: int, lines: list[str]) -> None:
    folders = max(1, files // 20)
    for number in range(files):
        path = root / f"pkg{number % folders}" / f"module{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def compute_total_{number}(items):\n    return sum(item.price for item in items)\n")
    (root / ".gitignore").write_text("\n".join(lines) + "\n")


def build_once(root: Path) -> float:
    started = time.perf_counter()
    system = create_context_system(root, counter=EstimateCounter(), repo_map=None, code_search=None)
    context = system.manager.build_fresh_context_sync(TASK, ContextOptions(max_tokens=20_000))
    elapsed = time.perf_counter() - started
    assert context.relevant_files, "the build found no file: the ignore lines must not match the project"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--mix", choices=["typical", "globs"], default="typical")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="toolctx-bench-ignore-") as scratch:
        warm = Path(scratch, "warm-up")
        write_project(warm, 5, ignore_lines(5, args.mix))
        build_once(warm)
        baseline = 0.0
        for count in [0, *args.lines]:
            root = Path(scratch, f"lines-{count}")
            write_project(root, args.files, ignore_lines(count, args.mix))
            times = [build_once(root) for _ in range(args.runs)]
            median = statistics.median(times)
            if count == 0:
                baseline = median
            results.append(
                {
                    "lines": count,
                    "files": args.files,
                    "mix": args.mix,
                    "runs": args.runs,
                    "median_s": round(median, 3),
                    "min_s": round(min(times), 3),
                    "max_s": round(max(times), 3),
                    "over_baseline_s_per_1000_lines": round((median - baseline) / count * 1000, 4) if count else None,
                }
            )
            row = results[-1]
            per_1000 = "baseline" if not count else f"{row['over_baseline_s_per_1000_lines']:.4f} s per 1,000 lines"
            print(
                f"{count:>7,} lines  {args.files:,} files  median {row['median_s']:.3f} s  "
                f"(min {row['min_s']:.3f}, max {row['max_s']:.3f})  {per_1000}",
                flush=True,
            )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

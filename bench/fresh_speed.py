"""How long a 100,000-token fresh context takes to build for a real project, cold and warm.

Workload: Django's source (the ``django/`` package of the 4.2 sdist, about 3,600
files), fetched once with ``pip download --no-deps --no-binary :all: "django==4.2.*"``
into ``~/.cache/toolctx-bench`` (never into this repository), and a task written
like a bug report naming one file. Every build is ``ContextOptions(max_tokens=100_000)``
counted exactly (o200k_base).

Each run is a new process, so "cold" is a real first build: imports, loading the
tokenizer, scanning, reading and indexing every file, parsing with tree-sitter.
"warm" is the median of the next builds of the same process for new tasks (a new
task text each time, so nothing is answered from a cache of the last build; files
unchanged on disk are not reread). Modes:

- ``plain``: no parser, plain BM25 over code chunks, files listed by path;
- ``tree-sitter``: the tree-sitter repo map and code search (``toolctx[repomap]``);
- ``reference``: what a hand-written builder does, in the same run: read every
  text file, BM25 over whole files (``toolctx.selection.SearchIndex``), take the
  best files while they fit 100,000 tokens, counted with the same counter.

    python bench/fresh_speed.py --runs 5           # prints a table and JSON
    taskset -c 1 python bench/fresh_speed.py       # pinned to one core
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

CACHE = Path.home() / ".cache" / "toolctx-bench"
RELEASE = "4.2"
PIP_DOWNLOAD = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
TASKS = [
    (
        "QuerySet.bulk_create() crashes on a model whose db_column differs from the field name",
        "db/models/query.py",
    ),
    ("Admin changelist filters lose the search query when a date hierarchy is used", "contrib/admin/views/main.py"),
    ("URL resolver reverse() with a translated prefix ignores the active language", "urls/resolvers.py"),
    ("Form field clean() of a MultiValueField does not run validators of empty subfields", "forms/fields.py"),
    ("Template engine caches a loader's templates across debug reloads", "template/loaders/cached.py"),
]


def django_source(cache: Path) -> Path:
    """The ``django/`` package of the latest 4.2 sdist, downloaded and unpacked once into ``cache``."""
    unpacked = cache / "src" / f"django-{RELEASE}"
    if not unpacked.is_dir():
        downloads = cache / "sdists" / f"django-{RELEASE}"
        downloads.mkdir(parents=True, exist_ok=True)
        if not list(downloads.glob("*.tar.gz")):
            subprocess.run(
                [*PIP_DOWNLOAD, f"django=={RELEASE}.*", "-d", str(downloads)],
                check=True,
                timeout=600,
            )
        with tarfile.open(next(downloads.glob("*.tar.gz"))) as archive:
            archive.extractall(unpacked, filter="data")
    root = next(p for p in unpacked.iterdir() if p.is_dir())
    return root / "django"


def worker(mode: str, root: Path, builds: int) -> dict[str, Any]:
    """One process: a cold build, then ``builds`` warm ones for other tasks (wall and CPU seconds)."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    from toolctx.tokens import get_counter

    counter = get_counter("o200k_base")
    if mode == "reference":
        return _reference(root, counter, builds, started, cpu_started)
    from toolctx.fresh import ContextOptions, TaskSpec, create_context_system

    kind = "auto" if mode == "tree-sitter" else None
    system = create_context_system(root, counter=counter, repo_map=kind, code_search="auto" if kind else None)
    if mode == "plain":  # the plain BM25 code search too, not only the plain map
        system.builder.code_search = system.builder.plain
    times, cpu, tokens, files = [], [], [], []
    for number in range(builds + 1):
        text, path = TASKS[number % len(TASKS)]
        task = TaskSpec(id=f"t{number}", name=text, description=f"{text} (run {number})", files=(path,))
        begin = started if number == 0 else time.perf_counter()
        cpu_begin = cpu_started if number == 0 else time.process_time()
        context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=100_000))
        times.append(time.perf_counter() - begin)
        cpu.append(time.process_time() - cpu_begin)
        tokens.append(context.token_count)
        files.append(len(context.relevant_files))
        system.manager.clear_task_context_sync(task.id)
    scanned = len(system.builder.files.scan()[0])
    return _row(times, cpu, tokens[0], scanned)


def _row(times: list[float], cpu: list[float], tokens: int, files: int) -> dict[str, Any]:
    return {
        "cold": times[0],
        "warm": statistics.median(times[1:]),
        "cold_cpu": cpu[0],
        "warm_cpu": statistics.median(cpu[1:]),
        "tokens": tokens,
        "files": files,
    }


def _reference(root: Path, counter: Any, builds: int, started: float, cpu_started: float) -> dict[str, Any]:
    from toolctx.selection import SearchIndex, tokenize

    index = SearchIndex()
    texts: dict[str, str] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                data = Path(path).read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if b"\x00" in data[:8192] or len(text) > 100_000:
                continue
            rel = os.path.relpath(path, root)
            texts[rel] = text
            index.add(rel, rel, text)
    times, cpu, tokens = [], [], 0
    for number in range(builds + 1):
        begin = started if number == 0 else time.perf_counter()
        cpu_begin = cpu_started if number == 0 else time.process_time()
        text = TASKS[number % len(TASKS)][0] + f" (run {number})"
        spent, parts = 0, []
        for rel, _score in index.search(tokenize(text), k=200):
            cost = counter.count(texts[rel])
            if spent + cost <= 100_000 - 16_000:
                parts.append(texts[rel])
                spent += cost
        tokens = counter.count("\n\n".join(parts)) if number == 0 else tokens
        times.append(time.perf_counter() - begin)
        cpu.append(time.process_time() - cpu_begin)
    return _row(times, cpu, tokens, len(texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per mode (cold builds)")
    parser.add_argument("--builds", type=int, default=5, help="warm builds per process")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--modes", default="reference,plain,tree-sitter")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = django_source(args.cache)
    if args.worker:
        print(json.dumps(worker(args.worker, root, args.builds)))
        return
    modes = args.modes.split(",")
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for _ in range(args.runs):  # modes interleaved, so a busy moment of the machine hits them alike
        for mode in modes:
            command = [sys.executable, __file__, "--worker", mode, "--builds", str(args.builds)]
            done = subprocess.run([*command, "--cache", str(args.cache)], capture_output=True, text=True, check=True)
            results[mode].append(json.loads(done.stdout))
    summary = {}
    for mode, runs in results.items():
        summary[mode] = {
            "cold_s": statistics.median(r["cold"] for r in runs),
            "cold_range_s": [min(r["cold"] for r in runs), max(r["cold"] for r in runs)],
            "warm_s": statistics.median(r["warm"] for r in runs),
            "cold_cpu_s": statistics.median(r["cold_cpu"] for r in runs),
            "warm_cpu_s": statistics.median(r["warm_cpu"] for r in runs),
            "tokens": runs[0]["tokens"],
            "files_listed": runs[0]["files"],
        }
    reference = summary.get("reference")
    print(f"Django {RELEASE} ({root}), 100,000-token contexts, {args.runs} processes x {args.builds} warm builds")
    print(
        f"{'mode':<12} {'cold s':>8} {'(min-max)':>14} {'warm s':>8} {'cold cpu':>9} {'warm cpu':>9} "
        f"{'tokens':>8} {'vs reference cold/warm':>24}"
    )
    for mode, row in summary.items():
        ratio = ""
        if reference is not None and mode != "reference":
            ratio = f"{row['cold_s'] / reference['cold_s']:.2f}x / {row['warm_s'] / reference['warm_s']:.2f}x"
        low, high = row["cold_range_s"]
        print(
            f"{mode:<12} {row['cold_s']:>8.2f} {f'({low:.2f}-{high:.2f})':>14} {row['warm_s']:>8.3f} "
            f"{row['cold_cpu_s']:>9.2f} {row['warm_cpu_s']:>9.3f} {row['tokens']:>8,} {ratio:>24}"
        )
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()

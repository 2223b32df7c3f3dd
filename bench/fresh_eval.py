"""How often a fresh context holds the files a real fix changed, and how fast the repo map is on Django.

Workload: the SWE-bench Lite coding sessions of a trace file (one JSON session a
line; see the traces' README). For each, the task is the issue text of its first
user message (inside ``<pr_description>``, nothing else), and its label is the
set of files the agent's final patch changed that exist in the project at that
version. The project's source comes from the registry's source distribution of
the matching release (``pip download --no-deps --no-binary :all: django==3.1.*``),
unpacked under ``~/.cache/toolctx-bench`` (never inside this repository).

For each token budget, each way of filling a context is judged by the share of
tasks whose changed files are all in it and by file recall:

- ``bm25-files``: plain BM25 over whole files (the issue text as the query),
  whole files added best first while they fit;
- ``repo-map``: the rendered repo map alone at that budget (a file counts when
  the map shows at least one of its definitions);
- ``ranked``: the repo map's file ranking (``RepoMap.rank_files``), whole files
  added best first while they fit;
- ``fused``: the ranking and BM25 merged by reciprocal rank fusion, filled the same way;
- ``builder``: :class:`toolctx.fresh.ContextBuilder` (when it can be imported):
  a file counts when some of its content is in the context: among the context's
  files (whole, or as an excerpt: its outline and the code matching the task),
  or a code result from it;
- ``builder-whole``: the same contexts, a file counting only when it is among
  the context's files whole.

A third measure asks whether the lines the fix changed are shown ("edit sites"):
each hunk of the patch is anchored by its removed lines (its context lines when
it only adds), stripped, at least 8 characters, that occur in the project's
version of the file (a hunk with no such line is not checked); a hunk is shown
when one of its anchors is among the lines the context shows of that file (a
whole file shows all of them). A task counts when every checked hunk of every
changed file is shown. The repo map alone shows no file's lines and is not
judged on it.

Token counts are exact (o200k_base) when ``toolctx.tokens.get_counter`` is
available. ``--timing`` measures the repo map on one Django release instead:
cold (a new process's first map, nothing cached) and warm (the same map asked
again), medians of several runs.

    python bench/fresh_eval.py ../shared/traces/dev.jsonl
    python bench/fresh_eval.py ../shared/traces/dev.jsonl --timing
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolctx.fresh import _tags
from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._repomap import RepoMap
from toolctx.selection import SearchIndex, tokenize

CACHE = Path.home() / ".cache" / "toolctx-bench"
BUDGETS = (10_000, 30_000, 100_000)
MODES = ("bm25-files", "repo-map", "ranked", "fused", "builder", "builder-whole")
# SWE-bench instance number -> the release line its base commit was developing (approximate, by date).
VERSIONS = {
    "django/django": [(11500, "3.0"), (12800, "3.1"), (13500, "3.2"), (14400, "4.0"), (15300, "4.1"), (16300, "4.2")],
    "astropy/astropy": [(8000, "1.3"), (13000, "4.3"), (99999, "5.1")],
}
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_MIN_ANCHOR = 8
Shown = dict[str, str | None]  # path -> the text the context shows of it (None: the whole file)


def hunks(patch: str) -> dict[str, list[list[str]]]:
    """Each changed file's hunks, as anchor lines: removed lines, or context lines for a hunk that only adds."""
    found: dict[str, list[list[str]]] = {}
    for section in re.split(r"^(?=diff --git )", patch, flags=re.M):
        head = _DIFF.match(section)
        if not head:
            continue
        for hunk in re.split(r"^@@[^\n]*\n", section, flags=re.M)[1:]:
            rows = hunk.split("\n")
            removed = [r[1:].strip() for r in rows if r.startswith("-") and not r.startswith("---")]
            context = [r[1:].strip() for r in rows if r.startswith(" ")]
            anchors = [a for a in (removed or context) if len(a) >= _MIN_ANCHOR]
            found.setdefault(head.group(2), []).append(anchors)
    return found


def edit_sites_shown(changed: dict[str, list[list[str]]], shown: Shown) -> bool:
    """Whether every hunk of every changed file has an anchor among the lines shown of that file."""
    for path, file_hunks in changed.items():
        if path not in shown:
            return False
        text = shown[path]
        if text is None:
            continue
        lines = {line.strip() for line in text.split("\n")}
        if not all(any(anchor in lines for anchor in anchors) for anchors in file_hunks):
            return False
    return True


def counter() -> Any:
    try:
        from toolctx.tokens import get_counter  # type: ignore[attr-defined]

        return get_counter("o200k_base")
    except (ImportError, Exception):
        from toolctx.tokens import EstimateCounter

        return EstimateCounter()


def load_tasks(trace: Path) -> list[dict[str, Any]]:
    tasks = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        session = json.loads(line)
        if session.get("source") != "mini-swe-agent-swebench":
            continue
        first = session["turns"][0]["user"]
        match = re.search(r"<pr_description>(.*?)</pr_description>", first, re.S)
        issue = (match.group(1) if match else first).replace("Consider the following PR description:", "", 1)
        patch = session["turns"][-1].get("final", "")
        changed = sorted({b for _a, b in _DIFF.findall(patch)})
        instance = session["id"].split("/", 1)[1]
        owner, rest = instance.split("__", 1)
        name, number = rest.rsplit("-", 1)
        tasks.append(
            {
                "id": instance,
                "repo": f"{owner}/{name}",
                "number": int(number),
                "issue": issue.strip(),
                "changed": changed,
                "hunks": hunks(patch),
            }
        )
    return tasks


def version(repo: str, number: int) -> str | None:
    for bound, release in VERSIONS.get(repo, []):
        if number < bound:
            return release
    return None


def source(repo: str, release: str, cache: Path) -> Path | None:
    """The unpacked sdist of ``repo``'s latest ``release.*``, downloaded once into ``cache``."""
    package = repo.split("/")[1]
    unpacked = cache / "src" / f"{package}-{release}"
    if unpacked.is_dir():
        return next((p for p in unpacked.iterdir() if p.is_dir()), None)
    downloads = cache / "sdists" / f"{package}-{release}"
    downloads.mkdir(parents=True, exist_ok=True)
    failed = downloads / "FAILED"
    if failed.exists():  # tried before: pip could not prepare this sdist (say, a build needing old setuptools)
        return None
    if not list(downloads.glob("*.tar.gz")):
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{package}=={release}.*",
            "-d",
            str(downloads),
        ]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            failed.write_text(done.stderr[-4000:], encoding="utf-8")
            return None
    archives = list(downloads.glob("*.tar.gz"))
    if not archives:
        return None
    with tarfile.open(archives[0]) as archive:
        archive.extractall(unpacked, filter="data")
    return next((p for p in unpacked.iterdir() if p.is_dir()), None)


def fill(ranked: Sequence[str], sizes: dict[str, int], budget: int) -> Shown:
    """Whole files, best first, while they fit in ``budget`` (one that does not fit is skipped)."""
    chosen: Shown = {}
    spent = 0
    for path in ranked:
        cost = sizes.get(path)
        if cost is not None and spent + cost <= budget:
            chosen[path] = None
            spent += cost
    return chosen


def fuse(*rankings: Sequence[str], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, path in enumerate(ranking, start=1):
            scores[path] = scores.get(path, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda p: (-scores[p], p))


class Project:
    """One source tree: its files, their exact sizes, a whole-file BM25 index and a repo map."""

    def __init__(self, root: Path, count: Any) -> None:
        self.root = root
        files = ProjectFiles(root, max_chars=1_000_000, encoding="utf-8", max_files=100_000)
        self.texts = {}
        listing = files.scan()[0]
        for path, _mtime, _size in listing:
            text = files.read(path).text
            if text is not None:
                self.texts[path] = text
        self.sizes = {path: count.count(text) for path, text in self.texts.items()}
        self.index = SearchIndex()
        for path, text in self.texts.items():
            self.index.add(path, path, text, tokens=self.sizes[path])
        self.map = RepoMap(root, count)
        self.map.refresh(listing)  # the source does not change during the run: no rescan per task
        self.builder: Any = None

    def bm25(self, text: str) -> list[str]:
        return [path for path, _score in self.index.search(tokenize(text))]


def evaluate(
    tasks: list[dict[str, Any]],
    cache: Path,
    budgets: Sequence[int],
    modes: Sequence[str] = MODES,
    budgeter: Any = None,
) -> dict[str, Any]:
    count = counter()
    try:
        from toolctx.fresh import ContextBuilder
    except ImportError:
        ContextBuilder = None  # type: ignore[assignment,misc]
    projects: dict[tuple[str, str], Project | None] = {}
    results: dict[str, dict[int, list[tuple[bool, float, bool | None]]]] = {}
    skipped: list[str] = []
    for task in tasks:
        release = version(task["repo"], task["number"])
        key = (task["repo"], release or "")
        if key not in projects:
            root = source(task["repo"], release, cache) if release else None
            projects[key] = Project(root, count) if root else None
        project = projects[key]
        if project is None:
            skipped.append(f"{task['id']} (no source)")
            continue
        changed = {p for p in task["changed"] if p in project.texts}
        lines = {p: {line.strip() for line in project.texts[p].split("\n")} for p in changed}
        anchored = {  # each hunk's anchors that this version of the file has; hunks with none are not checked
            p: [kept for anchors in task["hunks"].get(p, []) if (kept := [a for a in anchors if a in lines[p]])]
            for p in changed
        }
        if not changed:
            skipped.append(f"{task['id']} (changed files absent at {release})")
            continue
        issue = task["issue"]
        print(f"{task['id']} ({release})", file=sys.stderr, flush=True)
        wants_builder = any(m.startswith("builder") for m in modes)
        ways = _ways(project, issue, task["id"], ContextBuilder if wants_builder else None, budgeter)
        ways = {name: way for name, way in ways.items() if name in modes}
        for name, way in ways.items():
            for budget in budgets:
                got = way(budget)
                hit = changed & set(got)
                sites = None if name == "repo-map" else edit_sites_shown(anchored, got)
                row = (hit == changed, len(hit) / len(changed), sites)
                results.setdefault(name, {}).setdefault(budget, []).append(row)
    summary = {
        name: {
            budget: {
                "all_changed_files": statistics.fmean(a for a, _, _ in rows),
                "file_recall": statistics.fmean(r for _, r, _ in rows),
                **(
                    {"all_edit_sites": statistics.fmean(bool(e) for _, _, e in rows)}
                    if all(e is not None for _, _, e in rows)
                    else {}
                ),
            }
            for budget, rows in per_budget.items()
        }
        for name, per_budget in results.items()
    }
    return {
        "counter": getattr(count, "name", "?"),
        "tasks": len(tasks) - len(skipped),
        "skipped": skipped,
        "results": summary,
    }


def _ways(
    project: Project, issue: str, task_id: str, builder_class: Any, budgeter: Any = None
) -> dict[str, Callable[[int], Shown]]:
    """Each way of filling a context: budget -> the files it holds."""
    ranked = [p for p, _ in project.map.rank_files(issue, [])]
    bm25 = project.bm25(issue)
    ways: dict[str, Callable[[int], Shown]] = {
        "bm25-files": lambda b: fill(bm25, project.sizes, b),
        "repo-map": lambda b: dict.fromkeys(_mapped(project.map.render(issue, [], b))),
        "ranked": lambda b: fill(ranked, project.sizes, b),
        "fused": lambda b: fill(fuse(ranked, bm25), project.sizes, b),
    }
    if builder_class is not None:
        from toolctx.fresh import ContextOptions, TaskSpec

        if project.builder is None:  # one per project: its indexes are built once
            project.builder = builder_class(str(project.root), repo_map=project.map, budgeter=budgeter)
        builder = project.builder
        spec = TaskSpec(id=task_id, name=issue.split("\n", 1)[0][:200], description=issue)

        contexts: dict[int, Any] = {}

        def context(b: int) -> Any:
            if b not in contexts:
                contexts[b] = builder.build(spec, ContextOptions(max_tokens=b))
            return contexts[b]

        def built(b: int) -> Shown:
            """Files some of whose content is in the context, with the lines shown (None: whole)."""
            got: dict[str, list[str]] = {}
            whole: set[str] = set()
            for f in context(b).relevant_files:
                if f.truncated:
                    got.setdefault(f.path, []).append(f.content)
                else:
                    whole.add(f.path)
            for hit in context(b).relevant_code:
                got.setdefault(hit.path, []).append(hit.text)
            shown: Shown = {path: "\n".join(parts) for path, parts in got.items()}
            shown.update(dict.fromkeys(whole))
            return shown

        def built_whole(b: int) -> Shown:
            return {f.path: None for f in context(b).relevant_files if not f.truncated}

        ways["builder"] = built
        ways["builder-whole"] = built_whole
    return ways


def _mapped(text: str) -> set[str]:
    return {line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")}


def timing(cache: Path, release: str, runs: int) -> dict[str, Any]:
    """Cold and warm repo map on one Django release: wall and CPU seconds (CPU time does not count waiting
    for a core another process holds, so it is the steadier figure on a shared machine)."""
    root = source("django/django", release, cache)
    assert root is not None, "could not fetch Django's source"
    count = counter()
    task = "QuerySet.bulk_create() crashes on a model with a db_column that differs from the field name"
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    handed: list[tuple[float, float]] = []
    files = 0

    def clock(action: Callable[[], object]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        return time.perf_counter() - wall, time.process_time() - cpu

    for _ in range(runs):
        _tags._shared.clear()  # nothing parsed in this process any more
        repo_map = RepoMap(root, count)
        cold.append(clock(lambda repo_map=repo_map: repo_map.render(task, [], 2_000)))
        files = len(repo_map.tags())
        for _ in range(3):  # as a build asks: the ranking, then the map (each scans the project)
            warm.append(
                clock(lambda repo_map=repo_map: (repo_map.rank_files(task, []), repo_map.render(task, [], 2_000)))
            )
        repo_map.refresh(repo_map.files.scan()[0])
        for _ in range(3):  # the listing handed over once by whoever scanned for the build
            handed.append(
                clock(lambda repo_map=repo_map: (repo_map.rank_files(task, []), repo_map.render(task, [], 2_000)))
            )

    def median(rows: list[tuple[float, float]]) -> dict[str, float]:
        return {"wall_s": statistics.median(r[0] for r in rows), "cpu_s": statistics.median(r[1] for r in rows)}

    return {
        "release": release,
        "files": files,
        "counter": getattr(count, "name", "?"),
        "runs": runs,
        "cold_render": median(cold),
        "warm_rank_and_render": median(warm),
        "warm_rank_and_render_listing_handed": median(handed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", type=Path, help="the sessions file (JSON lines)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where sources are downloaded (outside the repo)")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--modes", default=",".join(MODES), help="which ways of filling a context to judge")
    parser.add_argument("--timing", action="store_true", help="time the repo map on Django instead")
    parser.add_argument("--release", default="3.2", help="the Django release line --timing uses")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--whole-fixed",
        action="store_true",
        help="the builder keeps the seed's reserve and fixed allocations whole while they fit "
        "(TokenBudgeter(max_reserved_share=1.0, max_fixed_share=1.0)), to measure excerpts alone",
    )
    args = parser.parse_args()
    if args.timing:
        print(json.dumps(timing(args.cache, args.release, args.runs), indent=2))
        return
    tasks = load_tasks(args.trace)
    if args.limit:
        tasks = tasks[: args.limit]
    budgeter = None
    if args.whole_fixed:
        from toolctx.fresh import TokenBudgeter

        budgeter = TokenBudgeter(counter=counter(), max_reserved_share=1.0, max_fixed_share=1.0)
    budgets = [int(b) for b in args.budgets.split(",")]
    report = evaluate(tasks, args.cache, budgets, args.modes.split(","), budgeter)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Real agent sessions replayed through the real framework loops, with and without toolctx.

    python bench/replay.py --traces ../shared/traces/dev.jsonl [--source S] [--limit N]
                           [--framework langchain|agents|both] [--jobs 2] [--json out.json]

Each recorded session (format: the README next to the trace file) runs through
LangChain's ``create_agent`` and the OpenAI Agents SDK's ``Runner.run``, once as is
and once with toolctx's adapter at its defaults (LangChain:
``ToolContextMiddleware()``; Agents SDK: ``persist_tools`` + ``read_context`` +
``compact_tool_outputs()``). A scripted model emits the recorded steps in order
and the turn's final reply; tools return the recorded outputs; each user message
of a multi-turn session is a new run on the same conversation (LangGraph:
``InMemorySaver`` and one ``thread_id``; Agents SDK: one in-memory
``SQLiteSession``). The model records exactly what it was given on every call
(the tool definitions as the framework's OpenAI converter writes them, the system
prompt, every message or input item), and everything is measured from that:

- tokens over all model calls and at the last call, exact o200k_base counts
  (bpe-openai, which ships the vocabulary), plus 3 tokens of framing per
  message and 3 per call;
- cache-weighted tokens: in each call, the leading units (tool definitions,
  system prompt, messages) identical to the previous call's count 0.1, the rest 1;
- tokens by kind: tool results, tool-call arguments, assistant text, system and
  user, tool definitions, the ``read_context`` definition, framing;
- restorability: every stand-in the model saw is read back through
  ``read_context`` and must equal its call's recorded output (or that output as
  redaction stored it);
- pairing and order errors in every model input;
- handles: drawn from a generator seeded by the session and framework, so a rerun shows the
  model the same handles and gives the same token counts to the token;
- how certain each total is: the 5th-95th percentile of the ratio (and of the share of needed values
  hidden) over the sessions resampled with replacement, what another set of as many sessions of the
  same kind could give;
- adapter CPU per tool call: thread CPU time inside the adapter's tool and model
  hooks (the tool and the model excluded), for sessions bucketed by length, and
  apart, the CPU storing what the tool hooks queued and nothing had read yet when
  the run ended.

Turns recorded with no final reply end after a tool result: the loop still calls
the model once more; that call gets an empty reply and is left out of the token
figures (it was never made). Tools have a short description and a permissive
schema built from the recorded arguments, since the recordings hold neither.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _replay_measure import KINDS, Figures, TokenCounter, as_json, median, o200k_counter
from _replay_trace import Trace, load_traces

from toolctx.testing import repeatable_ids

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
FRAMEWORKS = {"langchain": "LangChain create_agent", "agents": "Agents SDK Runner.run"}
BUCKETS = ((1, 10), (10, 50), (50, 100), (100, 200), (200, 10**9))

Replayer = Callable[..., Figures]  # (trace, with toolctx, count, options=CompactionSettings options)


def replayer(framework: str) -> Replayer:
    if framework == "langchain":
        from _replay_langchain import replay_langchain

        return replay_langchain
    if framework == "agents":
        from _replay_agents import replay_agents

        return replay_agents
    raise ValueError(f"unknown framework {framework!r}; use one of {sorted(FRAMEWORKS)}")


def replay_session(
    trace: Trace, framework: str, count: TokenCounter, options: dict[str, Any] | None = None
) -> tuple[Figures, Figures]:
    """One session through one framework: (without toolctx, with toolctx at ``options``, its defaults if None)."""
    run = replayer(framework)
    without = run(trace, False, count)
    repeatable_ids(f"{trace.id}/{framework}")  # (the same handles on every run: the same tokens)
    return without, run(trace, True, count, options=options or {})


# -- running -----------------------------------------------------------------------------------

_worker_count: TokenCounter | None = None


def _worker_start() -> None:
    global _worker_count
    _worker_count = o200k_counter()


def _worker_job(job: tuple[Trace, str, dict[str, Any]]) -> tuple[Figures, Figures]:
    assert _worker_count is not None
    return replay_session(job[0], job[1], _worker_count, job[2])


def run_all(
    traces: Sequence[Trace],
    frameworks: Sequence[str],
    jobs: int,
    progress: bool = True,
    options: dict[str, Any] | None = None,
) -> list[Figures]:
    """Every session through every framework, the longest first, on ``jobs`` processes (``options``: of
    ``CompactionSettings``, for the adapter)."""
    work = sorted(((t, f, options or {}) for t in traces for f in frameworks), key=lambda job: -len(job[0].calls))
    results: list[Figures] = []

    def done(pair: tuple[Figures, Figures]) -> None:
        results.extend(pair)
        if progress:
            print(f"\r{len(results) // 2}/{len(work)} session runs", end="", file=sys.stderr, flush=True)

    if jobs <= 1:
        count = o200k_counter()
        for trace, framework, chosen in work:
            done(replay_session(trace, framework, count, chosen))
    else:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_start) as pool:
            for pair in pool.map(_worker_job, work):
                done(pair)
    if progress:
        print(file=sys.stderr)
    return results


# -- summarising -------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


RESAMPLES = 2000  # resamplings of the sessions behind each interval (seeded: the same figures give the same one)


def spread(parts: Sequence[float], wholes: Sequence[float]) -> tuple[float, float]:
    """The 5th and 95th percentiles of sum(parts) / sum(wholes), one pair per session, over the sessions
    resampled with replacement.

    How far the ratio of another set of as many sessions of the same kind could fall: sessions differ
    much more from each other than a run differs from the next, so this is the figure's uncertainty.
    """
    rng = random.Random(0)
    ratios = []
    for _ in range(RESAMPLES):
        chosen = [rng.randrange(len(parts)) for _ in parts]
        total = sum(wholes[k] for k in chosen)
        if total:
            ratios.append(sum(parts[k] for k in chosen) / total)
    if not ratios:
        return (float("nan"), float("nan"))
    ratios.sort()
    return ratios[int(0.05 * (len(ratios) - 1))], ratios[int(0.95 * (len(ratios) - 1))]


def _metrics() -> list[tuple[str, Callable[[Figures], float]]]:
    """The token figures summarised, each with how to read it from one session's figures."""

    def kind_of(kind: str) -> Callable[[Figures], float]:
        return lambda f: f.by_kind.get(kind, 0)

    return [
        ("tokens", lambda f: f.tokens),
        ("last_call", lambda f: f.last_call),
        ("cache_weighted", lambda f: f.cache_weighted),
        *((f"kind:{kind}", kind_of(kind)) for kind in KINDS),
    ]


def summarize(figures: Iterable[Figures]) -> dict[str, Any]:
    """Figures per source and framework: totals, medians, ratios toolctx / without, CPU by session length."""
    groups: dict[tuple[str, str], dict[bool, dict[str, Figures]]] = {}
    for f in figures:
        groups.setdefault((f.source, f.framework), {False: {}, True: {}})[f.toolctx][f.trace] = f
    summary: dict[str, Any] = {}
    for (source, framework), by_variant in sorted(groups.items()):
        plain, reduced = by_variant[False], by_variant[True]
        ids = sorted(set(plain) & set(reduced))
        row: dict[str, Any] = {
            "source": source,
            "framework": framework,
            "sessions": len(ids),
            "tool_calls": sum(plain[i].tool_calls for i in ids),
            "model_calls": sum(plain[i].model_calls for i in ids),
        }
        for name, get in _metrics():
            without = sum(get(plain[i]) for i in ids)
            with_ = sum(get(reduced[i]) for i in ids)
            ratios = [r for i in ids if (r := _ratio(get(reduced[i]), get(plain[i]))) is not None]
            row[name] = {
                "without": without,
                "with": with_,
                "ratio": _ratio(with_, without),
                "median_without": median(get(plain[i]) for i in ids),
                "median_with": median(get(reduced[i]) for i in ids),
                "median_ratio": median(ratios) if ratios else None,
                "ratio_interval": spread([get(reduced[i]) for i in ids], [get(plain[i]) for i in ids]),
            }
        for variant, group in (("without", plain), ("with", reduced)):
            row[variant] = {
                "pairing_errors": sum(group[i].pairing_errors for i in ids),
                "order_errors": sum(group[i].order_errors for i in ids),
                "outputs_verbatim_at_last_call": sum(group[i].outputs_verbatim_at_last_call for i in ids),
                "stand_ins": sum(group[i].stand_ins for i in ids),
                "restored": sum(group[i].restored for i in ids),
                "restored_redacted": sum(group[i].restored_redacted for i in ids),
                "unrestorable": sum(len(group[i].unrestorable) for i in ids),
                "argument_stand_ins": sum(group[i].argument_stand_ins for i in ids),
                "arguments_restored": sum(group[i].arguments_restored for i in ids),
                "arguments_unrestorable": sum(len(group[i].arguments_unrestorable) for i in ids),
                "text_stand_ins": sum(group[i].text_stand_ins for i in ids),
                "texts_restored": sum(group[i].texts_restored for i in ids),
                "texts_unrestorable": sum(len(group[i].texts_unrestorable) for i in ids),
                "run_seconds": sum(group[i].run_seconds for i in ids),
                **_hidden(group[i] for i in ids),
            }
        hidden, needed = [reduced[i].hidden for i in ids], [reduced[i].needed for i in ids]
        row["with"]["hidden_share_interval"] = spread(hidden, needed)
        row["cpu_by_length"] = _cpu_by_length([reduced[i] for i in ids], plain)
        summary[f"{source} / {framework}"] = row
    return summary


def _hidden(runs: Iterable[Figures]) -> dict[str, Any]:
    """What the recorded next steps needed from earlier in the conversation, and the share of it not shown."""
    listed = list(runs)
    needed, hidden = sum(f.needed for f in listed), sum(f.hidden for f in listed)
    calls, calls_hidden = sum(f.calls_needing for f in listed), sum(f.calls_hidden for f in listed)
    by: dict[str, list[int]] = {}
    for f in listed:
        for key, (n, h) in f.needed_by.items():
            pair = by.setdefault(key, [0, 0])
            pair[0] += n
            pair[1] += h
    shares = [f.hidden / f.needed for f in listed if f.needed]
    return {
        "needed": needed,
        "hidden": hidden,
        "hidden_share": _ratio(hidden, needed),
        "hidden_share_median": median(shares) if shares else None,
        "hidden_share_range": (min(shares), max(shares)) if shares else None,
        "calls_needing": calls,
        "calls_hidden": calls_hidden,
        "items_hidden": sum(f.items_hidden for f in listed),
        "needed_by": dict(sorted(by.items())),
    }


def _cpu_by_length(runs: Sequence[Figures], plain: Mapping[str, Figures]) -> list[dict[str, Any]]:
    """Per bucket of session length: the hooks' CPU, and the same run's reference: the framework's own loop
    without toolctx (``plain``, by trace id), and how much more CPU the loop took with it."""
    rows = []
    for low, high in BUCKETS:
        inside = [f for f in runs if low <= f.tool_calls < high]
        if not inside:
            continue
        calls = sum(f.tool_calls for f in inside)
        framework = [plain[f.trace].loop_cpu / f.tool_calls for f in inside]
        added = [(f.loop_cpu - plain[f.trace].loop_cpu) / f.tool_calls for f in inside]
        hooks = [f.hook_cpu_per_tool_call / reference for f, reference in zip(inside, framework, strict=True)]
        rows.append(
            {
                "tool_calls": f"{low}-{high - 1}" if high < 10**9 else f"{low}+",
                "sessions": len(inside),
                "median_us_per_tool_call": median(f.hook_cpu_per_tool_call for f in inside) * 1e6,
                "tool_hook_us_per_call": sum(f.hook_cpu_tool for f in inside) / calls * 1e6,
                "model_hook_us_per_call": sum(f.hook_cpu_model for f in inside) / calls * 1e6,
                "stored_after_us_per_call": sum(f.stored_after for f in inside) / calls * 1e6,
                "wall_us_per_call": sum(f.hook_wall for f in inside) / calls * 1e6,
                "framework_us_per_call": median(framework) * 1e6,
                "loop_added_us_per_call": median(added) * 1e6,
                "hooks_to_framework": median(hooks),
            }
        )
    return rows


# -- printing ----------------------------------------------------------------------------------


def _n(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def render(summary: dict[str, Any]) -> str:
    """Markdown: one table per source and framework, then adapter CPU by session length."""
    out: list[str] = []
    for row in summary.values():
        out += [
            f"### {row['source']}, {FRAMEWORKS.get(row['framework'], row['framework'])}",
            "",
            f"{row['sessions']} sessions, {row['tool_calls']:,} tool calls, {row['model_calls']:,} model calls.",
            "",
            "| figure | without toolctx | with toolctx | toolctx / without |",
            "|---|---:|---:|---:|",
        ]
        for key, label in (
            ("tokens", "tokens over all model calls"),
            ("last_call", "tokens at the last call"),
            ("cache_weighted", "cache-weighted tokens"),
        ):
            t = row[key]
            out.append(f"| {label}, total | {_n(t['without'])} | {_n(t['with'])} | {_n(t['ratio'], 3)} |")
            low, high = t["ratio_interval"]
            out.append(f"| ...90 % interval, sessions resampled | | | {low:.3f}-{high:.3f} |")
            out.append(
                f"| {label}, median per session | {_n(t['median_without'])} | {_n(t['median_with'])} "
                f"| {_n(t['median_ratio'], 3)} (median of ratios) |"
            )
        for kind in KINDS:
            t = row[f"kind:{kind}"]
            out.append(f"| all calls: {kind} | {_n(t['without'])} | {_n(t['with'])} | {_n(t['ratio'], 3)} |")
        w, r = row["without"], row["with"]
        out += [
            f"| stand-ins seen (distinct) | {w['stand_ins']:,} | {r['stand_ins']:,} | |",
            f"| ...restored exactly / as redacted / unrestorable | – | {r['restored']:,} / "
            f"{r['restored_redacted']:,} / {r['unrestorable']:,} | |",
            f"| argument stand-ins seen (distinct) / restored exactly / unrestorable | {w['argument_stand_ins']:,} "
            f"| {r['argument_stand_ins']:,} / {r['arguments_restored']:,} / {r['arguments_unrestorable']:,} | |",
            f"| assistant text stand-ins seen (distinct) / restored exactly / unrestorable | {w['text_stand_ins']:,} "
            f"| {r['text_stand_ins']:,} / {r['texts_restored']:,} / {r['texts_unrestorable']:,} | |",
            f"| recorded outputs verbatim in the last call | {w['outputs_verbatim_at_last_call']:,} "
            f"| {r['outputs_verbatim_at_last_call']:,} | |",
            f"| pairing errors / order errors | {w['pairing_errors']} / {w['order_errors']} "
            f"| {r['pairing_errors']} / {r['order_errors']} | |",
            f"| replay time, s | {w['run_seconds']:,.1f} | {r['run_seconds']:,.1f} | |",
            *_render_hidden(w, r),
            "",
        ]
    out += [
        "### Adapter CPU per tool call (both hooks), by session length",
        "",
        "| source, framework | tool calls per session | sessions | median µs per tool call | tool hook µs "
        "| model hook µs | wall µs | stored after the run µs | framework's loop without toolctx µs "
        "| loop CPU added µs | hooks / framework |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in summary.values():
        for b in row["cpu_by_length"]:
            out.append(
                f"| {row['source']}, {row['framework']} | {b['tool_calls']} | {b['sessions']} "
                f"| {b['median_us_per_tool_call']:,.0f} | {b['tool_hook_us_per_call']:,.0f} "
                f"| {b['model_hook_us_per_call']:,.0f} | {b['wall_us_per_call']:,.0f} "
                f"| {b['stored_after_us_per_call']:,.1f} | {b['framework_us_per_call']:,.0f} "
                f"| {b['loop_added_us_per_call']:,.0f} | x{b['hooks_to_framework']:.2f} |"
            )
    return "\n".join(out) + "\n"


def _share(hidden: int, needed: int) -> str:
    return f"{hidden:,} of {needed:,} ({100 * hidden / needed:.1f} %)" if needed else "–"


def _render_hidden(w: dict[str, Any], r: dict[str, Any]) -> list[str]:
    """Rows: needed values hidden, in all, per session, per model call, by kind and by source."""
    rows = [
        f"| values the next step needs, hidden | {_share(w['hidden'], w['needed'])} "
        f"| {_share(r['hidden'], r['needed'])} | |",
    ]
    if r["needed"]:
        low, high = r["hidden_share_interval"]
        rows.append(f"| ...90 % interval, sessions resampled | | {100 * low:.1f}-{100 * high:.1f} % | |")
    if r["hidden_share_median"] is not None:
        low, high = r["hidden_share_range"]
        rows.append(
            f"| ...per session: median (range) | | {100 * r['hidden_share_median']:.1f} % "
            f"({100 * low:.1f}-{100 * high:.1f} %) | |"
        )
    rows += [
        f"| model calls that need a value, with one hidden | {_share(w['calls_hidden'], w['calls_needing'])} "
        f"| {_share(r['calls_hidden'], r['calls_needing'])} | |",
        f"| outputs, arguments and texts holding a hidden value (read-backs needed, at least) "
        f"| {w['items_hidden']:,} | {r['items_hidden']:,} | |",
    ]
    for key, (needed, hidden) in r["needed_by"].items():
        label = key.split(":", 1)[1]
        rows.append(f"| ...{label} | | {_share(hidden, needed)} | |")
    return rows


def machine() -> dict[str, Any]:
    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        cpu = next(
            (line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if "model name" in line), ""
        )
    versions: dict[str, str | None] = {}
    for package in ("langchain", "langchain-core", "langgraph", "openai-agents", "bpe-openai"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    import toolctx

    source = Path(toolctx.__file__).resolve().parent
    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "toolctx": str(source),
        "toolctx_commit": commit.stdout.strip() or None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="at most N sessions of each source")
    parser.add_argument("--framework", choices=[*FRAMEWORKS, "both"], default="both")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--json", type=Path, default=None, help="write every session's figures here")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a CompactionSettings option (JSON value)"
    )
    args = parser.parse_args(argv)
    options = {name: json.loads(value) for name, _, value in (item.partition("=") for item in args.set)}

    started = time.perf_counter()
    before = machine()
    traces = load_traces(args.traces, args.source, args.limit)
    if not traces:
        raise SystemExit(f"no sessions in {args.traces} for sources {args.source or 'any'}")
    frameworks = list(FRAMEWORKS) if args.framework == "both" else [args.framework]
    figures = run_all(traces, frameworks, args.jobs, options=options)
    summary = summarize(figures)
    runtime = time.perf_counter() - started
    print(render(summary))
    print(f"{len(traces)} sessions, {', '.join(frameworks)}; {runtime:,.0f} s with {args.jobs} worker processes.")
    if options:
        print(f"CompactionSettings options: {options}")
    if args.json is not None:
        report = {
            "command": " ".join(sys.argv),
            "runtime_seconds": runtime,
            "jobs": args.jobs,
            "options": options,
            "machine": before,
            "load_average_after": os.getloadavg(),
            "summary": summary,
            "sessions": [as_json(f) for f in figures],
        }
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()

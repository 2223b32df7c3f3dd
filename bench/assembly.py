"""The context assembler: prepare() speed, real sessions driven through it, and prompt-cache reuse by order.

    python bench/assembly.py [--traces ../shared/traces/dev.jsonl] [--source S] [--limit N] [--jobs 2]
                             [--adapters langchain|agents|both|none] [--rounds 200] [--busy-rounds 7]
                             [--skip-replay] [--skip-speed] [--json out.json]

1. Speed: ``prepare()`` on a 500-message history (250 tool calls with their
   results) with three plugins (PlanPlugin, MemoryPlugin over a SQLite memory of
   40 items, ToolOutputPlugin), exact o200k counts, timed inside a running event
   loop (wall and thread CPU time). "Nothing to compact": the next tool call and its
   result, then prepare(), on a 128k budget (``--rounds`` runs, a new assembler
   every 10, so the history holds 503-521 messages); "compacting": a running assembler (the policy compacted
   old outputs along the way) whose budget drops to 6,000, so the history goes to a
   stored span; the worst case: the first batch of every old output at once
   (``--busy-rounds`` runs each, a new assembler for each). Medians; the reference,
   measured in the same run, is counting the same 500 messages once with the same
   counter (what re-measuring without a cache costs).
2. Real sessions: each recorded session of the trace file runs through a plain
   chat loop (OpenAI chat messages, no toolctx) and the same loop with a
   ContextAssembler (128k budget, the default proactive strategy, a
   ToolOutputPlugin at the policy's defaults, results stored through
   ``add_tool_result``). Every model call's input is measured with the replay's
   own measure (``bench/_replay_measure.py``: exact o200k tokens, cache-weighted
   tokens, pairing and order errors, every stand-in read back). In the same run,
   on the same sessions and in the same worker pool, the framework adapters at
   their defaults (``bench/replay.py``'s LangChain and Agents SDK replays, each
   against its own loop without toolctx), so the ratios compare like with like.
3. Cache reuse by order: the coding sessions again, with a PlanPlugin whose next
   task is marked done every 10 tool calls: cache-weighted tokens with the
   assembler's order (components last) against the same content with the
   components in the system message (their usual place).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _replay_measure import (
    ASSISTANT_TEXT,
    CALL_ARGUMENTS,
    READ_ALL,
    SYSTEM_AND_USER,
    TOOL_DEFINITIONS,
    TOOL_RESULTS,
    TOOLCTX_DEFINITIONS,
    Figures,
    ModelInput,
    TokenCounter,
    Unit,
    as_json,
    measure,
    o200k_counter,
    read_back_text,
)
from _replay_needs import needed_values
from _replay_trace import Trace, args_schemas, load_traces, recorded_texts
from replay import DEFAULT_TRACES, FRAMEWORKS, machine, render, replay_session, summarize

import toolctx
from toolctx.assembly import CONTEXT_ID, SYSTEM_ID, ContextAssembler, MemoryPlugin, PlanPlugin, ToolOutputPlugin

FRAMEWORK = "assembler"


# -- units: what one model call is sent, in the replay's measure ----------------------------------


def _units(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> tuple[Unit, ...]:
    definitions = tuple(
        (TOOLCTX_DEFINITIONS if t["function"]["name"] == "read_context" else TOOL_DEFINITIONS, json.dumps(t))
        for t in tools
    )
    units = [Unit("tools", definitions)]
    for m in messages:
        if m["role"] == "tool":
            units.append(Unit("tool", ((TOOL_RESULTS, m["content"]),), answers=m["tool_call_id"]))
        elif m["role"] == "assistant":
            parts: list[tuple[str, str]] = [(ASSISTANT_TEXT, m["content"])] if m.get("content") else []
            calls = m.get("tool_calls") or []
            for c in calls:
                parts += [(CALL_ARGUMENTS, c["function"]["name"]), (CALL_ARGUMENTS, c["function"]["arguments"])]
            units.append(Unit("assistant", tuple(parts), calls=tuple(c["id"] for c in calls)))
        else:
            units.append(Unit("user" if m["role"] == "user" else "system", ((SYSTEM_AND_USER, m["content"]),)))
    return tuple(units)


def _tools(trace: Trace) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": n, "description": f"Recorded tool {n}.", "parameters": s}}
        for n, s in args_schemas(trace).items()
    ]


def replay_plain(trace: Trace, count: TokenCounter) -> Figures:
    """The session through a plain chat loop: every message sent as it is."""
    started = time.perf_counter()
    tools = _tools(trace)
    messages: list[dict[str, Any]] = [{"role": "system", "content": trace.system}] if trace.system else []
    inputs: list[ModelInput] = []
    for turn in trace.turns:
        messages.append({"role": "user", "content": turn.user})
        for step in turn.steps:
            inputs.append(ModelInput(_units(messages, tools)))
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)},
                }
                for c in step.calls
            ]
            messages.append({"role": "assistant", "content": step.text or None, "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c.id, "content": c.output} for c in step.calls]
        inputs.append(ModelInput(_units(messages, tools), extra=turn.final is None))
        messages.append({"role": "assistant", "content": turn.final or ""})
    figures = Figures(trace.id, trace.source, FRAMEWORK, False, tool_calls=len(trace.calls))
    measure(figures, inputs, {c.id: c.output for c in trace.calls}, count, needs=needed_values(trace))
    figures.run_seconds = time.perf_counter() - started
    return figures


async def _drive(trace: Trace, ctx: ContextAssembler, plan: PlanPlugin | None) -> list[tuple[Any, bool]]:
    prepared_calls = []
    done = 0
    for turn in trace.turns:
        ctx.set_current_input(turn.user)
        for step in turn.steps:
            prepared_calls.append((await ctx.prepare(), False))
            calls = [{"id": c.id, "name": c.name, "arguments": c.args} for c in step.calls]
            ctx.add_message("assistant", step.text, tool_calls=calls)
            for c in step.calls:
                ctx.add_tool_result(c.id, c.output)
                done += 1
                if plan is not None and done % 10 == 0:
                    pending = plan.executable_tasks()
                    if pending:
                        plan.update_task_status(pending[0].id, "completed")
        prepared_calls.append((await ctx.prepare(), turn.final is None))
        ctx.add_message("assistant", turn.final or "")
    return prepared_calls


def replay_assembler(trace: Trace, count: TokenCounter) -> Figures:
    """The session through the same loop with a ContextAssembler preparing every call."""
    started = time.perf_counter()
    figures = Figures(trace.id, trace.source, FRAMEWORK, True, tool_calls=len(trace.calls))
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as s:
        outputs = ToolOutputPlugin(session=s)
        ctx = ContextAssembler(session=s, system_prompt=trace.system, tools=_tools(trace), plugins=[outputs])
        calls = asyncio.run(_drive(trace, ctx, None))
        inputs = [ModelInput(_units(p.to_openai(), p.tools), extra=extra) for p, extra in calls]

        def read(handle: str, part: str = "result") -> str | None:
            return read_back_text(outputs.read(handle, 0, READ_ALL, part))

        redact = s.redactor.redact_text if s.redactor is not None else None
        arguments = {c.id: c.args for c in trace.calls}
        texts = recorded_texts(trace)
        outputs_of = {c.id: c.output for c in trace.calls}
        measure(figures, inputs, outputs_of, count, read, redact, arguments, texts, needed_values(trace))
        for span in ctx.spans:  # compacted history: every message restorable
            stored = ctx.expand(span.handle)
            if [m.id for m in stored] != [i for i in span.message_ids if not i.endswith(":missing")]:
                figures.unrestorable.append(span.handle)
    figures.run_seconds = time.perf_counter() - started
    return figures


def cache_by_order(trace: Trace, count: TokenCounter) -> dict[str, float]:
    """Cache-weighted tokens with the components last (the assembler's order) and in the system message."""
    tasks = [{"id": str(i), "description": f"step {i} of the fix"} for i in range(1 + len(trace.calls) // 10)]
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as s:
        plan = PlanPlugin({"goal": "resolve the issue", "tasks": tasks})
        ctx = ContextAssembler(session=s, system_prompt=trace.system, tools=_tools(trace))
        ctx.register_plugin(ToolOutputPlugin(session=s))
        ctx.register_plugin(plan)
        calls = asyncio.run(_drive(trace, ctx, plan))
    results: dict[str, float] = {}
    for order in ("components last", "components in the system message"):
        inputs = []
        for prepared, extra in calls:
            messages = prepared.to_openai()
            if order != "components last" and prepared.messages[-1].id == CONTEXT_ID:
                block = messages.pop()["content"]
                if prepared.messages[0].id == SYSTEM_ID:
                    messages[0] = {"role": "system", "content": messages[0]["content"] + "\n\n" + block}
                else:
                    messages.insert(0, {"role": "system", "content": block})
            inputs.append(ModelInput(_units(messages, prepared.tools), extra=extra))
        figures = measure(Figures(trace.id, trace.source, order, True), inputs, {}, count)
        results[order] = figures.cache_weighted
        results[f"{order}: tokens"] = figures.tokens
    return results


# -- speed ------------------------------------------------------------------------------------------


def _history(ctx: ContextAssembler, calls: int, prepare: ContextAssembler | None = None) -> None:
    """A coding session of ``calls`` tool calls; with ``prepare``, a model call before each, as a loop makes."""
    ctx.set_current_input("Find why the tests fail and fix it.")
    for i in range(calls):
        if prepare is not None:
            asyncio.run(prepare.prepare())
        _step(ctx, i)


def _step(ctx: ContextAssembler, i: int) -> None:
    """Tool call ``i`` of the coding session: the assistant's message with the call, and its result."""
    args = {"command": f"grep -rn 'def handler_{i}' src/ | head -40"}
    ctx.add_message(
        "assistant", f"Looking at part {i}.", tool_calls=[{"id": f"c{i}", "name": "bash", "arguments": args}]
    )
    ctx.add_tool_result(
        f"c{i}", "".join(f"src/mod_{i}/file_{j}.py:{j * 7}: def handler_{i}(x): return x\n" for j in range(12))
    )


def _timed(work: Any) -> tuple[float, float]:
    """(wall, thread CPU) seconds of ``work()``: CPU time is the steadier one on a shared machine."""
    started, cpu = time.perf_counter(), time.thread_time()
    work()
    return time.perf_counter() - started, time.thread_time() - cpu


def _prepared(ctx: ContextAssembler, compacted: bool) -> tuple[float, float]:
    """(wall, thread CPU) seconds of one ``prepare()``, timed inside the event loop (``asyncio.run`` left out)."""

    async def timed() -> tuple[float, float]:
        started, cpu = time.perf_counter(), time.thread_time()
        prepared = await ctx.prepare()
        spent = time.perf_counter() - started, time.thread_time() - cpu
        assert prepared.compacted is compacted
        assert prepared.budget.used <= prepared.budget.limit
        return spent

    return asyncio.run(timed())


def _figures(name: str, runs: list[tuple[float, float]]) -> dict[str, float]:
    return {
        f"{name}_ms": statistics.median(w for w, _ in runs) * 1e3,
        f"{name}_min_ms": min(w for w, _ in runs) * 1e3,
        f"{name}_cpu_ms": statistics.median(c for _, c in runs) * 1e3,
    }


def speed(rounds: int, busy_rounds: int) -> dict[str, Any]:
    from toolctx.memory import MemoryStore
    from toolctx.tokens import get_counter

    counter = get_counter("o200k_base")
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(Path(tmp) / "ctx") as s:
        store = MemoryStore(f"sqlite:///{tmp}/memory.db")
        memory = store.agent("bench")
        for n in range(40):
            memory.save("TASK" if n % 2 else "CODE", f"item {n}: " + "remember this detail " * 8)

        def assembler(
            max_tokens: int, outputs: ToolOutputPlugin | None = None, steps: bool = False
        ) -> ContextAssembler:
            ctx = ContextAssembler(max_tokens=max_tokens, session=s, counter=counter, system_prompt="You fix bugs.")
            ctx.register_plugin(
                PlanPlugin({"goal": "fix", "tasks": [{"id": str(i), "description": f"task {i}"} for i in range(8)]})
            )
            ctx.register_plugin(MemoryPlugin(memory))
            ctx.register_plugin(outputs or ToolOutputPlugin(session=s, high_water=10**9))
            _history(ctx, 250, ctx if steps else None)
            return ctx

        quiet: list[tuple[float, float]] = []
        while len(quiet) < rounds:  # a new assembler every 10 calls, so the history stays near 500 messages
            ctx = assembler(128_000)
            asyncio.run(ctx.prepare())
            for i in range(min(10, rounds - len(quiet))):
                _step(ctx, 250 + i)  # the next tool call and its result, as a loop adds them
                quiet.append(_prepared(ctx, compacted=False))
        # compacting, the usual way: a running assembler (the policy compacted old outputs along the way)
        # whose budget no longer holds the context, so the history is compacted restorably
        busy: list[tuple[float, float]] = []
        for _ in range(busy_rounds):
            running = assembler(128_000, ToolOutputPlugin(session=s), steps=True)
            running.update_config(max_tokens=6_000)
            busy.append(_prepared(running, compacted=True))
        # the worst case: one batch of every old output at once (the policy never ran before)
        batch: list[tuple[float, float]] = []
        for _ in range(busy_rounds):
            fresh = assembler(128_000, ToolOutputPlugin(session=s, high_water=10**9))
            asyncio.run(fresh.prepare())
            fresh.update_config(max_tokens=20_000)
            batch.append(_prepared(fresh, compacted=True))
        history = ctx.get_history()

        def recount() -> None:
            sum(
                counter.count(m.content) + sum(counter.count(json.dumps(c.arguments)) for c in m.tool_calls)
                for m in history
            )

        reference = [_timed(recount) for _ in range(rounds)]
        used = fresh.get_budget().used
        store.close()
    return {
        "messages": len(history),
        **_figures("prepare_nothing_to_compact", quiet),
        **_figures("prepare_compacting", busy),
        **_figures("prepare_first_batch_of_247_outputs", batch),
        **_figures("recount_500_messages", reference),
        "tokens_after_compacting": used,
        "load_average": os.getloadavg(),
        "rounds": rounds,
        "busy_rounds": busy_rounds,
    }


# -- running ----------------------------------------------------------------------------------------

_count: TokenCounter | None = None


def _start() -> None:
    global _count
    _count = o200k_counter()


def _job(job: tuple[Trace, str]) -> tuple[list[Figures], dict[str, float] | None]:
    """One session through one driver: the assembler (with the cache-by-order check) or a framework adapter."""
    assert _count is not None
    trace, driver = job
    if driver != FRAMEWORK:
        return list(replay_session(trace, driver, _count)), None
    cache = cache_by_order(trace, _count) if trace.source.startswith("mini-swe") else None
    return [replay_plain(trace, _count), replay_assembler(trace, _count)], cache


def _ratio(row: dict[str, Any], key: str) -> str:
    figure = row[key]
    return f"{figure['ratio']:.3f} ({figure['median_ratio']:.3f})" if figure["ratio"] is not None else "–"


def comparison(summary: dict[str, Any], drivers: Sequence[str]) -> str:
    """Markdown: per source, the assembler against the adapters of the same run, each against its own plain loop."""
    out: list[str] = []
    for source in sorted({row["source"] for row in summary.values()}):
        rows = [summary[k] for d in drivers if (k := f"{source} / {d}") in summary]
        out += [
            f"#### {source}: {rows[0]['sessions']} sessions, {rows[0]['model_calls']:,} model calls",
            "",
            "| ratio to no toolctx, total (median per session) | " + " | ".join(r["framework"] for r in rows) + " |",
            "|---|" + "---:|" * len(rows),
        ]
        for key, label in (
            ("tokens", "tokens over all calls"),
            ("cache_weighted", "cache-weighted tokens"),
            ("last_call", "tokens at the last call"),
            (f"kind:{TOOLCTX_DEFINITIONS}", "`read_context` definition, tokens over all calls"),
        ):
            if key.startswith("kind:"):
                out.append(f"| {label} | " + " | ".join(f"{r[key]['with']:,}" for r in rows) + " |")
            else:
                out.append(f"| {label} | " + " | ".join(_ratio(r, key) for r in rows) + " |")
        out.append(
            "| stand-ins: results / arguments / assistant texts | "
            + " | ".join(
                f"{r['with']['stand_ins']:,} / {r['with']['argument_stand_ins']:,} / {r['with']['text_stand_ins']:,}"
                for r in rows
            )
            + " |"
        )
        out.append(
            "| values the next step needs, hidden | "
            + " | ".join(
                f"{r['with']['hidden']:,} of {r['with']['needed']:,} ({100 * (r['with']['hidden_share'] or 0):.1f} %)"
                for r in rows
            )
            + " |"
        )
        out.append(
            "| unrestorable stand-ins; pairing + order errors | "
            + " | ".join(
                f"{r['with']['unrestorable'] + r['with']['arguments_unrestorable'] + r['with']['texts_unrestorable']}; "
                f"{r['with']['pairing_errors'] + r['with']['order_errors']}"
                for r in rows
            )
            + " |"
        )
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--source", action="append", default=[])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rounds", type=int, default=200, help="runs of the nothing-to-compact case")
    parser.add_argument("--busy-rounds", type=int, default=7, help="runs of each compacting case")
    parser.add_argument(
        "--adapters",
        choices=[*FRAMEWORKS, "both", "none"],
        default="both",
        help="framework adapters replayed in the same run, for the comparison",
    )
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "machine": machine(),
    }
    if not args.skip_speed:
        report["speed"] = speed(args.rounds, args.busy_rounds)
        print(json.dumps(report["speed"], indent=1))
    if not args.skip_replay:
        traces = load_traces(args.traces, args.source, args.limit)
        adapters = {"both": list(FRAMEWORKS), "none": []}.get(args.adapters, [args.adapters])
        drivers = [FRAMEWORK, *adapters]
        work = sorted(((t, d) for t in traces for d in drivers), key=lambda job: -len(job[0].calls))
        started = time.perf_counter()
        figures: list[Figures] = []
        caches: list[dict[str, float]] = []
        with ProcessPoolExecutor(max_workers=args.jobs, initializer=_start) as pool:
            for done, (session, cache) in enumerate(pool.map(_job, work), 1):
                figures += session
                if cache is not None:
                    caches.append(cache)
                print(f"\r{done}/{len(work)} session runs", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        summary = summarize(figures)
        print(render(summary))
        print(comparison(summary, drivers))
        orders = {k: sum(c[k] for c in caches) for k in caches[0]} if caches else {}
        print("cache by order (coding sessions with a plan):", json.dumps(orders, indent=1))
        report.update(summary=summary, cache_by_order=orders, replay_seconds=time.perf_counter() - started)
        report["sessions"] = [as_json(f) for f in figures]
        report["unrestorable"] = sum(len(f.unrestorable) + len(f.arguments_unrestorable) for f in figures)
    report["load_average_after"] = os.getloadavg()
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()

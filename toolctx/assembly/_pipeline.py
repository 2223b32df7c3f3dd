"""One model call's preparation: build the parts, measure them exactly, compact by priority, re-measuring.

The pipeline works on a :class:`Draft`: the history as the plugins show it (tool
outputs as stand-ins), paired, with the compacted spans replaced by markers; the
plugins' components; the tool definitions. Each compaction step changes one part,
and the draft is measured again before the next one, so the log says what each
step really freed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolctx.assembly._history import MARKER_BOUND, HistorySpan, make_span, merge_spans, shown_with_spans
from toolctx.assembly._measure import FRAMING, REPLY_PRIMING
from toolctx.assembly._pairing import Pairing, block_at
from toolctx.assembly._plugins import compact_plugin, component_of, maybe_await, prepared_hook
from toolctx.assembly._render import PreparedContext, context_block, sequence
from toolctx.assembly._strategies import Candidate, CompactionPlan, StrategyInput
from toolctx.assembly._tool_outputs import READ_CONTEXT_DEFINITION, ToolOutputPlugin
from toolctx.assembly._types import (
    HISTORY,
    CompactionStep,
    Component,
    ContextBudget,
    ContextBudgetError,
    HistoryMessage,
)
from toolctx.compaction import READ_CONTEXT

# The ContextAssembler whose parts these functions work on; not imported, since it imports this module.
ContextAssembler = Any

__all__ = ["Draft", "prepare"]


@dataclass
class Draft:
    view: list[HistoryMessage]  # the history as the plugins show it, paired
    components: dict[str, Component]  # by plugin name, in registration order
    tools: list[dict[str, Any]]
    omitted: set[str] = field(default_factory=set)  # components left out of this call (last resort)
    repairs: int = 0
    shown: list[HistoryMessage] = field(default_factory=list)
    messages: list[HistoryMessage] = field(default_factory=list)
    budget: ContextBudget | None = None


async def _view(a: ContextAssembler) -> tuple[list[HistoryMessage], int]:
    view: Sequence[HistoryMessage] = a._history
    for plugin in a._plugins.values():
        hook = getattr(plugin, "history_view", None)
        if hook is None:
            continue
        try:
            view = list(await maybe_await(hook(view)))
        except Exception as exc:
            a._plugin_failed(plugin.name, "history_view", exc)
    pairing: Pairing = a._pairing
    return pairing(view)


async def _component(a: ContextAssembler, plugin: Any) -> Component | None:
    try:
        return await component_of(plugin)
    except Exception as exc:
        a._plugin_failed(plugin.name, "get_component", exc)
        return None


def _tools(a: ContextAssembler) -> list[dict[str, Any]]:
    """The caller's tool definitions, then the plugins' (a name already defined is not sent twice)."""
    tools = list(a._tools)
    names = {_tool_name(t) for t in tools}
    for plugin in a._plugins.values():
        hook = getattr(plugin, "tool_definitions", None)
        if hook is None:
            continue
        try:
            added = [t for t in hook() if _tool_name(t) not in names]
        except Exception as exc:
            a._plugin_failed(plugin.name, "tool_definitions", exc)
            continue
        tools.extend(added)
        names.update(_tool_name(t) for t in added)
    if a._spans and READ_CONTEXT not in names and any(isinstance(p, ToolOutputPlugin) for p in a._plugins.values()):
        # A history marker names read_context: the plugin that reads it back offers it, stand-ins or not.
        tools.append(READ_CONTEXT_DEFINITION)
    return tools


def _tool_name(definition: Any) -> Any:
    return definition.get("function", definition).get("name")


async def build(a: ContextAssembler) -> Draft:
    view, repairs = await _view(a)
    components: dict[str, Component] = {}
    for plugin in a._plugins.values():
        found = await _component(a, plugin)
        if found is not None:
            components[plugin.name] = found
    draft = Draft(view, components, _tools(a), repairs=repairs)
    measure(a, draft)
    return draft


def _protected_ids(a: ContextAssembler, shown: Sequence[HistoryMessage], spans: Sequence[HistorySpan]) -> set[str]:
    ids = {m.id for m in shown if m.pinned}
    ids.update(f"{s.handle}:marker" for s in spans)
    if a._current is not None:
        ids.add(a._current)
    return ids


def _protected_sizes(a: ContextAssembler, shown: Sequence[HistoryMessage], pinned: list[int]) -> tuple[int, int]:
    """Tokens of the blocks holding a pinned message (``pinned``: their indices) or the current input, and of the
    current input's own block.

    Found from those messages (the blocks around them), not by walking every block of the history.
    """
    m = a._measure
    indices = list(pinned)
    current_at = -1
    if a._current is not None:
        current_at = _index_of(shown, a._current, a._current_at)
        if current_at >= 0:
            a._current_at = current_at
            indices.append(current_at)
    seen: set[int] = set()
    protected = current = 0
    for index in indices:
        start, end = block_at(shown, index)
        if start in seen:
            continue
        seen.add(start)
        size = m.messages(shown[start:end])
        protected += size
        if start == current_at:
            current = size
    return protected, current


def _index_of(shown: Sequence[HistoryMessage], message_id: str, hint: int) -> int:
    """Where the message ``message_id`` is in ``shown`` (looked for at ``hint`` first, then from the end), or -1."""
    if 0 <= hint < len(shown) and shown[hint].id == message_id:
        return hint
    for i in range(len(shown) - 1, -1, -1):
        if shown[i].id == message_id:
            return i
    return -1


def measure(a: ContextAssembler, draft: Draft) -> ContextBudget:
    """Shown history, message list and budget of ``draft``, exactly counted."""
    m = a._measure
    draft.shown = shown_with_spans(draft.view, a._spans)
    system = a._system_message()
    included = [c for name, c in draft.components.items() if name not in draft.omitted]
    block = a._context_message(context_block(included)) if included else None
    draft.messages = sequence(system, draft.shown, block)
    tools = m.tools(draft.tools)
    by_part = {"tools": tools, "system": m.message(system) if system else 0}
    history, pinned_at = m.history(draft.shown)
    pinned, current = _protected_sizes(a, draft.shown, pinned_at)
    by_part[HISTORY] = history - current
    by_part["current_input"] = current
    context = m.message(block) if block is not None else 0
    for c in included:
        by_part[c.name] = m.text(c.content)
    fixed = [c for c in included if c.protected]
    floor_context = m.text(context_block(fixed)) + FRAMING if fixed else 0
    used = REPLY_PRIMING + tools + by_part["system"] + history + context
    floor = REPLY_PRIMING + tools + by_part["system"] + pinned + floor_context
    if a._spans or history > pinned:  # room for one marker of the compacted history
        floor += m.message(MARKER_BOUND)
    draft.budget = ContextBudget(
        limit=a._config.limit, used=used, floor=floor, status=a._config.status(used), by_part=by_part
    )
    return draft.budget


def _candidates(a: ContextAssembler, draft: Draft) -> list[Candidate]:
    assert draft.budget is not None
    found = [
        Candidate(p.name, p.priority, draft.budget.by_part.get(p.name, 0))
        for p in a._plugins.values()
        if p.compactable and p.priority > 0 and callable(getattr(p, "compact", None))
    ]
    found.append(Candidate(HISTORY, a._config.history_priority, draft.budget.by_part[HISTORY]))
    return sorted(found, key=lambda c: -c.priority)  # stable: registration order among equals


async def _history_step(
    a: ContextAssembler, draft: Draft, target: int, keep: int, summarize: bool
) -> list[CompactionStep]:
    steps: list[CompactionStep] = []
    made: list[HistorySpan] = []
    while draft.budget is not None and draft.budget.used > target:
        before = draft.budget.used
        protected = _protected_ids(a, draft.shown, a._spans)
        span = make_span(draft.shown, before - target, protected, keep, a._measure, a._by_id, a._session)
        if span is None and keep == 0 and a._spans:
            # what is left frees less than a new marker costs: it joins the earlier spans behind one marker
            span = make_span(draft.shown, before - target, protected, 0, a._measure, a._by_id, a._session, True)
            merged = merge_spans([*a._spans, span], a._by_id, a._session) if span is not None else None
            if merged is None:
                break
            a._spans[:] = [merged]
            span = merged
        elif span is None:
            break
        else:
            a._spans.append(span)
        made.append(span)
        draft.tools = _tools(a)  # (the first span brings read_context in)
        measure(a, draft)
        steps.append(
            CompactionStep(
                component=HISTORY,
                action="compacted",
                freed=before - draft.budget.used,
                detail=f"{len(span.message_ids)} messages stored",
                handles=(span.handle,),
            )
        )
    if summarize and a._summarizer is not None:
        for span in made:
            if span in a._spans:  # not merged into a later one
                steps.append(await _summarize(a, draft, span, target))
    return steps


async def _summarize(a: ContextAssembler, draft: Draft, span: HistorySpan, target: int) -> CompactionStep:
    assert a._summarizer is not None
    assert draft.budget is not None
    try:
        summary = await maybe_await(a._summarizer([a._by_id[i] for i in span.message_ids if i in a._by_id]))
        if not isinstance(summary, str):
            raise TypeError(f"the summarizer must return a str, not {summary!r:.80}")
    except Exception as exc:
        a._plugin_failed("summarizer", "summarize", exc)
        return CompactionStep(component=HISTORY, action="failed", freed=0, detail=f"summarizer: {exc}")
    before = draft.budget.used
    index = a._spans.index(span)
    a._spans[index] = span.model_copy(update={"summary": summary.strip()})
    measure(a, draft)
    if draft.budget.used > target:  # the summary does not fit: the marker alone stays
        a._spans[index] = span
        measure(a, draft)
        return CompactionStep(component=HISTORY, action="nothing", freed=0, detail="summary left out: it did not fit")
    return CompactionStep(
        component=HISTORY, action="summarized", freed=before - draft.budget.used, handles=(span.handle,)
    )


async def _plugin_step(a: ContextAssembler, draft: Draft, name: str, target: int) -> CompactionStep:
    assert draft.budget is not None
    plugin = a._plugins[name]
    before = draft.budget.used
    own = draft.budget.by_part.get(name, 0)
    try:
        claimed = await compact_plugin(plugin, max(0, own - (before - target)), a._measure.counter)
    except Exception as exc:
        a._plugin_failed(name, "compact", exc)
        return CompactionStep(component=name, action="failed", freed=0, detail=f"{type(exc).__name__}: {exc}")
    if callable(getattr(plugin, "history_view", None)):
        draft.view, draft.repairs = await _view(a)
    found = await _component(a, plugin)
    if found is None:
        draft.components.pop(name, None)
    else:
        draft.components[name] = found
    draft.tools = _tools(a)
    measure(a, draft)
    freed = before - draft.budget.used
    return CompactionStep(
        component=name,
        action="compacted" if freed > 0 else "nothing",
        freed=freed,
        detail=f"the plugin reported {claimed:,} tokens freed",
    )


async def _run(a: ContextAssembler, draft: Draft, plan: CompactionPlan, mandatory: bool) -> list[CompactionStep]:
    assert draft.budget is not None
    log: list[CompactionStep] = []
    names = [c.name for c in _candidates(a, draft)]
    order = [n for n in plan.order if n in names] if plan.order is not None else names
    for name in order:
        if draft.budget.used <= plan.target:
            break
        if name == HISTORY:
            keep = 0 if mandatory else a._config.preserve_recent
            log += await _history_step(a, draft, plan.target, keep, plan.summarize)
        else:
            log.append(await _plugin_step(a, draft, name, plan.target))
    if mandatory and draft.budget.used > plan.target:
        for c in sorted(draft.components.values(), key=lambda c: -c.priority):
            if draft.budget.used <= plan.target:
                break
            if not c.protected:
                before = draft.budget.used
                draft.omitted.add(c.name)
                measure(a, draft)
                log.append(
                    CompactionStep(
                        component=c.name,
                        action="omitted",
                        freed=before - draft.budget.used,
                        detail="left out of this call; the plugin keeps it",
                    )
                )
    if mandatory and draft.budget.used > plan.target and len(a._spans) > 1:
        before = draft.budget.used
        merged = merge_spans(a._spans, a._by_id, a._session)
        if merged is not None:
            a._spans[:] = [merged]
            measure(a, draft)
            log.append(
                CompactionStep(
                    component=HISTORY,
                    action="compacted",
                    freed=before - draft.budget.used,
                    detail="earlier compactions behind one marker",
                    handles=(merged.handle,),
                )
            )
    return log


def _check_floor(budget: ContextBudget) -> None:
    if budget.floor > budget.limit:
        over = budget.floor - budget.limit
        raise ContextBudgetError(
            f"the parts that are never compacted (tool definitions, system prompt, instructions, current input, "
            f"pinned messages and components, the plan) need {budget.floor:,} tokens, {over:,} more than the limit "
            f"of {budget.limit:,}: raise max_tokens (or lower response_reserve) by at least {over:,}, or shorten them"
        )


async def prepare(a: ContextAssembler, force: bool) -> PreparedContext:
    started = time.perf_counter()
    draft = await build(a)
    budget = draft.budget
    assert budget is not None
    _check_floor(budget)
    if budget.status == "warning":
        a._events.emit("budget_warning", budget=budget)
    elif budget.status == "critical":
        a._events.emit("budget_critical", budget=budget)
    plan: CompactionPlan | None = None
    if force:
        plan = CompactionPlan(target=int(a._config.low_water * budget.limit))
    elif a._config.auto_compact:
        state = StrategyInput(budget, a._config, tuple(_candidates(a, draft)), a._summarizer is not None)
        plan = a._strategy(state)
        if plan is not None and not isinstance(plan, CompactionPlan):
            raise TypeError(f"a strategy must return a CompactionPlan or None, not {plan!r:.80}")
    log: list[CompactionStep] = []
    if plan is not None:
        log += await _run(a, draft, plan, mandatory=False)
    assert draft.budget is not None
    if draft.budget.used > draft.budget.limit:
        log += await _run(a, draft, CompactionPlan(target=draft.budget.limit), mandatory=True)
    final = draft.budget
    if final.used > final.limit:
        _check_floor(final)  # compaction offered read_context, and its definition alone does not fit
    compacted = any(step.freed > 0 for step in log)
    if compacted:
        a._metrics_compactions += 1
        a._metrics_freed += budget.used - final.used
        a._events.emit("compacted", log=log, freed=budget.used - final.used, budget=final)
    for plugin in a._plugins.values():
        try:
            await prepared_hook(plugin, final)
        except Exception as exc:
            a._plugin_failed(plugin.name, "on_prepared", exc)
    a._measure.prune(draft.messages)
    prepared = PreparedContext(
        messages=draft.messages,
        history=draft.shown,
        components=[c for n, c in draft.components.items() if n not in draft.omitted],
        tools=draft.tools,
        budget=final,
        compacted=compacted,
        log=log,
        context_role=a._config.context_role,
    )
    a._last = prepared
    a._metrics_prepares += 1
    a._metrics_seconds = time.perf_counter() - started
    a._events.emit("prepared", budget=final, compacted=compacted, log=log)
    return prepared

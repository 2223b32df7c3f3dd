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
from toolctx.assembly._pairing import Pairing, block_at, paired
from toolctx.assembly._plugins import compact_plugin, component_now, component_of, maybe_await, prepared_hook
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
from toolctx.assembly._working import WorkingState
from toolctx.compaction import READ_CONTEXT

__all__ = ["Draft", "budget_now", "prepare"]


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


async def _view(w: WorkingState) -> tuple[list[HistoryMessage], int]:
    view: Sequence[HistoryMessage] = w.history
    prefix: int | None = None
    for plugin in w.plugins.values():
        told = getattr(plugin, "prompt_prefix", None)
        if told is not None:  # (what a cache break at the first stand-in re-sends besides the history)
            if prefix is None:
                system = w.system_message()
                prefix = w.measure.tools(_tools(w)) + (w.measure.message(system) if system else 0)
            told(prefix)
        hook = getattr(plugin, "history_view", None)
        if hook is None:
            continue
        try:
            view = list(await maybe_await(hook(view)))
        except Exception as exc:
            w.plugin_failed(plugin.name, "history_view", exc)
    pairing: Pairing = w.pairing
    return pairing(view)


async def _component(w: WorkingState, plugin: Any) -> Component | None:
    try:
        return await component_of(plugin)
    except Exception as exc:
        w.plugin_failed(plugin.name, "get_component", exc)
        return None


def _tools(w: WorkingState) -> list[dict[str, Any]]:
    """The caller's tool definitions, then the plugins' (a name already defined is not sent twice)."""
    tools = list(w.tools)
    names = {_tool_name(t) for t in tools}
    for plugin in w.plugins.values():
        hook = getattr(plugin, "tool_definitions", None)
        if hook is None:
            continue
        try:
            added = [t for t in hook() if _tool_name(t) not in names]
        except Exception as exc:
            w.plugin_failed(plugin.name, "tool_definitions", exc)
            continue
        tools.extend(added)
        names.update(_tool_name(t) for t in added)
    if w.spans and READ_CONTEXT not in names and any(isinstance(p, ToolOutputPlugin) for p in w.plugins.values()):
        # A history marker names read_context: the plugin that reads it back offers it, stand-ins or not.
        tools.append(READ_CONTEXT_DEFINITION)
    return tools


def _tool_name(definition: Any) -> Any:
    return definition.get("function", definition).get("name")


def budget_now(w: WorkingState) -> ContextBudget:
    """The budget without preparing: the last call's components and tools, the history as it is now.

    Before the first call (or after a restored state) the plugins' components and
    tools are read now, without compacting anything.
    """
    last = w.last
    if last is None:
        components: dict[str, Component] = {}
        for plugin in w.plugins.values():
            try:
                found = component_now(plugin)
            except Exception as exc:
                w.plugin_failed(plugin.name, "get_component", exc)
                continue
            if found is not None:
                components[plugin.name] = found
        return measure(w, Draft(paired(w.history)[0], components, _tools(w)))
    shown = {m.id: m for m in last.history}
    view = [shown.get(m.id, m) for m in w.history]
    return measure(w, Draft(paired(view)[0], {c.name: c for c in last.components}, list(last.tools)))


async def build(w: WorkingState) -> Draft:
    view, repairs = await _view(w)
    components: dict[str, Component] = {}
    for plugin in w.plugins.values():
        found = await _component(w, plugin)
        if found is not None:
            components[plugin.name] = found
    draft = Draft(view, components, _tools(w), repairs=repairs)
    measure(w, draft)
    return draft


def _protected_ids(w: WorkingState, shown: Sequence[HistoryMessage], spans: Sequence[HistorySpan]) -> set[str]:
    ids = {m.id for m in shown if m.pinned}
    ids.update(f"{s.handle}:marker" for s in spans)
    if w.current is not None:
        ids.add(w.current)
    return ids


def _protected_sizes(w: WorkingState, shown: Sequence[HistoryMessage], pinned: list[int]) -> tuple[int, int]:
    """Tokens of the blocks holding a pinned message (``pinned``: their indices) or the current input, and of the
    current input's own block.

    Found from those messages (the blocks around them), not by walking every block of the history.
    """
    m = w.measure
    indices = list(pinned)
    current_at = -1
    if w.current is not None:
        current_at = _index_of(shown, w.current, w.current_at)
        if current_at >= 0:
            w.current_at = current_at
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


def measure(w: WorkingState, draft: Draft) -> ContextBudget:
    """Shown history, message list and budget of ``draft``, exactly counted."""
    m = w.measure
    draft.shown = shown_with_spans(draft.view, w.spans)
    system = w.system_message()
    included = [c for name, c in draft.components.items() if name not in draft.omitted]
    block = w.context_message(context_block(included)) if included else None
    draft.messages = sequence(system, draft.shown, block)
    tools = m.tools(draft.tools)
    by_part = {"tools": tools, "system": m.message(system) if system else 0}
    history, pinned_at = m.history(draft.shown)
    pinned, current = _protected_sizes(w, draft.shown, pinned_at)
    by_part[HISTORY] = history - current
    by_part["current_input"] = current
    context = m.message(block) if block is not None else 0
    for c in included:
        by_part[c.name] = m.text(c.content)
    fixed = [c for c in included if c.protected]
    floor_context = m.text(context_block(fixed)) + m.framing(w.config.context_role) if fixed else 0
    used = m.priming + tools + by_part["system"] + history + context
    floor = m.priming + tools + by_part["system"] + pinned + floor_context
    if w.spans or history > pinned:  # room for one marker of the compacted history
        floor += m.message(MARKER_BOUND)
    draft.budget = ContextBudget(
        limit=w.config.limit, used=used, floor=floor, status=w.config.status(used), by_part=by_part
    )
    return draft.budget


def _candidates(w: WorkingState, draft: Draft) -> list[Candidate]:
    assert draft.budget is not None
    found = [
        Candidate(p.name, p.priority, draft.budget.by_part.get(p.name, 0))
        for p in w.plugins.values()
        if p.compactable and p.priority > 0 and callable(getattr(p, "compact", None)) and not _pinned(draft, p.name)
    ]
    found.append(Candidate(HISTORY, w.config.history_priority, draft.budget.by_part[HISTORY]))
    return sorted(found, key=lambda c: -c.priority)  # stable: registration order among equals


def _pinned(draft: Draft, name: str) -> bool:
    """Whether the plugin ``name`` shows a component that is never compacted (pinned, say) in this call."""
    found = draft.components.get(name)
    return found is not None and found.protected


async def _history_step(w: WorkingState, draft: Draft, target: int, keep: int, summarize: bool) -> list[CompactionStep]:
    steps: list[CompactionStep] = []
    made: list[HistorySpan] = []
    while draft.budget is not None and draft.budget.used > target:
        before = draft.budget.used
        protected = _protected_ids(w, draft.shown, w.spans)
        span = make_span(
            draft.shown, before - target, protected, keep, w.measure, w.by_id, w.session, task=w.conversation_id
        )
        if span is None and keep == 0 and w.spans:
            # what is left frees less than a new marker costs: it joins the earlier spans behind one marker
            span = make_span(
                draft.shown, before - target, protected, 0, w.measure, w.by_id, w.session, True, w.conversation_id
            )
            merged = merge_spans([*w.spans, span], w.by_id, w.session, w.conversation_id) if span else None
            if merged is None:
                break
            w.spans[:] = [merged]
            span = merged
        elif span is None:
            break
        else:
            w.spans.append(span)
        made.append(span)
        draft.tools = _tools(w)  # (the first span brings read_context in)
        measure(w, draft)
        steps.append(
            CompactionStep(
                component=HISTORY,
                action="compacted",
                freed=before - draft.budget.used,
                detail=f"{len(span.message_ids)} messages stored",
                handles=(span.handle,),
            )
        )
    if summarize and w.summarizer is not None:
        for span in made:
            if span in w.spans:  # not merged into a later one
                steps.append(await _summarize(w, draft, span, target))
    return steps


async def _summarize(w: WorkingState, draft: Draft, span: HistorySpan, target: int) -> CompactionStep:
    assert w.summarizer is not None
    assert draft.budget is not None
    try:
        summary = await maybe_await(w.summarizer([w.by_id[i] for i in span.message_ids if i in w.by_id]))
        if not isinstance(summary, str):
            raise TypeError(f"the summarizer must return a str, not {summary!r:.80}")
    except Exception as exc:
        w.plugin_failed("summarizer", "summarize", exc)
        return CompactionStep(component=HISTORY, action="failed", freed=0, detail=f"summarizer: {exc}")
    before = draft.budget.used
    index = w.spans.index(span)
    w.spans[index] = span.model_copy(update={"summary": summary.strip()})
    measure(w, draft)
    if draft.budget.used > target:  # the summary does not fit: the marker alone stays
        w.spans[index] = span
        measure(w, draft)
        return CompactionStep(component=HISTORY, action="nothing", freed=0, detail="summary left out: it did not fit")
    return CompactionStep(
        component=HISTORY, action="summarized", freed=before - draft.budget.used, handles=(span.handle,)
    )


async def _plugin_step(w: WorkingState, draft: Draft, name: str, target: int) -> CompactionStep:
    assert draft.budget is not None
    plugin = w.plugins[name]
    before = draft.budget.used
    own = draft.budget.by_part.get(name, 0)
    try:
        claimed = await compact_plugin(plugin, max(0, own - (before - target)), w.measure.counter)
    except Exception as exc:
        w.plugin_failed(name, "compact", exc)
        return CompactionStep(component=name, action="failed", freed=0, detail=f"{type(exc).__name__}: {exc}")
    if callable(getattr(plugin, "history_view", None)):
        draft.view, draft.repairs = await _view(w)
    found = await _component(w, plugin)
    if found is None:
        draft.components.pop(name, None)
    else:
        draft.components[name] = found
    draft.tools = _tools(w)
    measure(w, draft)
    freed = before - draft.budget.used
    return CompactionStep(
        component=name,
        action="compacted" if freed > 0 else "nothing",
        freed=freed,
        detail=f"the plugin reported {claimed:,} tokens freed",
    )


async def _run(w: WorkingState, draft: Draft, plan: CompactionPlan, mandatory: bool) -> list[CompactionStep]:
    assert draft.budget is not None
    log: list[CompactionStep] = []
    names = [c.name for c in _candidates(w, draft)]
    order = [n for n in plan.order if n in names] if plan.order is not None else names
    for name in order:
        if draft.budget.used <= plan.target:
            break
        if name == HISTORY:
            keep = 0 if mandatory else w.config.preserve_recent
            log += await _history_step(w, draft, plan.target, keep, plan.summarize)
        else:
            log.append(await _plugin_step(w, draft, name, plan.target))
    if mandatory and draft.budget.used > plan.target:
        for c in sorted(draft.components.values(), key=lambda c: -c.priority):
            if draft.budget.used <= plan.target:
                break
            if not c.protected:
                before = draft.budget.used
                draft.omitted.add(c.name)
                measure(w, draft)
                log.append(
                    CompactionStep(
                        component=c.name,
                        action="omitted",
                        freed=before - draft.budget.used,
                        detail="left out of this call; the plugin keeps it",
                    )
                )
    if mandatory and draft.budget.used > plan.target and len(w.spans) > 1:
        before = draft.budget.used
        merged = merge_spans(w.spans, w.by_id, w.session, w.conversation_id)
        if merged is not None:
            w.spans[:] = [merged]
            measure(w, draft)
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


async def prepare(w: WorkingState, force: bool) -> PreparedContext:
    started = time.perf_counter()
    draft = await build(w)
    budget = draft.budget
    assert budget is not None
    _check_floor(budget)
    if budget.status == "warning":
        w.events.emit("budget_warning", budget=budget)
    elif budget.status == "critical":
        w.events.emit("budget_critical", budget=budget)
    plan: CompactionPlan | None = None
    if force:
        plan = CompactionPlan(target=int(w.config.low_water * budget.limit))
    elif w.config.auto_compact:
        state = StrategyInput(budget, w.config, tuple(_candidates(w, draft)), w.summarizer is not None)
        plan = w.strategy(state)
        if plan is not None and not isinstance(plan, CompactionPlan):
            raise TypeError(f"a strategy must return a CompactionPlan or None, not {plan!r:.80}")
    log: list[CompactionStep] = []
    if plan is not None:
        log += await _run(w, draft, plan, mandatory=False)
    assert draft.budget is not None
    if draft.budget.used > draft.budget.limit:
        log += await _run(w, draft, CompactionPlan(target=draft.budget.limit), mandatory=True)
    final = draft.budget
    if final.used > final.limit:
        _check_floor(final)  # compaction offered read_context, and its definition alone does not fit
    compacted = any(step.freed > 0 for step in log)
    if compacted:
        w.metrics.compactions += 1
        w.metrics.freed += budget.used - final.used
        w.events.emit("compacted", log=log, freed=budget.used - final.used, budget=final)
    for plugin in w.plugins.values():
        try:
            await prepared_hook(plugin, final)
        except Exception as exc:
            w.plugin_failed(plugin.name, "on_prepared", exc)
    w.measure.prune(draft.messages)
    prepared = PreparedContext(
        messages=draft.messages,
        history=draft.shown,
        components=[c for n, c in draft.components.items() if n not in draft.omitted],
        tools=draft.tools,
        budget=final,
        compacted=compacted,
        log=log,
        context_role=w.config.context_role,
    )
    w.last = prepared
    w.metrics.prepares += 1
    w.metrics.seconds = time.perf_counter() - started
    w.events.emit("prepared", budget=final, compacted=compacted, log=log)
    return prepared

"""compact_tool_outputs: a call_model_input_filter applying toolctx's compaction policy to the model input."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Any

import orjson
from agents import FunctionTool
from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData
from agents.tracing import get_current_trace

from toolctx.compaction import (
    READ_CONTEXT,
    BeforeModelCall,
    CompactionSettings,
    Compactor,
    Item,
    PrefixSize,
    SessionSource,
    ToolCall,
    notes,
    output_text,
    session_resolver,
)
from toolctx.compaction import before_model_call as run_hook
from toolctx.telemetry import events
from toolctx.tokens import estimate_tokens_cached as estimated
from toolctx_openai_agents._tokens import tool_definition
from toolctx_openai_agents.tools import Run, _Arguments, arguments_json, run_of

__all__ = ["InputItemAdapter", "compact_tool_outputs"]


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _as_dict(item: Any) -> Mapping[str, Any]:
    """The item's fields, to read or copy from (a dict item itself, which must not be changed)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dict(dump(exclude_unset=True)) if callable(dump) else dict(vars(item))


class InputItemAdapter:
    """The policy's view of Responses-style input items (``function_call``, ``function_call_output``, messages)."""

    def fingerprint(self, item: Any) -> Hashable:
        if isinstance(item, dict):  # (the usual form, read without a check per key)
            get = item.get
            return (get("type"), get("role"), get("call_id"), get("id"), len(get("content") or ""))
        content = _get(item, "content")
        return (_get(item, "type"), _get(item, "role"), _get(item, "call_id"), _get(item, "id"), len(content or ""))

    def describe(self, item: Any) -> Item:
        get = item.get if isinstance(item, dict) else partial(getattr, item)  # (dicts: the usual form)
        kind = get("type", None)
        if kind == "function_call":
            arguments = str(get("arguments", None) or "")
            name = str(get("name", None) or "")
            tokens = estimated(arguments)
            call = ToolCall(str(get("call_id", None)), name, _Arguments(arguments), len(arguments), tokens)
            return Item(tokens + estimated(name), calls=(call,))
        if kind == "function_call_output":
            text = output_text(get("output", None))
            return Item(estimated(text), result_of=str(get("call_id", None)), text=text)
        content = get("content", None) or ""
        role = get("role", None)
        if role == "assistant" and kind in (None, "message"):
            said = _said(content)  # (what the model reads of it: the text, not its blocks' JSON)
            return Item(estimated(said or output_text(content)), text=said)
        text = output_text(content)
        question = text if role == "user" and kind in (None, "message") else None
        return Item(estimated(text), question=question)

    def apply(self, item: Any, text: str | None, args: Mapping[str, Mapping[str, Any]]) -> Any:
        kind = _get(item, "type")
        if kind == "function_call_output" and text is not None:
            return {**_as_dict(item), "output": text}
        call_id = str(_get(item, "call_id"))
        if kind == "function_call" and call_id in args:
            return {**_as_dict(item), "arguments": arguments_json(args[call_id])}
        if text is not None and _get(item, "role") == "assistant":
            content = text if isinstance(_get(item, "content"), str) else [_output_text(text)]
            return {**_as_dict(item), "content": content}
        return item


def _tool_text(tool: Any) -> bytes:
    """What the model is sent for one of the agent's tools or handoffs; nothing for ``read_context``.

    (Hosted tools are described by the provider; tools of MCP servers are listed
    only while the run goes on, and go uncounted.)
    """
    if isinstance(tool, FunctionTool) and tool.name == READ_CONTEXT:
        return b""
    definition = tool_definition(tool)
    return b"" if definition is None else orjson.dumps(definition, default=str)


def _sent_tools(agent: Any) -> Sequence[Any]:
    """The agent's tools and handoffs: the model gets both as tools, ahead of the messages."""
    tools = getattr(agent, "tools", None) or ()
    handoffs = getattr(agent, "handoffs", None)
    return [*tools, *handoffs] if handoffs else tools


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _said(content: Any) -> str:
    """An assistant message's text; empty if it holds anything but text (a refusal, say)."""
    if isinstance(content, str):
        return content
    if len(content) == 1 and isinstance(content[0], dict):  # (the usual form: one block)
        only = content[0]
        return str(only.get("text", "")) if only.get("type") == "output_text" else ""
    blocks = [block if isinstance(block, dict) else _as_dict(block) for block in content]
    if not blocks or not all(b.get("type") == "output_text" for b in blocks):
        return ""
    return "".join(str(b.get("text", "")) for b in blocks)


def _task(run: Run | None) -> str | None:
    """The task a run's calls are found and stored under when its session serves no one conversation, as its
    tools tag them (``conversation_of``): the run's group (from the SDK's trace, else from the run's tools
    once one ran), else the run itself."""
    if run is None:
        return None
    group = getattr(get_current_trace(), "group_id", None)
    if isinstance(group, str) and group:
        return group
    return run.group if run.group is not None else run.scope


def compact_tool_outputs(
    settings: CompactionSettings | None = None,
    *,
    session: SessionSource = None,
    after: CallModelInputFilter | None = None,
    before_model_call: BeforeModelCall | None = None,
    **options: Any,
) -> Callable[[CallModelData[Any]], ModelInputData | Awaitable[ModelInputData]]:
    """A ``RunConfig.call_model_input_filter`` applying toolctx's compaction policy.

    Old ``function_call_output`` items become short stand-ins with a ``ctx:<id>``
    handle and long string arguments of old ``function_call`` items become
    stand-in strings (the arguments stay valid JSON), in batches from a high-water
    to a low-water mark so the prompt prefix stays the same between batches (see
    :class:`~toolctx.compaction.CompactionSettings` for every option, passed here by
    keyword). Outputs not stored yet are stored first, and a big one that no
    persisted tool stored (a tool of an MCP server, say) is shown as a stand-in
    straight away, by its tool's limit (``tool_limits``); outputs recorded as
    errors, ``exclude_tools``, tools whose limit is ``"never"`` and
    ``read_context`` are left alone. The run's own history is not changed: the
    filter applies to what each model call sees, and remembers its decisions, so
    each call only reads the items new since the previous one. It never raises: on
    any problem the input goes through unchanged.

    ``after``: your own input filter (sync or async), run first; toolctx compacts
    what it returns, so the two never edit the same item twice. Its errors are
    yours and propagate. ``before_model_call``: called before each model call with
    the estimated tokens of the prompt sent (instructions, tools and input), for a tiered memory's trigger
    (``lambda tokens: store.before_model_call(agent_id, tokens, window)``).
    """
    chosen = CompactionSettings.of(settings, **options)
    if before_model_call is not None and not callable(before_model_call):
        raise TypeError(f"before_model_call must be a function of the prompt's tokens, got {before_model_call!r:.60}")
    if after is not None and not callable(after):
        raise TypeError(f"after must be a call_model_input_filter (a function of CallModelData), got {after!r:.80}")
    adapter = InputItemAdapter()
    compactor = Compactor(adapter, chosen, session_resolver(session))
    prefix: PrefixSize[str, Any] = PrefixSize(str, _tool_text)

    def compacted(original: ModelInputData, agent: Any) -> ModelInputData:
        try:
            items = original.input  # (read, never changed: the items sent are a new list)
            session = compactor.session(None)
            task = session.conversation if session.conversation is not None else _task(run_of())
            key: Hashable = task if task is not None else (adapter.fingerprint(items[0]) if items else None)
            instructions = original.instructions if isinstance(original.instructions, str) else None
            notes(session).prefix_tokens = prefix(instructions or None, _sent_tools(agent))
            shown, _ = compactor.view(items, key, session, task=task)
            run_hook(before_model_call, session)
            return ModelInputData(input=shown, instructions=original.instructions)
        except Exception as exc:  # compaction is an optimisation: never break the run
            events.compaction_failed("could not compact the model input; sending it unchanged", exc)
            return original

    def compact(data: CallModelData[Any]) -> ModelInputData | Awaitable[ModelInputData]:
        if after is None:
            return compacted(data.model_data, data.agent)
        theirs = after(data)
        if inspect.isawaitable(theirs):

            async def later() -> ModelInputData:
                return compacted(await theirs, data.agent)

            return later()
        return compacted(theirs, data.agent)

    compact.compactor = compactor  # type: ignore[attr-defined]
    return compact

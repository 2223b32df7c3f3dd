"""assembled_input: a call_model_input_filter that has a toolctx ContextAssembler prepare every model input.

The run's input items are mirrored into the assembler's history (only the new
ones on each call), ``prepare()`` measures and compacts them with the assembler's
plugins and strategy, and the model gets what it prepared: the instructions
(system prompt and instructions), the items as shown (stand-ins, markers of
compacted history) and the plugins' components. Items the assembler did not
change are passed on as they came; the run's own history is never changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents import FunctionTool
from agents.run_config import CallModelData, ModelInputData

from toolctx.assembly import (
    CONTEXT_ID,
    SYSTEM_ID,
    ContextAssembler,
    HistoryMessage,
    PreparedContext,
    reset_after_failed_prepare,
)
from toolctx.compaction import output_text
from toolctx_openai_agents.compaction import InputItemAdapter, _as_dict, _get
from toolctx_openai_agents.tools import arguments_json, parse_arguments

__all__ = ["assembled_input"]

AssemblerSource = ContextAssembler | Callable[[], ContextAssembler]


class _ItemMirror:
    """What the assembler has been given of the run's items: per history id, the items behind it."""

    def __init__(self) -> None:
        self.count = 0  # input items taken in
        self.first: Any = None
        self.shown: dict[str, HistoryMessage] = {}
        self.items: dict[str, list[Any]] = {}


_EDIT = InputItemAdapter()  # applies stand-ins to an input item as the compaction policy does


def _fingerprint(item: Any) -> Any:
    return (_get(item, "type"), _get(item, "role"), _get(item, "call_id"), _get(item, "id"))


def _take(assembler: ContextAssembler, mirror: _ItemMirror, items: list[Any]) -> None:
    """Add the items after ``mirror.count`` to the history; consecutive function calls are one assistant message."""
    i = mirror.count
    last_user = max((n for n, it in enumerate(items) if _get(it, "role") == "user"), default=-1)
    while i < len(items):
        item = items[i]
        kind, key = _get(item, "type"), f"item-{i}"
        if kind == "function_call":
            group = [item]
            while i + len(group) < len(items) and _get(items[i + len(group)], "type") == "function_call":
                group.append(items[i + len(group)])
            calls = [
                {
                    "id": str(_get(c, "call_id")),
                    "name": str(_get(c, "name")),
                    "arguments": parse_arguments(str(_get(c, "arguments") or "")),
                }
                for c in group
            ]
            message = assembler.add_message("assistant", "", tool_calls=calls, id=key)
        elif kind == "function_call_output":
            group = [item]
            text = output_text(_get(item, "output"))
            message = assembler.add_message("tool", text, tool_call_id=str(_get(item, "call_id")), id=key)
        elif kind in (None, "message") and _get(item, "role") in ("user", "system", "developer", "assistant"):
            group = [item]
            role = _get(item, "role")
            text = output_text(_get(item, "content") or "")
            if role == "user":
                message = assembler.add_message("user", text, id=key, current_input=i == last_user)
            else:
                message = assembler.add_message("assistant" if role == "assistant" else "system", text, id=key)
        else:  # reasoning and other items: passed on as they are, counted as an empty message
            group = [item]
            message = assembler.add_message("assistant", "", {"passthrough": str(kind)}, id=key)
        mirror.shown[key] = message
        mirror.items[key] = group
        i += len(group)
    mirror.count = len(items)


def _tool_definitions(data: CallModelData[Any]) -> list[dict[str, Any]]:
    tools = getattr(data.agent, "tools", None) or []
    out = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            function = {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
            out.append({"type": "function", "function": function})
    return out


def _items(prepared: PreparedContext, mirror: _ItemMirror) -> tuple[list[Any], str | None]:
    instructions: str | None = None
    out: list[Any] = []
    for shown in prepared.messages:
        if shown.id == SYSTEM_ID:
            instructions = shown.content
            continue
        original = mirror.items.get(shown.id)
        if original is not None and mirror.shown.get(shown.id) is shown:
            out.extend(original)
        elif shown.role == "tool":
            base = _as_dict(original[0]) if original else {"type": "function_call_output"}
            out.append({**base, "call_id": shown.tool_call_id, "output": shown.content})
        elif shown.tool_calls:
            by_call = {str(_get(i, "call_id")): i for i in original or []}
            for call in shown.tool_calls:
                base = (
                    _as_dict(by_call[call.id]) if call.id in by_call else {"type": "function_call", "name": call.name}
                )
                out.append({**base, "call_id": call.id, "arguments": arguments_json(call.arguments)})
        elif shown.role == "assistant" and original and _get(original[0], "role") == "assistant":
            out.append(_EDIT.apply(original[0], shown.content, {}))  # old text compacted: a marker, same item
        else:
            role = prepared.context_role if shown.id == CONTEXT_ID else ("user" if shown.role == "user" else "system")
            out.append({"role": role, "content": shown.content})
    return out, instructions


def assembled_input(assembler: AssemblerSource) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``RunConfig.call_model_input_filter`` that prepares each model input with ``assembler``.

    ``assembler``: a :class:`~toolctx.assembly.ContextAssembler` (one conversation,
    as one ``SQLiteSession`` is), or a function returning the one to use. The
    agent's instructions are the system prompt when the assembler has none; its
    function tools are counted in the budget. Register a
    :class:`~toolctx.assembly.ToolOutputPlugin` to compact old outputs, and give
    the agent ``persist_tools(tools) + [read_context]`` so outputs are stored
    when they are made and can be read back.
    """
    if not isinstance(assembler, ContextAssembler) and not callable(assembler):
        raise TypeError(f"assembler must be a ContextAssembler or a function returning one, got {assembler!r:.80}")
    mirrors: dict[int, tuple[ContextAssembler, _ItemMirror]] = {}

    async def prepare(data: CallModelData[Any]) -> ModelInputData:
        chosen = assembler if isinstance(assembler, ContextAssembler) else assembler()
        for last_try in (False, True):
            try:
                return await prepared(chosen, data)
            except Exception as exc:
                reset_after_failed_prepare(chosen, mirrors, exc, last_try)
        return data.model_data

    async def prepared(chosen: ContextAssembler, data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        held = mirrors.get(id(chosen))
        mirror = held[1] if held is not None and held[0] is chosen else _ItemMirror()
        if mirror.count > len(items) or (mirror.count and _fingerprint(items[0]) != mirror.first):
            chosen.clear_history()  # another conversation
            mirror = _ItemMirror()
        mirror.first = _fingerprint(items[0]) if items else None
        mirrors[id(chosen)] = (chosen, mirror)
        _take(chosen, mirror, items)
        if data.model_data.instructions and not chosen.get_system_prompt():
            chosen.set_system_prompt(data.model_data.instructions)
        chosen.set_tools(_tool_definitions(data))  # read_context included when the agent has it: it is always sent
        prepared = await chosen.prepare()
        shown, instructions = _items(prepared, mirror)
        return ModelInputData(input=shown, instructions=instructions)

    return prepare

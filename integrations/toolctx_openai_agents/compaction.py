"""compact_tool_outputs: a call_model_input_filter replacing older tool outputs with stand-ins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson
from agents.run_config import CallModelData, ModelInputData

from toolctx._checks import whole_number
from toolctx._internal import internal_error
from toolctx.standins import ResultEntry, compactable, is_compacted, is_stand_in, output_text, stand_in, stored_text
from toolctx.tokens import estimate_tokens
from toolctx_openai_agents.tools import SessionSource, parse_arguments, resolver

__all__ = ["compact_tool_outputs", "estimate_input_tokens"]


def estimate_input_tokens(items: Sequence[Any]) -> int:
    """About how many tokens the model input items are (one per 4 bytes of their JSON)."""
    return estimate_tokens(orjson.dumps(list(items), default=str))


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def compact_tool_outputs(
    *,
    trigger_tokens: int = 20_000,
    keep: int = 3,
    exclude_tools: Sequence[str] = (),
    compact_chars: int = 200,
    session: SessionSource = None,
) -> Callable[[CallModelData[Any]], ModelInputData]:
    """A ``RunConfig.call_model_input_filter`` doing restorable compaction.

    Once the input is over ``trigger_tokens``, ``function_call_output`` items older
    than the ``keep`` most recent have their output replaced by a stand-in with a
    ``ctx:<id>`` handle (outputs not stored yet are stored first). Call items stay,
    so every call keeps its output; outputs recorded as errors and ``exclude_tools``
    are left alone. The run's own history is not changed: the filter applies to
    what each model call sees. It never raises: on any problem the input goes
    through unchanged.
    """
    for name, value in (("trigger_tokens", trigger_tokens), ("keep", keep), ("compact_chars", compact_chars)):
        whole_number(name, value)
    get_session = resolver(session)
    excluded = frozenset(exclude_tools) | {"read_context"}

    def compact(data: CallModelData[Any]) -> ModelInputData:
        original = data.model_data
        try:
            items: list[Any] = list(original.input)
            if estimate_input_tokens(items) <= trigger_tokens:
                return original
            current = get_session()
            calls = {_get(i, "call_id"): i for i in items if _get(i, "type") == "function_call"}
            entries = []
            for position, item in enumerate(items):
                if _get(item, "type") != "function_call_output":
                    continue
                call_id = _get(item, "call_id")
                pointer = current.find_call(call_id)
                name = _get(calls.get(call_id), "name") or (pointer.tool_name if pointer else "")
                entries.append(
                    ResultEntry(
                        position=position,
                        tool_name=name,
                        is_error=bool(pointer and pointer.is_error),
                        already_stand_in=is_compacted(_get(item, "output")),
                    )
                )
            for entry in compactable(entries, keep=keep, exclude=excluded):
                item = items[entry.position]
                shown = output_text(_get(item, "output"))
                call_id = _get(item, "call_id")
                pointer = current.find_call(call_id)
                if pointer is None:  # an output this run made without persist_tools: store it now
                    call = calls.get(call_id)
                    pointer = current.save_context(
                        entry.tool_name or "tool",
                        parse_arguments(_get(call, "arguments") or ""),
                        _get(item, "output"),
                        call_id=call_id,
                    )
                text = stored_text(current, pointer.id) if is_stand_in(shown) else shown
                shorter = stand_in(pointer, text or shown, compact_chars, 0, brief=True)
                if len(shorter) < len(shown):
                    items[entry.position] = {**dict(item), "output": shorter}
            return ModelInputData(input=items, instructions=original.instructions)
        except Exception as exc:  # compaction is an optimisation: never break the run
            internal_error("could not compact the model input; sending it unchanged", exc)
            return original

    return compact

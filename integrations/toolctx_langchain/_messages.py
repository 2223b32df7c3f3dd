"""How the compaction policy reads and edits LangChain messages, and which arguments are the model's."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

import orjson
from langchain_core.callbacks import BaseCallbackManager
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore
from pydantic import BaseModel

from toolctx.compaction import Item, ToolCall, output_text
from toolctx.tokens import estimate_tokens_cached as estimated

__all__ = ["META", "MessageAdapter", "as_sent", "model_arguments", "stand_in_metadata"]

META = "toolctx"


def stand_in_metadata(metadata: Mapping[str, Any], **ours: Any) -> dict[str, Any]:
    """A ToolMessage's metadata once toolctx shows it as a stand-in.

    LangChain's ``ContextEditingMiddleware`` skips messages it finds marked as
    cleared, so marking toolctx's stand-ins that way keeps it from overwriting
    their handles with its placeholder, in whichever order the two run.
    """
    editing = metadata.get("context_editing")
    marked = {**editing, "cleared": True} if isinstance(editing, dict) else {"cleared": True, "strategy": META}
    kept = metadata.get(META)
    return {**metadata, META: {**(kept if isinstance(kept, dict) else {}), **ours}, "context_editing": marked}


try:  # the runtime langchain injects into tools that ask for it
    from langchain.tools import ToolRuntime

    _INJECTED_TYPES: tuple[type, ...] = (ToolRuntime, BaseStore, BaseCallbackManager)
except ImportError:  # pragma: no cover - older langchain
    _INJECTED_TYPES = (BaseStore, BaseCallbackManager)


def _fields(schema: Any) -> set[str] | None:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return set(schema.model_fields)
    return None


class _Schema:
    """What a tool's schemas say about its arguments, worked out once per tool object."""

    def __init__(self, tool: BaseTool) -> None:
        self.tool = tool
        try:  # a JSON-schema tool declares no injected parameters: None, nothing is left out
            model = _fields(tool.tool_call_schema)
        except Exception:  # a tool whose schema cannot be built: its own call will say so
            model = None
        self.model = None if model is None else frozenset(model)  # the arguments the model is shown
        self._injected: frozenset[str] | None = None

    def injected(self, args: Mapping[str, Any]) -> frozenset[str]:
        """Parameters the framework fills in (runtime, state, store, config, call id), not the model.

        Arguments all named in the schema the model is shown are the model's own;
        only otherwise is the tool's full input schema built (anew on every read).
        """
        model = self.model
        if model is None:
            return frozenset()
        if model.issuperset(args):
            return frozenset()
        if self._injected is None:
            try:
                every = _fields(self.tool.get_input_schema())
            except Exception:
                every = None
            self._injected = frozenset(every - model) if every is not None else frozenset()
        return self._injected


_schemas: dict[int, _Schema] = {}


def _schema(tool: BaseTool) -> _Schema:
    found = _schemas.get(id(tool))
    if found is None or found.tool is not tool:
        if len(_schemas) > 4096:  # tools made per conversation: forget the old ones
            _schemas.clear()
        found = _schemas[id(tool)] = _Schema(tool)
    return found


def model_arguments(tool: BaseTool | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments the model gave, without anything the framework injects: always a new dict (the caller may
    keep it as its own copy)."""
    drop = _schema(tool).injected(args) if tool is not None else frozenset()
    return {k: v for k, v in args.items() if k not in drop and not isinstance(v, _INJECTED_TYPES)}


def as_sent(args: Any) -> bytes:
    """A call's arguments as the provider is sent them (JSON), near enough to measure."""
    try:
        return orjson.dumps(args, default=str)
    except TypeError:  # (orjson's JSONEncodeError): an integer past 64 bits, say
        return json.dumps(args, default=str, ensure_ascii=False).encode()


class MessageAdapter:
    """The policy's view of LangChain messages (tool calls are in ``AIMessage.tool_calls``)."""

    def fingerprint(self, item: AnyMessage) -> Hashable:
        return (item.type, item.id, item.tool_call_id if isinstance(item, ToolMessage) else None)

    def describe(self, item: AnyMessage) -> Item:
        text = output_text(item.content)
        if isinstance(item, ToolMessage):
            return Item(
                estimated(text),
                result_of=item.tool_call_id,
                tool=item.name or "",
                text=text,
                is_error=item.status == "error",
            )
        if isinstance(item, AIMessage):
            tokens = estimated(text)
            calls = []
            for c in item.tool_calls:
                args, name = c.get("args") or {}, c["name"]
                sent = as_sent(args)
                sent_tokens = estimated(sent)
                tokens += sent_tokens + estimated(name)
                calls.append(ToolCall(str(c.get("id")), name, args, len(sent), sent_tokens))
            return Item(tokens, calls=tuple(calls), text=_said(item.content))
        return Item(estimated(text), question=text if isinstance(item, HumanMessage) else None)

    def apply(self, item: AnyMessage, text: str | None, args: Mapping[str, Mapping[str, Any]]) -> AnyMessage:
        if isinstance(item, ToolMessage) and text is not None:
            meta = stand_in_metadata(item.response_metadata, compacted=True)
            return item.model_copy(update={"content": text, "artifact": None, "response_metadata": meta})
        if not isinstance(item, AIMessage) or not (args or text is not None):
            return item
        update: dict[str, Any] = {}
        content = item.content
        if args:
            update["tool_calls"] = [
                {**c, "args": dict(args[str(c.get("id"))])} if str(c.get("id")) in args else c for c in item.tool_calls
            ]
            raw = item.additional_kwargs.get("tool_calls")
            if isinstance(raw, list):  # the provider's own copy of the calls, sent back by some integrations
                update["additional_kwargs"] = {
                    **item.additional_kwargs,
                    "tool_calls": [_raw_call(r, args) for r in raw],
                }
            if isinstance(content, list):
                content = [_block(b, args) for b in content]
        if text is not None:
            content = _with_text(content, text)
        if content is not item.content:
            update["content"] = content
        return item.model_copy(update=update)


_TOOL_BLOCKS = ("tool_use", "tool_call")


def _said(content: Any) -> str:
    """What an assistant message says besides its calls; empty if it holds anything else (images, thinking)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not all(
        isinstance(b, dict) and b.get("type") in ("text", *_TOOL_BLOCKS) for b in content
    ):
        return ""
    return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _with_text(content: Any, text: str) -> Any:
    """``content`` with its text replaced by ``text`` (tool blocks kept, after it)."""
    if isinstance(content, str):
        return text
    tools = [b for b in content if isinstance(b, dict) and b.get("type") in _TOOL_BLOCKS]
    return [{"type": "text", "text": text}, *tools]


def _raw_call(raw: Any, args: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(raw, dict) or str(raw.get("id")) not in args or not isinstance(raw.get("function"), dict):
        return raw
    arguments = orjson.dumps(dict(args[str(raw["id"])])).decode()
    return {**raw, "function": {**raw["function"], "arguments": arguments}}


def _block(block: Any, args: Mapping[str, Mapping[str, Any]]) -> Any:
    if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_call") and str(block.get("id")) in args:
        key = "input" if block.get("type") == "tool_use" else "args"
        return {**block, key: dict(args[str(block["id"])])}
    return block

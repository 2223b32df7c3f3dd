"""The tokens of a whole chat request: messages, tool calls, tool schemas and their framing.

Messages may be OpenAI chat dicts, Anthropic dicts, OpenAI Agents SDK input
items (dicts or their pydantic models) or LangChain messages, recognised by
their shape, so no framework is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from toolctx.errors import ConfigError
from toolctx.tokens._counter import TokenCounter
from toolctx.tokens._models import counter_for_model, get_counter

__all__ = ["count_message", "count_request", "count_tools"]

# OpenAI's figures for its chat models (the cookbook "How to count tokens with tiktoken",
# checked there against the API's prompt_tokens): every message costs 3 tokens of framing,
# a name 1 more, and the reply is primed with 3.
PER_MESSAGE = 3
PER_NAME = 1
REPLY_PRIMING = 3
# A tool call in an assistant message is framed like a message of its own (an assumption,
# see count_message).
PER_TOOL_CALL = 3
# Tool definitions as the cookbook counts them for gpt-4o (func_init 10 for gpt-4 and gpt-3.5).
_FUNC_INIT = {"cl100k_base": 10}
FUNC_INIT = 7
PROP_INIT = 3
PROP_KEY = 3
ENUM_INIT = -3
ENUM_ITEM = 3
FUNC_END = 12

_TEXT_PARTS = ("text", "input_text", "output_text", "summary_text", "reasoning_text")
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _resolve(counter: TokenCounter | str | None, model: str | None) -> TokenCounter:
    if counter is not None and model is not None:
        raise ConfigError("pass counter or model, not both: the model names its own counter")
    if model is not None:
        return counter_for_model(model)
    if counter is None:
        return get_counter("o200k_base")
    if isinstance(counter, str):
        return get_counter(counter)
    if not isinstance(counter, TokenCounter):
        raise ConfigError(f"counter must be a TokenCounter or a counter name, got {type(counter).__name__}")
    return counter


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)  # as LangChain sends arguments to OpenAI


def _content(content: Any, texts: list[str], calls: list[tuple[str, str]]) -> None:
    """Collect the texts and tool calls of a message's content (a string or a list of parts)."""
    if content is None:
        return
    if isinstance(content, str):
        texts.append(content)
        return
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, Iterable):
        raise ConfigError(f"message content must be text or a list of parts, got {type(content).__name__}")
    for entry in content:
        if isinstance(entry, str):
            texts.append(entry)
            continue
        part = entry if isinstance(entry, Mapping) else _as_dict(entry)
        kind = part.get("type")
        if kind in _TEXT_PARTS or (kind is None and "text" in part):
            texts.append(str(part.get("text") or ""))
        elif kind == "refusal":
            texts.append(str(part.get("refusal") or ""))
        elif kind in ("tool_use", "server_tool_use"):  # Anthropic
            calls.append((str(part.get("name") or ""), _json(part.get("input") or {})))
        elif kind == "tool_result":  # Anthropic
            _content(part.get("content"), texts, calls)
        elif kind in ("thinking", "redacted_thinking"):
            texts.append(str(part.get("thinking") or part.get("data") or ""))
        elif kind in ("image", "image_url", "input_image", "input_audio", "input_file", "file", "document"):
            continue  # media are priced by the provider, not by text tokens
        else:
            texts.append(_json({k: v for k, v in part.items() if k != "type"}))


def _as_dict(item: Any) -> Mapping[str, Any]:
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        found = dump(exclude_none=True)
        if isinstance(found, Mapping):
            return found
    raise ConfigError(
        f"cannot count a message of type {type(item).__name__}: pass a dict (OpenAI, Anthropic, Agents SDK), "
        "a LangChain message or a string"
    )


def _parts(message: Any) -> tuple[str | None, list[str], list[tuple[str, str]]]:
    """The name, texts and tool calls (name, arguments) of one message in any supported form."""
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    if isinstance(message, str):  # the Agents SDK takes a plain string as one user message
        return None, ["user", message], calls
    role = getattr(message, "type", None)
    if not isinstance(message, Mapping) and role in _LANGCHAIN_ROLES and hasattr(message, "content"):
        texts.append(_LANGCHAIN_ROLES[role])
        _content(message.content, texts, calls)
        tool_calls = getattr(message, "tool_calls", None) or ()
        if tool_calls:  # the same calls may also sit in the content as Anthropic tool_use parts
            calls = [(str(call.get("name") or ""), _json(call.get("args") or {})) for call in tool_calls]
        name = getattr(message, "name", None)
        return (name if isinstance(name, str) and name else None), texts, calls
    item = message if isinstance(message, Mapping) else _as_dict(message)
    kind = item.get("type")
    if kind == "function_call":  # Agents SDK / Responses API
        calls.append((str(item.get("name") or ""), _json(item.get("arguments") or "")))
        texts.append("assistant")
        return None, texts, calls
    if kind in ("function_call_output", "custom_tool_call_output", "computer_call_output"):
        texts.append("tool")
        _content(item.get("output"), texts, calls)
        return None, texts, calls
    if kind == "reasoning":
        texts.append("assistant")
        _content(item.get("summary"), texts, calls)
        return None, texts, calls
    if "role" not in item and kind not in (None, "message"):
        texts.append(_json({k: v for k, v in item.items() if k not in ("type", "id", "status")}))
        return None, texts, calls
    texts.append(str(item.get("role") or ""))
    _content(item.get("content"), texts, calls)
    for call in item.get("tool_calls") or ():  # OpenAI chat
        function = call.get("function") or {}
        calls.append((str(function.get("name") or ""), _json(function.get("arguments") or "")))
    name = item.get("name")
    return (name if isinstance(name, str) and name else None), texts, calls


def count_message(message: Any, counter: TokenCounter | str | None = None, *, model: str | None = None) -> int:
    """The tokens one message costs in a request, its framing included.

    As OpenAI counts for its chat models: 3 tokens of framing, the role, the
    content, and the name with 1 token more. A tool call (OpenAI ``tool_calls``,
    Anthropic ``tool_use``, Agents SDK ``function_call``, LangChain
    ``tool_calls``) costs its name and JSON arguments plus 3 tokens, as if it
    were a message of its own: OpenAI does not publish how calls are framed, so
    this part is an approximation (within a few tokens per call). Call ids are
    not counted; images, audio and files are left out (providers price them
    apart). ``counter`` is a :class:`TokenCounter` or a :func:`get_counter`
    name; ``model`` picks the model's encoding instead (default
    ``o200k_base``).
    """
    return _count_message(message, _resolve(counter, model))


def _count_message(message: Any, counter: TokenCounter) -> int:
    name, texts, calls = _parts(message)
    total = PER_MESSAGE + sum(counter.count(text) for text in texts if text)
    if name is not None:
        total += counter.count(name) + PER_NAME
    for call_name, arguments in calls:
        total += PER_TOOL_CALL + counter.count(call_name) + counter.count(arguments)
    return total


def _function(given: Any) -> Mapping[str, Any]:
    tool: Mapping[str, Any] = given if isinstance(given, Mapping) else _as_dict(given)
    inner = tool.get("function")
    if isinstance(inner, Mapping):  # OpenAI chat: {"type": "function", "function": {...}}
        tool = inner
    if not isinstance(tool.get("name"), str):
        raise ConfigError(
            f"a tool definition needs a name, got keys {sorted(tool)}: pass OpenAI, Responses API or "
            "Anthropic tool dicts (or convert framework tools with the adapters' count helpers)"
        )
    return tool


def _property(name: str, schema: Any, counter: TokenCounter) -> int:
    if not isinstance(schema, Mapping):
        return PROP_KEY + counter.count(f"{name}:any:")
    total = PROP_KEY
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    elif not isinstance(kind, str):
        kind = "any"
    description = str(schema.get("description") or "").removesuffix(".")
    enum = schema.get("enum")
    if isinstance(enum, list):
        total += ENUM_INIT + sum(ENUM_ITEM + counter.count(_json(item)) for item in enum)
    total += counter.count(f"{name}:{kind}:{description}")
    nested = {k: v for k, v in schema.items() if k in ("properties", "items", "anyOf", "oneOf", "allOf", "$defs")}
    if nested:  # the cookbook's formula stops at top-level properties: count the rest as its JSON
        total += counter.count(_json(nested))
    return total


def count_tools(tools: Iterable[Any], counter: TokenCounter | str | None = None, *, model: str | None = None) -> int:
    """The tokens tool definitions add to a request (0 for none).

    OpenAI's cookbook formula, which matches the API's ``prompt_tokens`` on
    its examples: per function 7 tokens (10 in ``cl100k_base``) plus
    ``name:description``; per parameter 3 tokens plus ``name:type:description``
    and 3 per enum value; 3 tokens where the parameters start, 12 after the
    last function. Nested objects and arrays, which the formula does not
    cover, add the tokens of their schema's JSON. Accepts OpenAI chat tools
    (``{"type": "function", "function": {...}}``), Responses API and Agents
    SDK tool dicts (``{"type": "function", "name": ...}``) and Anthropic tools
    (``input_schema``).
    """
    return _count_tools(tools, _resolve(counter, model))


def _count_tools(tools: Iterable[Any], counter: TokenCounter) -> int:
    total = 0
    functions = [_function(tool) for tool in tools]
    for function in functions:
        total += _FUNC_INIT.get(counter.name, FUNC_INIT)
        description = str(function.get("description") or "").removesuffix(".")
        total += counter.count(f"{function['name']}:{description}")
        schema = function.get("parameters", function.get("input_schema"))
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(properties, Mapping) and properties:
            total += PROP_INIT + sum(_property(str(key), value, counter) for key, value in properties.items())
    return total + (FUNC_END if functions else 0)


def count_request(
    messages: Iterable[Any] | str,
    *,
    tools: Iterable[Any] = (),
    system: Any = None,
    counter: TokenCounter | str | None = None,
    model: str | None = None,
) -> int:
    """The prompt tokens of a whole chat request: messages, tool definitions and framing.

    ``messages`` is a list in any of the forms :func:`count_message` takes
    (a string is one user message, as the Agents SDK accepts); ``system`` is
    a system prompt passed apart (Anthropic's ``system``, the Agents SDK's
    instructions), counted as one more message; ``tools`` as
    :func:`count_tools` takes them. The reply priming (3 tokens) is added
    once. With an exact counter of the model's encoding this reproduces the
    ``prompt_tokens`` OpenAI reports for plain messages and simple tools
    (124 and 101 tokens on the cookbook's gpt-4o examples); tool calls, nested
    schemas and other providers are approximations (see the documentation's
    token counting notes), best corrected with a
    :class:`~toolctx.tokens.CalibratedCounter`.
    """
    resolved = _resolve(counter, model)
    items: Iterable[Any] = [messages] if isinstance(messages, str) else messages
    total = REPLY_PRIMING + sum(_count_message(message, resolved) for message in items)
    if system is not None:
        total += _count_message({"role": "system", "content": system}, resolved)
    return total + _count_tools(tools, resolved)

"""Exact token counts for LangChain messages and tools, and a ``token_counter`` for ``trim_messages``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolctx.tokens import TokenCounter, count_request

__all__ = ["count_langchain_request", "langchain_token_counter"]


def count_langchain_request(
    messages: Iterable[BaseMessage],
    tools: Iterable[Any] = (),
    *,
    counter: TokenCounter | str | None = None,
    model: str | None = None,
) -> int:
    """The prompt tokens of a chat model call on ``messages`` with ``tools`` bound.

    ``tools`` are anything ``bind_tools`` takes (``@tool`` functions,
    ``BaseTool`` objects, pydantic models, plain functions, OpenAI tool dicts),
    converted as LangChain converts them for OpenAI. Counting uses OpenAI's
    framing (see :func:`toolctx.tokens.count_request`); ``model`` picks the
    encoding (default ``o200k_base``).
    """
    definitions = [convert_to_openai_tool(tool) for tool in tools]
    return count_request(list(messages), tools=definitions, counter=counter, model=model)


def langchain_token_counter(
    counter: TokenCounter | str | None = None, *, model: str | None = None
) -> Callable[[Sequence[BaseMessage]], int]:
    """A ``token_counter`` for ``trim_messages`` and LangChain's summarisation middleware.

    LangChain's own ``count_tokens_approximately`` guesses from characters
    (2-3x low on CJK text); this returns the exact prompt tokens of the
    messages in the model's encoding, framing included::

        trim_messages(messages, max_tokens=8000, token_counter=langchain_token_counter(model="gpt-4o"))
    """
    if counter is None and model is None:
        counter = "o200k_base"

    def count(messages: Sequence[BaseMessage]) -> int:
        return count_request(list(messages), counter=counter, model=model)

    return count

"""LLM-assisted selection that can never break the agent loop.

The model sees the question and one summary line per candidate (id, tool name,
description, arguments, and the short result preview captured at save time);
never a stored output. It must answer exactly ``{"context_ids": ["<id>", ...]}``,
most relevant first. Unknown ids are dropped. If the model raises, hangs past
``timeout`` or answers anything else, the strategy logs an ``llm_selection_failed``
event and returns its fallback's ranking (BM25 by default): no exception leaves it.

``model`` is any callable taking the prompt and returning text, a dict or a
pydantic object, or one of these, adapted automatically:

- a LangChain chat model (anything with ``.invoke``): called with a system and a
  human message; the reply's text content is parsed;
- an OpenAI-compatible client (anything with ``.chat.completions.create``): pass
  ``model_name=``; JSON mode is requested.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from toolctx._checks import real_number, whole_number
from toolctx._internal import WARNING, log
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer
from toolctx.selection._base import Scored, SelectionState, Strategy, as_strategy
from toolctx.selection._bm25 import BM25

__all__ = ["LLM", "SYSTEM_PROMPT", "llm", "parse_context_ids"]

SYSTEM_PROMPT = (
    "You choose which stored tool outputs an assistant needs to answer a question. "
    "Each candidate is one JSON line with its id, the tool, a description, the arguments "
    'and the start of the output. Reply with JSON only, exactly {"context_ids": [...]}: '
    "the ids of the candidates needed, most relevant first, chosen only from the list. "
    'Reply {"context_ids": []} if none of them helps.'
)

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


class SelectionError(ValueError):
    """The model's answer is not a valid selection."""


def parse_context_ids(answer: object) -> list[str]:
    """The ids in a model's answer, strictly: ``{"context_ids": [str, ...]}`` or SelectionError."""
    if hasattr(answer, "model_dump"):
        answer = answer.model_dump()
    elif hasattr(answer, "content") and not isinstance(answer, Mapping):
        answer = _text_of(answer.content)
    if isinstance(answer, (bytes, str)):
        text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer
        fenced = _FENCE.match(text)
        try:
            answer = orjson.loads(fenced.group(1) if fenced else text)
        except orjson.JSONDecodeError as exc:
            raise SelectionError(f"the answer is not JSON: {text[:200]!r}") from exc
    if not isinstance(answer, Mapping) or set(answer) != {"context_ids"}:
        raise SelectionError(f'the answer must be exactly {{"context_ids": [...]}}, got {str(answer)[:200]!r}')
    ids = answer["context_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise SelectionError(f"context_ids must be a list of strings, got {str(ids)[:200]!r}")
    return ids


def _text_of(content: object) -> str:
    """Text of a chat message's content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content if isinstance(b, (str, dict))]
        return "".join(parts)
    raise SelectionError(f"the reply has no text content: {content!r:.200}")


def _adapt(model: object, model_name: str | None) -> Callable[[str], object]:
    chat = getattr(getattr(model, "chat", None), "completions", None)
    if chat is not None and callable(getattr(chat, "create", None)):
        if not model_name:
            raise ConfigError(
                "an OpenAI-compatible client needs model_name=..., e.g. llm(client, model_name='gpt-4o-mini')"
            )

        def ask_openai(prompt: str) -> object:
            response = chat.create(
                model=model_name,
                messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                response_format={"type": "json_object"},
            )
            return response.choices[0].message.content

        return ask_openai
    if callable(getattr(model, "invoke", None)):
        invoke = model.invoke  # type: ignore[attr-defined]

        def ask_langchain(prompt: str) -> object:
            return invoke([("system", SYSTEM_PROMPT), ("human", prompt)])

        return ask_langchain
    if callable(model):
        return model
    raise ConfigError(
        "llm() needs a callable taking the prompt, a LangChain chat model or an OpenAI-compatible client, "
        f"got {model!r:.80}"
    )


def _summary(pointer: ContextPointer, preview_chars: int) -> bytes:
    return orjson.dumps(
        {
            "id": pointer.id,
            "tool": pointer.tool_name,
            "description": pointer.tool_description,
            "args": pointer.args,
            "output_starts": pointer.preview[:preview_chars],
        }
    )


def build_prompt(query: str, candidates: list[ContextPointer], preview_chars: int) -> str:
    lines = b"\n".join(_summary(p, preview_chars) for p in candidates).decode()
    return f"Question: {query}\n\nCandidates:\n{lines}"


class LLM(Strategy):
    """Asks a model which candidates matter; falls back to ``fallback`` on any failure.

    At most ``max_candidates`` go into the prompt: when there are more, the
    fallback's best ones, then the most recent others.
    """

    name = "llm"

    def __init__(
        self,
        model: object,
        *,
        model_name: str | None = None,
        timeout: float = 30.0,
        max_candidates: int = 50,
        preview_chars: int = 200,
        fallback: object = None,
    ) -> None:
        self.ask = _adapt(model, model_name)
        self.timeout = real_number("timeout", timeout, above=0.0, unit="seconds")
        self.max_candidates = whole_number("max_candidates", max_candidates, minimum=1)
        self.preview_chars = preview_chars
        self.fallback = BM25() if fallback is None else as_strategy(fallback)

    def rank(self, state: SelectionState) -> list[Scored]:
        if len(state.candidates) > self.max_candidates:
            # The fallback's best, then the newest others: the model may see relevance it missed.
            shortlist = [s.pointer.id for s in self.fallback(state)[: self.max_candidates]]
            listed = set(shortlist)
            for pointer_id in reversed(state.candidates.ids):
                if len(shortlist) >= self.max_candidates:
                    break
                if pointer_id not in listed:
                    shortlist.append(pointer_id)
            candidates = [state.candidates.get(i) for i in shortlist]
        else:
            candidates = list(state.candidates)
        try:
            answer = self._ask(build_prompt(state.query, candidates, self.preview_chars))
            ids = parse_context_ids(answer)
        except Exception as exc:  # garbage, an exception of the model's, a timeout: never the agent's problem
            log(
                WARNING,
                "llm_selection_failed",
                reason=f"{type(exc).__name__}: {exc}"[:500],
                fallback=repr(self.fallback),
            )
            return self.fallback(state)
        known = {p.id: p for p in candidates}
        unknown = [i for i in ids if i not in known]
        if unknown:
            log(WARNING, "llm_selection_unknown_ids", ids=unknown[:20])
        picked = list(dict.fromkeys(i for i in ids if i in known))
        return [Scored(known[i], 1.0 - n / (len(picked) + 1)) for n, i in enumerate(picked)]

    def _ask(self, prompt: str) -> object:
        """Call the model in a daemon thread, so a hung model costs ``timeout`` and no more."""
        outcome: list[Any] = []

        def call() -> None:
            try:
                outcome.append((True, self.ask(prompt)))
            except Exception as exc:  # delivered to the caller below, as a failure
                outcome.append((False, exc))
            except BaseException as exc:  # SystemExit and the like: still only a failed selection
                outcome.append((False, RuntimeError(f"the model raised {type(exc).__name__}: {exc}")))

        worker = threading.Thread(target=call, name="toolctx-llm-selection", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not outcome:
            raise TimeoutError(f"the model did not answer within {self.timeout:g} s")
        ok, value = outcome[0]
        if not ok:
            raise value
        return value


def llm(model: object, **options: Any) -> LLM:
    """LLM-assisted selection; see :class:`LLM` for the options."""
    return LLM(model, **options)

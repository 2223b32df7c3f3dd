"""LLM-assisted selection: every failure of the model falls back to BM25, nothing escapes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
from structlog.testing import capture_logs

from toolctx import ConfigError, ContextSession, session
from toolctx.selection import SYSTEM_PROMPT, llm, parse_context_ids

SECRET_BODY = "the full stored output " * 500


@pytest.fixture
def s(context_dir: Path) -> Any:
    with session(context_dir) as s:
        s.save_context("get_weather", {"city": "Paris"}, "Sunny in Paris, 21 °C")
        s.save_context("get_stock_price", {"ticker": "AAPL"}, {"price": 227.5})
        s.save_context("read_file", {"path": "report.md"}, SECRET_BODY)
        yield s


def ids_of(s: ContextSession, *tools: str) -> list[str]:
    by_tool = {p.tool_name: p.id for p in s.get_all_pointers()}
    return [by_tool[t] for t in tools]


class Recorder:
    """A model callable that answers with a fixed reply and keeps the prompts it saw."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> Any:
        self.prompts.append(prompt)
        return self.reply(prompt) if callable(self.reply) else self.reply


def test_the_models_choice_and_order_are_kept(s: ContextSession) -> None:
    weather, price = ids_of(s, "get_weather", "get_stock_price")
    model = Recorder(json.dumps({"context_ids": [price, weather]}))
    picked = s.select_relevant_contexts("AAPL price and Paris weather", strategy=llm(model))
    assert [p.id for p in picked] == [price, weather]


def test_the_prompt_holds_summaries_never_whole_outputs(s: ContextSession) -> None:
    model = Recorder('{"context_ids": []}')
    assert s.select_relevant_contexts("report", strategy=llm(model)) == []  # the model may choose nothing
    [prompt] = model.prompts
    assert "report.md" in prompt
    assert SECRET_BODY not in prompt
    assert prompt.count("the full stored output") <= 10  # only the 200-character preview
    lines = [json.loads(line) for line in prompt.split("Candidates:\n")[1].splitlines()]
    assert {tuple(sorted(line)) for line in lines} == {("args", "description", "id", "output_starts", "tool")}


def test_unknown_and_repeated_ids_are_dropped(s: ContextSession) -> None:
    [weather] = ids_of(s, "get_weather")
    model = Recorder({"context_ids": ["made-up", weather, weather, "ctx:999"]})
    with capture_logs() as logs:
        picked = s.select_relevant_contexts("weather", strategy=llm(model))
    assert [p.id for p in picked] == [weather]
    assert any(e["event"] == "llm_selection_unknown_ids" for e in logs)


class Answer(pydantic.BaseModel):
    context_ids: list[str]


@pytest.mark.parametrize(
    "reply_for",
    [
        lambda ids: {"context_ids": ids},
        lambda ids: Answer(context_ids=ids),
        lambda ids: f"```json\n{json.dumps({'context_ids': ids})}\n```",
        lambda ids: json.dumps({"context_ids": ids}).encode(),
    ],
    ids=["dict", "pydantic", "fenced", "bytes"],
)
def test_structured_and_fenced_answers(s: ContextSession, reply_for: Any) -> None:
    [price] = ids_of(s, "get_stock_price")
    picked = s.select_relevant_contexts("price", strategy=llm(Recorder(reply_for([price]))))
    assert [p.id for p in picked] == [price]


def boom(prompt: str) -> str:
    raise RuntimeError("model service unavailable")


def exits(prompt: str) -> str:
    raise SystemExit(3)


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! The relevant ones are the weather call.",
        '{"context_ids": "get_weather"}',
        '{"context_ids": [1, 2]}',
        '{"ids": []}',
        '{"context_ids": [], "extra": true}',
        "[]",
        None,
        42,
        boom,
        exits,
    ],
    ids=["prose", "not-a-list", "numbers", "wrong-key", "extra-key", "list", "none", "int", "raises", "system-exit"],
)
def test_any_bad_answer_falls_back_to_bm25(s: ContextSession, reply: Any) -> None:
    model = reply if callable(reply) else Recorder(reply)
    with capture_logs() as logs:
        picked = s.select_relevant_contexts("weather in Paris", strategy=llm(model))
    assert [p.tool_name for p in picked] == ["get_weather"]  # what BM25 chooses
    assert any(e["event"] == "llm_selection_failed" for e in logs)


def test_a_hanging_model_times_out_and_falls_back(s: ContextSession) -> None:
    release = threading.Event()

    def hangs(prompt: str) -> str:
        release.wait(5)
        return '{"context_ids": []}'

    started = time.monotonic()
    with capture_logs() as logs:
        picked = s.select_relevant_contexts("weather in Paris", strategy=llm(hangs, timeout=0.2))
    release.set()
    assert time.monotonic() - started < 4  # waited for the timeout, not for the model
    assert [p.tool_name for p in picked] == ["get_weather"]
    assert any("did not answer" in e.get("reason", "") for e in logs)


def test_only_a_shortlist_reaches_the_model(s: ContextSession) -> None:
    for i in range(30):
        s.save_context("search_logs", {"service": f"svc{i}"}, f"log lines of svc{i}")
    model = Recorder('{"context_ids": []}')
    s.select_relevant_contexts("svc3 weather", strategy=llm(model, max_candidates=5))
    lines = [json.loads(line) for line in model.prompts[0].split("Candidates:\n")[1].splitlines()]
    assert len(lines) == 5
    assert [line["args"] for line in lines[:2]] == [{"service": "svc3"}, {"city": "Paris"}]  # BM25's hits first
    assert [line["args"] for line in lines[2:]] == [{"service": f"svc{i}"} for i in (29, 28, 27)]  # then the newest


def test_parse_context_ids_is_strict() -> None:
    assert parse_context_ids('{"context_ids": ["a", "b"]}') == ["a", "b"]
    with pytest.raises(ValueError, match="exactly"):
        parse_context_ids({"context_ids": [], "why": "x"})


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="callable"):
        llm(42)
    with pytest.raises(ConfigError, match="timeout"):
        llm(lambda p: "", timeout=0)
    with pytest.raises(ConfigError, match="max_candidates"):
        llm(lambda p: "", max_candidates=0)


def test_a_langchain_chat_model(s: ContextSession) -> None:
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.messages import BaseMessage

    [weather] = ids_of(s, "get_weather")
    seen: list[list[BaseMessage]] = []

    class Recording(FakeListChatModel):
        def invoke(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(messages)
            return super().invoke(messages, *args, **kwargs)

    model = Recording(responses=[json.dumps({"context_ids": [weather]})])
    picked = s.select_relevant_contexts("weather", strategy=llm(model))
    assert [p.id for p in picked] == [weather]
    system, human = seen[0]
    assert system == ("system", SYSTEM_PROMPT)
    assert human[0] == "human"
    assert "Question: weather" in human[1]


def test_an_openai_compatible_client(s: ContextSession) -> None:
    import openai

    [price] = ids_of(s, "get_stock_price")
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        reply = {"context_ids": [price]}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": json.dumps(reply)},
                    }
                ],
            },
        )

    client = openai.OpenAI(
        api_key="test",
        base_url="http://llm.invalid/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    picked = s.select_relevant_contexts("AAPL price", strategy=llm(client, model_name="small-model"))
    assert [p.id for p in picked] == [price]
    [body] = requests
    assert body["model"] == "small-model"
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    with pytest.raises(ConfigError, match="model_name"):
        llm(client)

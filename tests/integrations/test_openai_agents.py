"""toolctx in the OpenAI Agents SDK's real run loop (Runner.run with ScriptedModel), offline."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from packaging.version import Version
from toolctx_openai_agents import (
    ToolContextHooks,
    compact_tool_outputs,
    persist_tools,
    read_context,
    record_tool_errors,
)

import toolctx
from toolctx import ConfigError, session
from toolctx.compaction import is_stand_in, notes

# openai-agents shows a tool's exception to RunConfig.tool_error_formatter from 0.24 on.
SDK_SHOWS_TOOL_ERRORS = Version(metadata.version("openai-agents")) >= Version("0.24")


BIG = "".join(f"line {i}: quarterly revenue figures for region {i % 7}\n" for i in range(800))


@function_tool
def fetch_report(region: str) -> str:
    """Fetch the revenue report of a region."""
    return BIG


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " * 200


@function_tool
def broken(key: str) -> str:
    """Always fails."""
    raise ValueError(f"no such key: {key}")


@function_tool(failure_error_function=None)
def broken_loudly(key: str) -> str:
    """Always fails, and the SDK lets the error through."""
    raise ValueError(f"no such key: {key}")


class Quote(pydantic.BaseModel):
    ticker: str
    rows: list[dict[str, Any]]


@function_tool
def quotes(ticker: str, n: int) -> Quote:
    """Quotes as a model."""
    return Quote(ticker=ticker, rows=[{"i": i, "price": 100 + i} for i in range(n)])


def stored_call(s: toolctx.ContextSession, call_id: str) -> Any:
    """The newest call stored with this framework id, in whichever run's scope (a run without a group_id
    stores under its own)."""
    found = [p for p in s.get_all_pointers() if p.call_id == call_id]
    return found[-1] if found else None


def outputs(call: Any) -> list[dict[str, Any]]:
    return [dict(i) for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]


def handle_in(call: Any) -> str:
    match = re.search(r"ctx:[0-9a-z]+", str(outputs(call)[-1]["output"]))
    assert match
    return match.group(0)


def run(agent: Agent[Any], question: str = "go", **config: Any) -> Any:
    return asyncio.run(Runner.run(agent, question, run_config=RunConfig(tracing_disabled=True, **config)))


def test_a_big_output_is_a_stand_in_the_model_reads_back(context_dir: Path) -> None:
    model = ScriptedModel(
        [
            [function_call("fetch_report", {"region": "emea"}, call_id="c1")],
            ModelStep.respond(
                lambda call: [
                    function_call("read_context", {"id": handle_in(call), "offset": 100, "limit": 200}, call_id="c2")
                ]
            ),
            ModelStep.respond(
                lambda call: [
                    function_call("read_context", {"id": handle_in_first(call), "limit": 100_000}, call_id="c3")
                ]
            ),
            [assistant_message("Revenue is up.")],
        ]
    )
    agent = Agent(
        name="analyst", model=model, tools=[*persist_tools([fetch_report], max_output_tokens=500), read_context]
    )
    with session(context_dir) as s:
        result = run(agent, "How did EMEA revenue do?")
        [pointer] = s.get_all_pointers()
        session_dir = s.session_dir
        assert s.save_path.settle(timeout=60)  # (an async tool's big output is written by a pool thread)
        assert session_dir.exists()
    assert result.final_output == "Revenue is up."
    assert pointer.call_id == "c1"
    assert pointer.args == {"region": "emea"}
    seen = outputs(model.calls[1])[0]["output"]
    assert is_stand_in(seen)
    assert pointer.handle in seen
    assert len(seen) < len(BIG) / 10
    partial = outputs(model.calls[2])[-1]["output"]
    assert partial.endswith(BIG[100:300])
    whole = outputs(model.calls[3])[-1]["output"]
    assert whole.split("\n", 1)[1] == BIG
    assert not session_dir.exists()


def read(handle: str, call_id: str, **options: int) -> Any:
    return function_call("read_context", {"id": handle, **options}, call_id=call_id)


def handle_in_first(call: Any) -> str:
    match = re.search(r"ctx:[0-9a-z]+", str(outputs(call)[0]["output"]))
    assert match
    return match.group(0)


def test_older_outputs_are_compacted_restorably(context_dir: Path) -> None:
    steps: list[Any] = [[function_call("lookup", {"key": f"k{i}"}, call_id=f"c{i}")] for i in range(6)]
    steps.insert(2, [function_call("broken", {"key": "x"}, call_id="err")])
    steps.append([assistant_message("done")])
    model = ScriptedModel(steps)
    agent = Agent(name="collector", model=model, tools=persist_tools([lookup, broken], max_output_tokens=100_000))
    with session(context_dir) as s:
        run(
            agent,
            call_model_input_filter=compact_tool_outputs(
                high_water=1_000, low_water=0, min_gain=0, cached_price=1.0, keep=2
            ),
            tool_error_formatter=record_tool_errors(),
        )
        last = model.calls[-1]
        shown = outputs(last)
        assert [(o["call_id"], is_stand_in(o["output"])) for o in shown] == [
            ("c0", True),
            ("c1", True),
            ("err", False),  # an error result stays as it is
            ("c2", True),
            ("c3", True),
            ("c4", False),  # the two most recent
            ("c5", False),
        ]
        call_ids = [dict(i)["call_id"] for i in last.input if isinstance(i, dict) and i.get("type") == "function_call"]
        assert call_ids == [o["call_id"] for o in shown]  # every call keeps its output
        handle = re.search(r"ctx:[0-9a-z]+", shown[0]["output"]).group(0)  # type: ignore[union-attr]
        assert s.load_contexts([handle])[0].result == "value of k0 " * 200
        full = [
            {**o, "output": s.load_contexts([stored_call(s, o["call_id"]).id])[0].result}  # type: ignore[union-attr]
            for o in shown
        ]
        assert len(json.dumps(shown)) < len(json.dumps(full)) / 2
        assert stored_call(s, "err").is_error is SDK_SHOWS_TOOL_ERRORS  # type: ignore[union-attr]


def test_outputs_stored_without_persist_tools_are_stored_when_compacted(context_dir: Path) -> None:
    steps: list[Any] = [[function_call("lookup", {"key": f"k{i}"}, call_id=f"c{i}")] for i in range(4)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    agent = Agent(name="plain", model=model, tools=[lookup])
    with session(context_dir) as s:
        run(
            agent,
            call_model_input_filter=compact_tool_outputs(
                high_water=500, low_water=0, min_gain=0, cached_price=1.0, keep=1
            ),
        )
        assert [p.call_id for p in s.get_all_pointers()] == ["c0", "c1", "c2"]
        assert s.load_contexts([stored_call(s, "c0")])[0].args == {"key": "k0"}  # type: ignore[list-item]


@function_tool
def broken_other(key: str) -> str:
    """Always fails, differently."""
    raise KeyError(f"other key {key}")


def test_errors_the_sdk_handles_are_recorded_through_the_run_configs_error_formatter(context_dir: Path) -> None:
    model = ScriptedModel(
        [
            [
                function_call("broken", {"key": "zz"}, call_id="e1"),
                function_call("broken_other", {"key": "yy"}, call_id="e2"),
                function_call("lookup", {"key": "ok"}, call_id="e3"),
            ],
            [assistant_message("sorry")],
        ]
    )
    agent = Agent(name="a", model=model, tools=persist_tools([broken, broken_other, lookup]))
    with session(context_dir) as s:
        run(agent, tool_error_formatter=record_tool_errors())
        stored = {c.call_id: c for c in s.load_contexts(s.get_all_pointers())}
    shown = {o["call_id"]: o["output"] for o in outputs(model.calls[1])}
    assert "error occurred" in shown["e1"]  # the SDK's own handling still answers the model
    assert stored["e3"].error is None
    if SDK_SHOWS_TOOL_ERRORS:
        # each parallel call gets its own exception, not its neighbour's
        assert stored["e1"].error is not None
        assert stored["e1"].error.type == "ValueError"
        assert "no such key: zz" in stored["e1"].error.message
        assert stored["e2"].error is not None
        assert stored["e2"].error.type == "KeyError"
        assert "other key yy" in stored["e2"].error.message
    else:  # an older SDK never shows the formatter a tool's exception: stored as what the model read
        assert stored["e1"].error is None
        assert stored["e1"].result == shown["e1"]


def test_without_the_error_formatter_a_handled_error_is_stored_as_what_the_model_read(context_dir: Path) -> None:
    model = ScriptedModel([[function_call("broken", {"key": "zz"}, call_id="e1")], [assistant_message("sorry")]])
    agent = Agent(name="a", model=model, tools=persist_tools([broken]))
    with session(context_dir) as s:
        run(agent)
        [stored] = s.load_contexts(s.get_all_pointers())
    assert stored.error is None
    assert stored.result == outputs(model.calls[1])[0]["output"]
    assert "error occurred" in stored.result


def test_your_own_error_formatter_still_decides_what_the_model_reads(context_dir: Path) -> None:
    seen: list[str] = []

    def mine(args: Any) -> str | None:
        seen.append(args.kind)
        return "the lookup failed; try another key" if args.kind == "tool_exception" else None

    model = ScriptedModel([[function_call("broken", {"key": "zz"}, call_id="e1")], [assistant_message("sorry")]])
    agent = Agent(name="a", model=model, tools=persist_tools([broken]))
    with session(context_dir) as s:
        run(agent, tool_error_formatter=record_tool_errors(mine))
        [stored] = s.load_contexts(s.get_all_pointers())
    shown = outputs(model.calls[1])[0]["output"]
    if SDK_SHOWS_TOOL_ERRORS:
        assert seen == ["tool_exception"]
        assert shown == "the lookup failed; try another key"
        assert stored.error is not None
        assert "no such key: zz" in stored.error.message
    else:
        assert seen == []
        assert stored.error is None
        assert stored.result == shown


def test_the_error_formatter_outside_a_persisted_tool_only_passes_through() -> None:
    with pytest.raises(TypeError, match="tool_error_formatter"):
        record_tool_errors("not a function")  # type: ignore[arg-type]
    args = SimpleNamespace(kind="tool_exception", error=ValueError("x"))
    assert record_tool_errors()(args) is None  # type: ignore[arg-type]
    assert record_tool_errors(lambda a: "mine")(args) == "mine"  # type: ignore[arg-type]


def test_on_an_sdk_that_never_shows_the_formatter_tool_errors_it_says_so_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from structlog.testing import capture_logs
    from toolctx_openai_agents import tools

    def told(installed: str) -> list[dict[str, Any]]:
        monkeypatch.setattr(tools.metadata, "version", lambda name: installed)
        monkeypatch.setattr(tools, "_told", [])
        with capture_logs() as logs:
            record_tool_errors()
            record_tool_errors()  # (once per process)
        return [e for e in logs if e["event"] == "record_tool_errors_inactive"]

    [event] = told("0.23.1")
    assert event["log_level"] == "warning"
    assert event["openai_agents"] == "0.23.1"
    assert "0.24" in event["reason"]
    assert told("0.24.0") == []
    assert told("1.0.0") == []
    assert told("not-a-version") == []  # an unnumbered build: nothing to say


def test_an_error_inside_an_agent_a_tool_runs_is_not_recorded_on_that_tool(context_dir: Path) -> None:
    """The run config reaches nested agents: their tools' errors belong to their own calls, not the caller's."""
    inner_model = ScriptedModel(
        [[function_call("broken", {"key": "zz"}, call_id="i1")], [assistant_message("inner recovered: 42")]]
    )
    inner = Agent(name="inner", model=inner_model, tools=[broken])  # its tool is not persisted
    outer_tool = inner.as_tool(tool_name="ask_inner", tool_description="Ask the inner agent.")
    model = ScriptedModel(
        [[function_call("ask_inner", {"input": "what is it?"}, call_id="o1")], [assistant_message("done")]]
    )
    agent = Agent(name="outer", model=model, tools=persist_tools([outer_tool]))
    with session(context_dir) as s:
        run(agent, tool_error_formatter=record_tool_errors())
        [stored] = s.load_contexts(s.get_all_pointers())
    assert stored.call_id == "o1"
    assert stored.error is None
    assert "inner recovered: 42" in str(stored.result)


@function_tool(timeout=0.05)
async def slow(key: str) -> str:
    """Takes too long."""
    await asyncio.sleep(30)
    return key


def test_a_call_the_sdk_times_out_is_stored_as_an_error(context_dir: Path) -> None:
    model = ScriptedModel([[function_call("slow", {"key": "k"}, call_id="t1")], [assistant_message("too slow")]])
    agent = Agent(name="a", model=model, tools=persist_tools([slow]))
    with session(context_dir) as s:
        run(agent)
        [pointer] = s.get_all_pointers()
    assert pointer.call_id == "t1"
    assert pointer.is_error
    assert "timed out" in outputs(model.calls[1])[0]["output"]  # what the model reads is the SDK's


def test_an_error_the_sdk_lets_through_is_recorded_and_raised(context_dir: Path) -> None:
    model = ScriptedModel([[function_call("broken_loudly", {"key": "zz"}, call_id="e1")], [assistant_message("x")]])
    agent = Agent(name="a", model=model, tools=persist_tools([broken_loudly]))
    with session(context_dir) as s:
        with pytest.raises(Exception, match="no such key: zz"):
            run(agent)
        assert s.get_all_pointers()[0].is_error


def test_several_calls_in_one_step_and_non_string_outputs(context_dir: Path) -> None:
    model = ScriptedModel(
        [
            [
                function_call("quotes", {"ticker": "AAPL", "n": 3}, call_id="q1"),
                function_call("quotes", {"ticker": "MSFT", "n": 3000}, call_id="q2"),
                function_call("lookup", {"key": "x"}, call_id="q3"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", model=model, tools=persist_tools([quotes, lookup], max_output_tokens=2000))
    with session(context_dir) as s:
        run(agent)
        contexts = {c.call_id: c for c in s.load_contexts(s.get_all_pointers())}
    assert set(contexts) == {"q1", "q2", "q3"}
    assert contexts["q1"].result == {"ticker": "AAPL", "rows": [{"i": i, "price": 100 + i} for i in range(3)]}
    shown = {o["call_id"]: o["output"] for o in outputs(model.calls[1])}
    assert not is_stand_in(shown["q1"])
    assert is_stand_in(shown["q2"])


def test_read_context_answers_bad_requests_with_a_message(context_dir: Path) -> None:
    model = ScriptedModel(
        [
            [function_call("fetch_report", {"region": "emea"}, call_id="c1")],  # a stand-in: read_context is offered
            [function_call("read_context", {"id": "ctx:0000000000"}, call_id="r1")],
            [function_call("read_context", json.dumps({"id": "nope", "offset": -5}), call_id="r2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", model=model, tools=[*persist_tools([fetch_report], max_output_tokens=500), read_context])
    with session(context_dir):
        run(agent)
    assert "No stored output" in outputs(model.calls[2])[-1]["output"]
    assert "offset must be" in outputs(model.calls[3])[-1]["output"]


def test_hooks_only_observe(context_dir: Path) -> None:
    model = ScriptedModel(
        [[function_call("fetch_report", {"region": "emea"}, call_id="h1")], [assistant_message("ok")]]
    )
    agent = Agent(name="a", model=model, tools=[fetch_report])
    with session(context_dir) as s:
        asyncio.run(Runner.run(agent, "go", hooks=ToolContextHooks(), run_config=RunConfig(tracing_disabled=True)))
        [pointer] = s.get_all_pointers()
        assert s.load_contexts([pointer])[0].result == BIG
    assert pointer.call_id == "h1"
    assert pointer.args == {"region": "emea"}
    assert outputs(model.calls[1])[0]["output"] == BIG  # the model saw the output unchanged


def test_hooks_beside_persisted_tools_store_each_call_once(context_dir: Path) -> None:
    model = ScriptedModel(
        [
            [function_call("fetch_report", {"region": "emea"}, call_id="p1")],
            [function_call("lookup", {"key": "x"}, call_id="p2")],
            [assistant_message("ok")],
        ]
    )
    # fetch_report persisted (the agent holds a copy of it, as the SDK's namespacing makes), lookup only
    # observed by the hooks: each call is stored once either way
    [persisted] = persist_tools([fetch_report])
    agent = Agent(name="a", model=model, tools=[copy.copy(persisted), lookup, read_context])
    with session(context_dir) as s:
        asyncio.run(Runner.run(agent, "go", hooks=ToolContextHooks(), run_config=RunConfig(tracing_disabled=True)))
        assert sorted(p.call_id or "" for p in s.get_all_pointers()) == ["p1", "p2"]
    assert is_stand_in(outputs(model.calls[1])[0]["output"])  # the persisted tool still showed its stand-in


@pytest.mark.parametrize("excluded", [False, True])
def test_hooks_offer_read_context_only_for_an_output_the_rules_stand_in_for(context_dir: Path, excluded: bool) -> None:
    asked = [function_call("fetch_report", {"region": "emea"}, call_id="x1")]
    model = ScriptedModel([asked, [assistant_message("ok")]])
    agent = Agent(name="a", model=model, tools=[fetch_report])
    hooks = ToolContextHooks(exclude_tools={"fetch_report"} if excluded else set())
    with session(context_dir) as s:
        asyncio.run(Runner.run(agent, "go", hooks=hooks, run_config=RunConfig(tracing_disabled=True)))
        assert notes(s).offer_read_context is not excluded  # (an excluded tool's output is shown whole)
        assert len(s) == 1


def test_a_tool_used_outside_any_session_lands_in_the_default_one() -> None:
    model = ScriptedModel([[function_call("lookup", {"key": "x"}, call_id="d1")], [assistant_message("ok")]])
    agent = Agent(name="a", model=model, tools=persist_tools([lookup]))
    run(agent)
    assert [p.call_id for p in toolctx.current_session().get_all_pointers()] == ["d1"]


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="high_water"):
        compact_tool_outputs(high_water=-1)
    with pytest.raises(TypeError, match="session"):
        persist_tools([lookup], session="mine")  # type: ignore[arg-type]


def test_arguments_are_stored_as_the_model_wrote_them_even_past_64_bit_integers() -> None:
    from toolctx_openai_agents.tools import parse_arguments

    assert parse_arguments('{"n": 123456789012345678901234567890, "x": -9223372036854775809}') == {
        "n": 123456789012345678901234567890,
        "x": -9223372036854775809,
    }
    assert parse_arguments('{"deep": [{"n": 18446744073709551616}], "f": 0.1}') == {
        "deep": [{"n": 18446744073709551616}],
        "f": 0.1,
    }
    assert parse_arguments("  ") == {}
    assert parse_arguments("not json") == {"arguments": "not json"}


def test_arguments_python_reads_as_json_are_read_as_python_does() -> None:
    import math

    from toolctx_openai_agents.tools import parse_arguments

    assert math.isnan(parse_arguments('{"x": NaN}')["x"])
    assert parse_arguments('{"x": Infinity}') == {"x": math.inf}
    assert parse_arguments('{"s": "\\ud800"}') == {"s": "\ud800"}  # a lone surrogate, as the model wrote it
    assert parse_arguments('{"s": "caf\u00e9", "k": [1, {"a": null}]}') == {"s": "café", "k": [1, {"a": None}]}


def test_arguments_written_back_read_as_they_were() -> None:
    import math

    from toolctx_openai_agents.tools import arguments_json, parse_arguments

    for args in (
        {"command": "cat <<'EOF' > a.py\nprint('café')\nEOF", "n": 3, "flag": None},
        {"big": 123456789012345678901234567890, "nested": [{"x": -(2**70)}]},
        {"f": 0.1, "g": 1e300},
    ):
        assert parse_arguments(arguments_json(args)) == args
    assert math.isnan(parse_arguments(arguments_json({"x": math.nan}))["x"])  # not turned into null


def test_arguments_that_are_not_json_are_kept_as_they_came() -> None:
    from toolctx_openai_agents.tools import parse_arguments

    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {}
    assert parse_arguments("not json") == {"arguments": "not json"}
    assert parse_arguments("[1, 2]") == {"arguments": [1, 2]}
    deep = "[" * 100_000  # deeper than Python's JSON parser recurses
    assert parse_arguments(deep) == {"arguments": deep}


def test_arguments_nested_deeper_than_orjson_writes_are_read_and_written_back() -> None:
    from toolctx_openai_agents.tools import arguments_json, parse_arguments

    nested = "[" * 300 + "0" + "]" * 300  # read by both parsers, written by json only
    arguments = '{"a": ' + nested + ', "n": 18446744073709551616, "code": "x"}'
    parsed = parse_arguments(arguments)
    assert parsed["n"] == 18446744073709551616
    inner, depth = parsed["a"], 0
    while isinstance(inner, list):
        inner, depth = inner[0], depth + 1
    assert (depth, inner) == (300, 0)
    assert parse_arguments(arguments_json({**parsed, "code": "[stand-in]"})) == {**parsed, "code": "[stand-in]"}


def test_hooks_whose_session_cannot_be_opened_leave_the_run_alone() -> None:
    def no_session() -> toolctx.ContextSession:
        raise OSError("the context directory is gone")

    model = ScriptedModel([[function_call("lookup", {"key": "x"}, call_id="h1")], [assistant_message("ok")]])
    agent = Agent(name="a", model=model, tools=[lookup])
    with pytest.warns(toolctx.ToolctxWarning, match="could not store a call of tool 'lookup'"):
        result = asyncio.run(
            Runner.run(
                agent, "go", hooks=ToolContextHooks(session=no_session), run_config=RunConfig(tracing_disabled=True)
            )
        )
    assert result.final_output == "ok"
    assert outputs(model.calls[1])[0]["output"] == "value of x " * 200


def test_a_persisted_tool_invoked_outside_a_run_still_answers(context_dir: Path) -> None:
    """Called directly with a plain RunContextWrapper (no tool call id), as a test of the user's might."""
    from agents import FunctionTool, RunContextWrapper

    async def answer(ctx: Any, arguments: str) -> str:
        return "the answer"

    plain = FunctionTool(name="plain", description="d", params_json_schema={}, on_invoke_tool=answer)
    [persisted] = persist_tools([plain])
    assert isinstance(persisted, FunctionTool)
    with session(context_dir) as s:
        assert asyncio.run(persisted.on_invoke_tool(RunContextWrapper(None), "{}")) == "the answer"  # type: ignore[arg-type]
        [pointer] = s.get_all_pointers()
    assert pointer.tool_name == "plain"
    assert pointer.call_id is None


def test_an_assistant_message_is_measured_by_the_text_the_model_reads() -> None:
    from toolctx_openai_agents.compaction import InputItemAdapter

    from toolctx.tokens import estimate_tokens

    adapter = InputItemAdapter()
    said = "I will look at the failing test first. " * 20
    block = {"type": "output_text", "text": said, "annotations": []}
    one = {"type": "message", "role": "assistant", "content": [block]}
    halves = [{**block, "text": said[:400]}, {"type": "output_text", "text": said[400:]}]
    two = {"type": "message", "role": "assistant", "content": halves}
    for item in (one, two):
        described = adapter.describe(item)
        assert described.text == said
        assert described.tokens == estimate_tokens(said)  # not the JSON of its content blocks
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot help with that."}]}
    described = adapter.describe(refusal)
    assert described.text == ""  # nothing the policy may stand in for
    assert described.tokens > 0


def test_calls_with_arguments_nested_past_what_json_reads_are_still_compacted(context_dir: Path) -> None:
    import inspect
    import warnings

    from agents.run_config import CallModelData, ModelInputData

    deep = "[" * 1000 + "0" + "]" * 1000  # orjson reads it, json does not: kept as the string it came as
    items: list[Any] = [{"role": "user", "content": "go"}]
    for i in range(6):
        code = f"line {i}\\n" * 400
        arguments = f'{{"code": "{code}", "tree": {deep}}}'
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "write", "arguments": arguments})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "ok " * 2000})
    compact = compact_tool_outputs(high_water=1000, low_water=0, keep=1, min_gain=0, cached_price=1.0)
    data = CallModelData(model_data=ModelInputData(input=items, instructions=None), agent=None, context=None)  # type: ignore[arg-type]
    with session(context_dir), warnings.catch_warnings():
        warnings.simplefilter("error")  # compaction failing would warn and send the input unchanged
        shown = compact(data)
    assert not inspect.isawaitable(shown)
    outputs = [i["output"] for i in shown.input if i.get("type") == "function_call_output"]  # type: ignore[union-attr]
    assert all(map(is_stand_in, outputs))  # the newest as a head-and-tail stand-in: no tool hook stored it


def test_a_call_shown_whole_is_stored_with_the_next_reader_and_a_big_one_at_once(context_dir: Path) -> None:
    from agents.tool_context import ToolContext

    [persisted] = persist_tools([lookup])

    def invoke(call_id: str, key: str) -> Any:
        arguments = json.dumps({"key": key})
        context = ToolContext(None, tool_name="lookup", tool_call_id=call_id, tool_arguments=arguments)
        return asyncio.run(persisted.on_invoke_tool(context, arguments))  # type: ignore[union-attr]

    with session(context_dir) as s:
        # 2,400 and 2,200 characters (the second not ASCII), estimated within the default 1,000 tokens
        assert invoke("small", "k1") == "value of k1 " * 200
        assert invoke("accented", "é") == "value of é " * 200
        assert len(s._saver._later) == 2  # queued, not stored one by one
        stored = stored_call(s, "small")  # any reader stores the queue first
        assert stored is not None
        assert s.load_contexts([stored])[0].args == {"key": "k1"}
        [persisted] = persist_tools([lookup], max_output_tokens=100)
        assert is_stand_in(invoke("big", "k2"))  # over max_output_tokens: stored at once, for its stand-in
        assert not s._saver._later
        assert [p.call_id for p in s.get_all_pointers()] == ["small", "accented", "big"]

"""Per-tool output limits (``tool_limits``, ``@persist_context(max_output_tokens=...)``) through the real loops."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware, persist_tool
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

from toolctx import ConfigError, persist_context, session
from toolctx.assembly import ToolCallSpec, ToolOutputPlugin
from toolctx.compaction import CompactionSettings, is_stand_in
from toolctx.tokens import estimate_tokens

from .test_langchain import ScriptedChat

MEDIUM = "".join(f"order {i}: shipped\n" for i in range(130))  # under 1,000 tokens, over the 2,000 kept characters
SMALL = "the parcel was packed and sent on time\n" * 60  # about half the default limit
BIG = "".join(f"row {i}: sensor {i % 13} read {i * 7 % 1000} units\n" for i in range(400))  # a few thousand tokens
BATCHES: dict[str, Any] = {"high_water": 1500, "low_water": 0, "keep": 1, "min_gain": 0, "cached_price": 1.0}


def test_the_outputs_are_what_the_tests_need() -> None:
    assert 2000 < len(SMALL) < len(MEDIUM)  # (over head_chars + tail_chars: a stand-in would be shorter)
    assert estimate_tokens(SMALL) < estimate_tokens(MEDIUM) < 1000  # (the default limit shows both whole)
    assert estimate_tokens(BIG) > 3000


def lc_call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def lc_chat(*steps: Any) -> ScriptedChat:
    return ScriptedChat(responses=[AIMessage(content="")], steps=list(steps), received=[])


def lc_first_shown(model: ScriptedChat) -> dict[str, str]:
    """What the model was shown of each tool result the first time it saw it."""
    shown: dict[str, str] = {}
    for received in model.received:
        for message in received:
            if isinstance(message, ToolMessage):
                shown.setdefault(message.tool_call_id, str(message.content))
    return shown


def lc_shown(received: list[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in received if isinstance(m, ToolMessage)}


def sdk_shown(inputs: list[Any]) -> dict[str, str]:
    return {
        i["call_id"]: str(i["output"])
        for i in inputs
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def sdk_first_shown(model: ScriptedModel) -> dict[str, str]:
    shown: dict[str, str] = {}
    for call in model.calls:
        for call_id, output in sdk_shown(list(call.input)).items():
            shown.setdefault(call_id, output)
    return shown


# -- the settings' tool_limits, at tool time -------------------------------------------------------------------------

LIMITS: dict[str, Any] = {"grep": 300, "dump": "always", "get_user": "never"}


def test_langchain_tool_limits_at_tool_time(context_dir: Path) -> None:
    @tool
    def dump(table: str) -> str:
        """Dump a table."""
        return SMALL

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return MEDIUM

    @tool
    def grep(pattern: str) -> str:
        """Search the orders."""
        return MEDIUM

    @tool
    def get_user(user_id: str) -> str:
        """Read a user's record."""
        return BIG

    model = lc_chat(
        lc_call("dump", "d1", table="items"),  # the conversation's first stand-in: "always" does not wait for it
        lc_call("shell", "s1", command="ls"),
        lc_call("grep", "g1", pattern="shipped"),
        lc_call("get_user", "u1", user_id="mia"),
        AIMessage(content="Done."),
    )
    agent = create_agent(model, [dump, shell, grep, get_user], middleware=[ToolContextMiddleware(tool_limits=LIMITS)])
    with session(context_dir):
        agent.invoke({"messages": [HumanMessage("Check the orders.")]})

    shown = lc_first_shown(model)
    assert is_stand_in(shown["d1"])  # "always": a small output gets a stand-in
    assert shown["s1"] == MEDIUM  # the default limit shows it whole
    assert is_stand_in(shown["g1"])  # the same output over grep's lower limit
    assert shown["u1"] == BIG  # "never": a big output is shown whole


def test_agents_sdk_tool_limits_at_tool_time(context_dir: Path) -> None:
    @function_tool
    def dump(table: str) -> str:
        """Dump a table."""
        return SMALL

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return MEDIUM

    @function_tool
    def grep(pattern: str) -> str:
        """Search the orders."""
        return MEDIUM

    @function_tool
    def get_user(user_id: str) -> str:
        """Read a user's record."""
        return BIG

    model = ScriptedModel(
        [
            [function_call("dump", {"table": "items"}, call_id="d1")],
            [function_call("shell", {"command": "ls"}, call_id="s1")],
            [function_call("grep", {"pattern": "shipped"}, call_id="g1")],
            [function_call("get_user", {"user_id": "mia"}, call_id="u1")],
            [assistant_message("Done.")],
        ]
    )
    tools = persist_tools([dump, shell, grep, get_user], tool_limits=LIMITS)
    agent = Agent(name="clerk", model=model, tools=[*tools, read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(tool_limits=LIMITS))
    with session(context_dir):
        asyncio.run(Runner.run(agent, "Check the orders.", run_config=config))

    shown = sdk_first_shown(model)
    assert is_stand_in(shown["d1"])
    assert shown["s1"] == MEDIUM
    assert is_stand_in(shown["g1"])
    assert shown["u1"] == BIG


def test_agents_sdk_filter_honours_tool_limits_for_tools_it_did_not_wrap(context_dir: Path) -> None:
    """A tool no wrapper saw (an MCP server's, say) gets its stand-in from the input filter, by its own limit."""

    @function_tool
    def grep(pattern: str) -> str:
        """Search the orders."""
        return MEDIUM

    def run(limits: dict[str, Any]) -> dict[str, str]:
        model = ScriptedModel(
            [[function_call("grep", {"pattern": "shipped"}, call_id="g1")], [assistant_message("Done.")]]
        )
        agent = Agent(name="clerk", model=model, tools=[grep, read_context])
        config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(tool_limits=limits))
        with session(context_dir):
            asyncio.run(Runner.run(agent, "Check the orders.", run_config=config))
        return sdk_shown(list(model.calls[-1].input))

    assert run({})["g1"] == MEDIUM
    assert is_stand_in(run({"grep": 300})["g1"])


# -- "never": batches leave it whole too ----------------------------------------------------------------------------


def test_langchain_batches_never_compact_a_never_tool(context_dir: Path) -> None:
    @tool
    def get_user(user_id: str) -> str:
        """Read a user's record."""
        return BIG

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return f"{command}\n{MEDIUM}"

    model = lc_chat(
        lc_call("get_user", "u1", user_id="mia"),
        *(lc_call("shell", f"s{i}", command=f"cat part{i}") for i in range(4)),
        AIMessage(content="Done."),
    )
    middleware = ToolContextMiddleware(tool_limits={"get_user": "never"}, **BATCHES)
    agent = create_agent(model, [get_user, shell], middleware=[middleware])
    with session(context_dir):
        agent.invoke({"messages": [HumanMessage("Summarise Mia's orders.")]})

    assert is_stand_in(lc_shown(model.received[-1])["s0"])  # batches ran: old results are stand-ins
    assert [lc_shown(received)["u1"] for received in model.received[1:]] == [BIG] * 5  # never "get_user"


def test_agents_sdk_batches_never_compact_a_never_tool(context_dir: Path) -> None:
    @function_tool
    def get_user(user_id: str) -> str:
        """Read a user's record."""
        return BIG

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return f"{command}\n{MEDIUM}"

    model = ScriptedModel(
        [
            [function_call("get_user", {"user_id": "mia"}, call_id="u1")],
            *([function_call("shell", {"command": f"cat part{i}"}, call_id=f"s{i}")] for i in range(4)),
            [assistant_message("Done.")],
        ]
    )
    settings = CompactionSettings(tool_limits={"get_user": "never"}, **BATCHES)
    agent = Agent(name="clerk", model=model, tools=[*persist_tools([get_user, shell], settings), read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(settings))
    with session(context_dir):
        asyncio.run(Runner.run(agent, "Summarise Mia's orders.", run_config=config))

    last = sdk_shown(list(model.calls[-1].input))
    assert is_stand_in(last["s0"])
    assert [sdk_shown(list(call.input))["u1"] for call in model.calls[1:]] == [BIG] * 5


# -- the decorator's own limit, and the settings over it ------------------------------------------------------------


def test_langchain_honours_the_decorators_limit_and_the_settings_win(context_dir: Path) -> None:
    @tool
    @persist_context(max_output_tokens=300)
    def list_orders(customer: str) -> str:
        """List a customer's orders."""
        return MEDIUM

    @tool
    @persist_context(max_output_tokens="never")
    def read_ledger(account: str) -> str:
        """Read an account's ledger."""
        return BIG

    def run(middleware: ToolContextMiddleware) -> dict[str, str]:
        model = lc_chat(
            lc_call("list_orders", "o1", customer="mia"),
            lc_call("read_ledger", "l1", account="mia"),
            AIMessage(content="Done."),
        )
        agent = create_agent(model, [list_orders, read_ledger], middleware=[middleware])
        with session(context_dir):
            agent.invoke({"messages": [HumanMessage("Mia's orders?")]})
        return lc_first_shown(model)

    declared = run(ToolContextMiddleware())
    assert is_stand_in(declared["o1"])  # the decorator's 300 tokens, where the default shows it whole
    assert declared["l1"] == BIG  # the decorator's "never"
    overridden = run(ToolContextMiddleware(tool_limits={"list_orders": "never", "read_ledger": 2000}))
    assert overridden["o1"] == MEDIUM
    assert is_stand_in(overridden["l1"])


def test_langchain_persist_tool_honours_the_decorators_limit(context_dir: Path) -> None:
    @tool
    @persist_context(max_output_tokens="always")
    def export_items(table: str) -> str:
        """Export a table."""
        return SMALL

    with session(context_dir):
        assert is_stand_in(persist_tool(export_items).invoke({"table": "items"}))
        assert persist_tool(export_items, tool_limits={"export_items": 1000}).invoke({"table": "items"}) == SMALL


def test_agents_sdk_honours_the_decorators_limit_and_the_settings_win(context_dir: Path) -> None:
    @function_tool
    @persist_context(max_output_tokens=300)
    def list_orders(customer: str) -> str:
        """List a customer's orders."""
        return MEDIUM

    @function_tool
    @persist_context(max_output_tokens="never")
    def read_ledger(account: str) -> str:
        """Read an account's ledger."""
        return BIG

    def run(settings: CompactionSettings) -> dict[str, str]:
        model = ScriptedModel(
            [
                [function_call("list_orders", {"customer": "mia"}, call_id="o1")],
                [function_call("read_ledger", {"account": "mia"}, call_id="l1")],
                [assistant_message("Done.")],
            ]
        )
        tools = persist_tools([list_orders, read_ledger], settings)
        agent = Agent(name="clerk", model=model, tools=[*tools, read_context])
        config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(settings))
        with session(context_dir):
            asyncio.run(Runner.run(agent, "Mia's orders?", run_config=config))
        return sdk_first_shown(model)

    declared = run(CompactionSettings())
    assert is_stand_in(declared["o1"])
    assert declared["l1"] == BIG
    overridden = run(CompactionSettings(tool_limits={"list_orders": "never", "read_ledger": 2000}))
    assert overridden["o1"] == MEDIUM
    assert is_stand_in(overridden["l1"])


def test_the_assembler_plugin_honours_tool_limits(context_dir: Path) -> None:
    with session(context_dir) as s:
        call = ToolCallSpec(id="c1", name="grep", arguments={"pattern": "shipped"})
        assert ToolOutputPlugin(session=s).record(call, MEDIUM)[0] == MEDIUM
        assert is_stand_in(ToolOutputPlugin(session=s, tool_limits={"grep": 300}).record(call, MEDIUM)[0])
        assert ToolOutputPlugin(session=s, exclude_tools={"grep"}).record(call, BIG)[0] == BIG


# -- bad values ------------------------------------------------------------------------------------------------------


def test_bad_limits_are_refused_with_what_to_pass() -> None:
    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return command

    told = r"tool_limits\['shell'\] must be a whole number of tokens >= 1, 'never' .* or 'always' .*, got"
    with pytest.raises(ConfigError, match=told + " 'nevr'"):
        ToolContextMiddleware(tool_limits={"shell": "nevr"})
    with pytest.raises(ConfigError, match=told + " 0"):
        persist_tool(shell, tool_limits={"shell": 0})
    with pytest.raises(ConfigError, match=told + " True"):
        persist_tools([], tool_limits={"shell": True})
    with pytest.raises(ConfigError, match=r"tool_limits must map tool names to their limits.*got \[\('shell', 5\)\]"):
        compact_tool_outputs(tool_limits=[("shell", 5)])
    with pytest.raises(ConfigError, match=r"'shell' is in exclude_tools .* tool_limits\['shell'\] = 500: give it one"):
        CompactionSettings(exclude_tools={"shell"}, tool_limits={"shell": 500})
    with pytest.raises(ConfigError, match="read_context's own outputs are never compacted"):
        CompactionSettings(tool_limits={"read_context": 500})
    assert CompactionSettings(exclude_tools={"shell"}, tool_limits={"shell": "never"}).keeps_whole("shell")

    def fetch(key: str) -> str:
        return key

    with pytest.raises(ConfigError, match=r"max_output_tokens must be a whole number of tokens >= 1.*got -5"):
        persist_context(max_output_tokens=-5)(fetch)
    with pytest.raises(ConfigError, match=r"max_output_tokens must be .*got 'sometimes'"):
        persist_context(max_output_tokens="sometimes")(fetch)  # type: ignore[call-overload]


def test_a_declared_limit_lasts_as_long_as_its_tool() -> None:
    def ship(order: str) -> str:
        return order

    settings = CompactionSettings()
    shipping = persist_context(max_output_tokens="never")(ship)
    assert settings.keeps_whole("ship")
    renamed = persist_context(name="ship", max_output_tokens=200)(ship)  # the last one declared wins
    assert settings.limit_for("ship") == 200
    del shipping, renamed
    gc.collect()
    assert settings.limit_for("ship") == settings.max_output_tokens  # its tool is gone: the default again


# -- JSON records: json_output_tokens --------------------------------------------------------------------------------

# What a customer-service agent quotes an id or a fare from.
FLIGHTS = json.dumps(
    [
        {
            "flight_number": f"HAT{n:03d}",
            "origin": "JFK",
            "destination": "ATL",
            "status": "available",
            "available_seats": {"economy": n % 20, "business": n % 9},
            "prices": {"economy": 100 + n, "business": 400 + n},
        }
        for n in range(40)
    ]
)
FLIGHT_TEXT = "\n".join(  # the same records as lines of text, about as many tokens
    f"flight HAT{n:03d} JFK-ATL available, economy seats {n % 20} at {100 + n}, business {n % 9} at {400 + n}, gate {n}"
    for n in range(75)
)


def test_json_records_and_text_of_this_size() -> None:
    assert 1000 < estimate_tokens(FLIGHTS) < 3000
    assert 1000 < estimate_tokens(FLIGHT_TEXT) < 3000


def test_langchain_shows_json_records_whole_under_their_own_limit(context_dir: Path) -> None:
    @tool
    def search_flights(origin: str) -> str:
        """Search flights."""
        return FLIGHTS

    @tool
    def flight_board(origin: str) -> str:
        """The departure board."""
        return FLIGHT_TEXT

    model = lc_chat(
        lc_call("search_flights", "f1", origin="JFK"), lc_call("flight_board", "b1", origin="JFK"), AIMessage("Done.")
    )
    # (cached_price 1.0: the conversation's first stand-in need not pay for bringing read_context in)
    middleware = ToolContextMiddleware(cached_price=1.0)
    agent = create_agent(model, [search_flights, flight_board], middleware=[middleware])
    with session(context_dir):
        agent.invoke({"messages": [HumanMessage("Which flight is cheapest?")]})
    shown = lc_first_shown(model)
    assert shown["f1"] == FLIGHTS  # records: every fare in sight
    assert is_stand_in(shown["b1"])  # text of the same size: its head and tail


def test_agents_sdk_shows_json_records_whole_unless_the_tool_has_its_own_limit(context_dir: Path) -> None:
    @function_tool
    def search_flights(origin: str) -> str:
        """Search flights."""
        return FLIGHTS

    @function_tool
    def search_hotels(city: str) -> str:
        """Search hotels."""
        return FLIGHTS

    model = ScriptedModel(
        [
            [function_call("search_flights", {"origin": "JFK"}, call_id="f1")],
            [function_call("search_hotels", {"city": "ATL"}, call_id="h1")],
            [assistant_message("Done.")],
        ]
    )
    limits = {"search_hotels": 1000}  # a tool's own limit wins over the one for records
    agent = Agent(name="clerk", model=model, tools=[*persist_tools([search_flights, search_hotels]), read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(tool_limits=limits))
    with session(context_dir):
        asyncio.run(Runner.run(agent, "Which flight is cheapest?", run_config=config))
    shown = sdk_first_shown(model)
    assert shown["f1"] == FLIGHTS
    assert is_stand_in(shown["h1"])


def test_the_assembler_plugin_and_the_records_limit(context_dir: Path) -> None:
    with session(context_dir) as s:
        call = ToolCallSpec(id="c1", name="search_flights", arguments={"origin": "JFK"})
        assert ToolOutputPlugin(session=s).record(call, FLIGHTS)[0] == FLIGHTS
        assert is_stand_in(ToolOutputPlugin(session=s, json_output_tokens=1000).record(call, FLIGHTS)[0])
    with pytest.raises(ConfigError, match="json_output_tokens"):
        CompactionSettings(json_output_tokens=0)

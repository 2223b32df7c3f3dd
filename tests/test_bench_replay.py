"""The session-replay benchmark's core on two small sessions made here, through both framework loops."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("agents")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import replay
from _replay_measure import KINDS, Figures, Unit, pairing_errors
from _replay_trace import Trace, read_traces


def count(text: str) -> int:
    """A stand-in for the o200k counter: deterministic, and roughly the same size."""
    return len(text.encode()) // 4


def listing(seed: int, lines: int) -> str:
    return "".join(
        f"src/module_{seed}/file_{i}.py:{i * 7}: def handler_{i}(request): return {i}\n" for i in range(lines)
    )


def coding_session() -> dict[str, Any]:
    """One turn of shell calls, four of them with big outputs (one holding a secret) and some small."""
    outputs = [
        listing(1, 600),
        "ok\n",
        listing(2, 500) + "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789\n",
        "3 passed\n",
        listing(3, 700),
        listing(4, 400),
        "done\n",
    ]
    steps = [
        {
            "text": f"Step {i}: looking around." if i % 2 else None,
            "calls": [
                {"id": f"call_{i}", "name": "bash", "args": {"command": f"grep -rn handler src/{i}"}, "output": o}
            ],
        }
        for i, o in enumerate(outputs)
    ]
    return {
        "id": "made/coding",
        "source": "made-coding",
        "system": "You are a coding agent with a shell.",
        "turns": [{"user": "Fix the handler bug.", "steps": steps, "final": "Fixed."}],
    }


def service_session() -> dict[str, Any]:
    """Three turns of function calls with JSON results; the last turn ends on a tool result."""

    def call(i: int, name: str, args: dict[str, Any], output: str) -> dict[str, Any]:
        return {"text": None, "calls": [{"id": f"fc_{i}", "name": name, "args": args, "output": output}]}

    return {
        "id": "made/service",
        "source": "made-service",
        "system": "You are an airline agent.",
        "turns": [
            {"user": "Hi, I am mia_1.", "steps": [], "final": "How can I help?"},
            {
                "user": "Change my flight ABC123.",
                "steps": [
                    call(0, "get_user", {"user_id": "mia_1"}, '{"name": "Mia", "reservations": ["ABC123"]}'),
                    call(1, "get_reservation", {"reservation_id": "ABC123"}, '{"flights": [{"n": "HAT1"}]}'),
                ],
                "final": "Which date?",
            },
            {
                "user": "May 20, two bags.",
                "steps": [
                    call(2, "update", {"reservation_id": "ABC123", "flights": [{"n": "HAT2"}], "bags": 2}, '{"ok": 1}'),
                    call(3, "transfer", {"summary": "bags"}, "Transfer successful"),
                ],
                "final": None,
            },
        ],
    }


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    return list(read_traces([coding_session(), service_session()]))


@pytest.fixture(scope="module", params=["langchain", "agents"])
def replayed(request: pytest.FixtureRequest, traces: list[Trace]) -> list[tuple[Trace, Figures, Figures]]:
    return [(trace, *replay.replay_session(trace, request.param, count)) for trace in traces]


def test_without_toolctx_the_model_sees_every_output_verbatim(replayed: list[tuple[Trace, Figures, Figures]]) -> None:
    for trace, plain, _ in replayed:
        assert plain.outputs_verbatim_at_last_call == len(trace.calls)
        assert plain.stand_ins == 0
        assert (plain.pairing_errors, plain.order_errors) == (0, 0)
        counted = sum(len(turn.steps) + (turn.final is not None) for turn in trace.turns)
        assert plain.model_calls == counted
        assert plain.by_kind.get("read_context definition", 0) == 0


def test_with_toolctx_every_stand_in_reads_back(replayed: list[tuple[Trace, Figures, Figures]]) -> None:
    for _, _, reduced in replayed:
        assert reduced.unrestorable == []
        assert reduced.restored + reduced.restored_redacted == reduced.stand_ins
        assert (reduced.pairing_errors, reduced.order_errors) == (0, 0)
        assert reduced.hook_cpu_tool > 0
    coding, service = replayed[0][2], replayed[1][2]
    assert coding.by_kind["read_context definition"] > 0  # offered once a stand-in exists
    assert service.by_kind.get("read_context definition", 0) == 0  # a short session never needs it
    assert coding.stand_ins >= 4
    assert coding.restored_redacted == 1  # the output with a bearer token is stored redacted


def test_token_figures_add_up(replayed: list[tuple[Trace, Figures, Figures]]) -> None:
    for trace, plain, reduced in replayed:
        for figures in (plain, reduced):
            assert set(figures.by_kind) <= set(KINDS)
            assert sum(figures.by_kind.values()) == figures.tokens
            assert sum(figures.last_by_kind.values()) == figures.last_call
            assert figures.last_call < figures.cache_weighted < figures.tokens
        outputs = sum(count(call.output) for call in trace.calls)
        assert plain.last_by_kind["tool results"] == outputs or trace.turns[-1].final is None
        # Everything but tool results and toolctx's own tool is the same with and without it.
        for kind in ("tool-call arguments", "assistant text", "system and user", "tool definitions"):
            assert reduced.by_kind.get(kind) == plain.by_kind.get(kind), kind
    _, plain, reduced = replayed[0]
    assert reduced.by_kind["tool results"] < plain.by_kind["tool results"] / 2
    assert reduced.last_call < plain.last_call


def test_summary_and_tables(replayed: list[tuple[Trace, Figures, Figures]]) -> None:
    summary = replay.summarize(f for _, plain, reduced in replayed for f in (plain, reduced))
    assert len(summary) == 2
    table = replay.render(summary)
    assert "made-coding" in table
    assert "made-service" in table
    row = next(r for r in summary.values() if r["source"] == "made-coding")
    assert row["tokens"]["ratio"] < 1
    assert row["with"]["unrestorable"] == 0
    low, high = row["tokens"]["ratio_interval"]
    assert low <= row["tokens"]["ratio"] <= high
    assert "90 % interval, sessions resampled" in table


def test_the_hooks_cpu_is_set_against_the_frameworks_own_loop_in_the_same_run(
    replayed: list[tuple[Trace, Figures, Figures]],
) -> None:
    for _, plain, reduced in replayed:
        # The loop's process CPU holds the hooks (with toolctx) but not the scripted model's recording.
        assert plain.loop_cpu > 0
        assert reduced.loop_cpu > reduced.hook_cpu_tool + reduced.hook_cpu_model
    summary = replay.summarize(f for _, plain, reduced in replayed for f in (plain, reduced))
    coding = next(r for r in summary.values() if r["source"] == "made-coding")
    [bucket] = coding["cpu_by_length"]
    plain = next(p for _, p, _ in replayed if p.source == "made-coding")
    assert bucket["framework_us_per_call"] == pytest.approx(plain.loop_cpu / plain.tool_calls * 1e6)
    assert bucket["hooks_to_framework"] == pytest.approx(
        bucket["median_us_per_tool_call"] / bucket["framework_us_per_call"]
    )
    assert "framework's loop without toolctx µs" in replay.render(summary)


def test_a_rerun_shows_the_model_the_same_handles_and_tokens(traces: list[Trace]) -> None:
    def by_letters(text: str) -> int:  # (a count that differs when any handle's letters do)
        return sum(text.encode())

    coding = next(t for t in traces if t.source == "made-coding")
    first = replay.replay_session(coding, "langchain", by_letters)[1]
    again = replay.replay_session(coding, "langchain", by_letters)[1]
    assert first.stand_ins > 0
    assert (again.tokens, again.last_call) == (first.tokens, first.last_call)


def test_the_interval_holds_the_ratio_and_widens_with_how_sessions_differ() -> None:
    wholes = [100.0] * 40
    assert replay.spread([40.0] * 40, wholes) == (0.4, 0.4)  # every session saves the same: nothing uncertain
    varied = [20.0 + n for n in range(40)]  # ratios 0.20 ... 0.59: the total is 0.395
    low, high = replay.spread(varied, wholes)
    assert low < 0.395 < high
    assert 0.02 < high - low < 0.2
    assert replay.spread(varied, wholes) == (low, high)  # seeded: the same every run


def test_pairing_errors_are_counted() -> None:
    call = Unit("assistant", (), calls=("a",))
    result = Unit("tool", (), answers="a")
    user = Unit("user", ())
    assert pairing_errors([user, call, result]) == (0, 0)
    assert pairing_errors([user, result]) == (1, 0)  # a result with no call
    assert pairing_errors([user, call]) == (1, 0)  # a call never answered
    assert pairing_errors([user, call, result, result]) == (1, 0)  # answered twice
    assert pairing_errors([call, user, result]) == (0, 1)  # another message came between


def test_cold_cache_times_both_hooks_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import cold_cache

    traces = tmp_path / "made.jsonl"
    traces.write_text("".join(json.dumps(s) + "\n" for s in (coding_session(), service_session())))
    [coding] = read_traces([coding_session()])
    stored = tmp_path / "stored"
    assert len(cold_cache.tool_hook([coding.calls], bytearray(1 << 20), stored)) == len(coding.calls)
    inputs = cold_cache.filter_inputs(coding)
    assert len(inputs) == len(coding.turns[0].steps) + 1  # every step, and the final answer
    made = cold_cache.model_hook([(coding, inputs)], None, stored)
    assert len(made) == len(inputs)
    assert [c.fifth for c in made] == sorted(c.fifth for c in made)
    assert not any(stored.rglob("*.json*"))  # each session is removed when it ends

    assert cold_cache.main(["--traces", str(traces), "--runs", "2", "--evict-mib", "1"]) == 0
    table = capsys.readouterr().out
    assert "2 sessions" in table
    for name in cold_cache.HOOKS.values():
        assert f"| {name} | warm |" in table
        assert f"| {name} | evicted |" in table
        assert f"{name}: evicted / warm" in table
    assert "| 5 |" in table  # the model hook by fifth of the session
    with pytest.raises(SystemExit):
        cold_cache.main(["--traces", str(traces), "--runs", "0"])


def test_cold_cache_on_a_session_too_short_for_every_fifth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import cold_cache

    short = coding_session()
    short["turns"][0]["steps"] = short["turns"][0]["steps"][:1]
    traces = tmp_path / "short.jsonl"
    traces.write_text(json.dumps(short) + "\n")
    assert cold_cache.main(["--traces", str(traces), "--runs", "1", "--evict-mib", "1"]) == 0
    assert "| 1 |" in capsys.readouterr().out


def test_hook_parts_replays_every_variant_in_a_process_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import hook_parts

    traces = tmp_path / "made.jsonl"
    traces.write_text(json.dumps(coding_session()) + "\n")
    assert hook_parts.main(["--traces", str(traces), "--source", "made-coding", "--runs", "1", "--limit", "1"]) == 0
    table = capsys.readouterr().out
    for name in hook_parts.VARIANTS.values():
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
        tool, model = (float(cell) for cell in row.split("|")[3:5])
        assert tool > 0  # each variant measured hooks that ran
        assert model > 0
    with pytest.raises(ValueError, match="unknown variant 'no-such-part'"):
        hook_parts.take_out("no-such-part")
    with pytest.raises(SystemExit):
        hook_parts.main(["--traces", str(tmp_path / "missing.jsonl")])


def test_batch_parts_times_the_batches_of_each_min_gain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import batch_parts

    long = coding_session()  # 30 calls of about 500 tokens each: past the high-water mark, batches follow
    step = long["turns"][0]["steps"][1]
    long["turns"][0]["steps"] = [
        {**step, "calls": [{**step["calls"][0], "id": f"call_{i}", "output": f"line {i} of a test log\n" * 80}]}
        for i in range(30)
    ]
    traces = tmp_path / "made.jsonl"
    traces.write_text(json.dumps(long) + "\n")
    common = ["--traces", str(traces), "--source", "made-coding", "--runs", "1", "--longest", "1"]
    assert batch_parts.main([*common, "--min-gain", "0", "1000000"]) == 0
    table = capsys.readouterr().out
    every = next(line for line in table.splitlines() if line.startswith("| 0 |")).split("|")
    assert float(every[2]) > 0  # batches were made, and timed
    assert float(every[6]) > 0  # model calls with a batch and without, both timed
    assert float(every[5]) > 0
    parts = [line for line in table.splitlines() if line.startswith("| 0 |")][1].split("|")[2:-1]
    assert len(parts) == len(batch_parts.PARTS)
    assert float(parts[batch_parts.PARTS.index("drain")]) > 0  # the queued calls, stored by the batches
    never = next(line for line in table.splitlines() if line.startswith("| 1,000,000 |")).split("|")
    assert float(never[2]) == 0  # a gain never reached: no batch, nothing to time
    assert never[6].strip() == never[7].strip() == "–"
    with pytest.raises(SystemExit):
        batch_parts.main(["--traces", str(tmp_path / "missing.jsonl")])


@pytest.mark.parametrize("framework", ["langchain", "agents"])
def test_multiturn_reads_every_handle_back_in_later_turns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    import json

    import multiturn

    monkeypatch.setattr(multiturn, "o200k_counter", lambda: len)  # (token shares only: characters will do)

    # with results big enough for stand-ins, and what the agent says between its calls, in every turn
    session = service_session()
    for turn in session["turns"]:
        for step in turn["steps"]:
            name = step["calls"][0]["name"]  # (long enough that its marker is shorter)
            step["text"] = f"I will call {name} first: the policy asks me to check the record before I answer. " * 3
            for call in step["calls"]:
                call["output"] = json.dumps(
                    {"id": call["id"], "history": [f"event {n} of {call['id']}" for n in range(60)]}
                )
    session["turns"].append({"user": "Thanks.", "steps": [], "final": "You are welcome."})  # read back once more
    traces = tmp_path / "made.jsonl"
    traces.write_text(json.dumps(session) + "\n")
    multiturn.main(["--traces", str(traces), "--stress", "--framework", framework])
    table = capsys.readouterr().out
    assert ("Agents SDK" if framework == "agents" else "LangChain") in table

    def cell(label: str) -> str:
        return next(line for line in table.splitlines() if line.startswith(f"| {label}")).split("|")[2].strip()

    handles = int(cell("distinct handles shown"))
    assert handles > 0  # the stress settings make stand-ins...
    assert int(cell("...of which assistant text")) > 0  # ...of old assistant text too
    assert int(cell("read-backs in later turns")) > handles  # each read back after more than one turn
    exact, _, failed = (int(n) for n in cell("...exact").split(" / "))
    assert exact > 0
    assert failed == 0
    refused, checked = cell("read from another conversation").split(" of ")
    assert refused == checked != "0"

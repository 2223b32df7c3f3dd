"""Handles never cross: random call-id reuse across random conversations, and guessing handles."""

from __future__ import annotations

import itertools
import re
import string
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolctx
from toolctx import Conversations, session
from toolctx._naming import legacy_pointer_id, new_pointer_id
from toolctx.assembly import ContextAssembler, ToolOutputPlugin
from toolctx.compaction import CompactionSettings, Compactor, handle_of, is_stand_in, persist_call, read_context
from toolctx.sessions import reference_scope

from .conftest import DictAdapter, Message, answer, asks, user

POLICY = CompactionSettings(high_water=400, low_water=0, keep=1, min_gain=0, cached_price=1.0)


def made(thread: str, step: int) -> str:
    return f"OUT-{thread}-{step} " * 60


# Each step: a conversation (thread), the call id its model gives the call, whether a tool hook stores it.
steps = st.lists(
    st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["call_0", "call_1", "x"]), st.booleans()),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=steps)
def test_reused_call_ids_across_conversations_never_cross(tmp_path: Path, script: list[tuple[str, str, bool]]) -> None:
    with session(tmp_path / "ctx") as s:
        compactor = Compactor(DictAdapter(), POLICY, s)
        histories: dict[str, list[Message]] = {}
        for step, (thread, call_id, hooked) in enumerate(script):
            history = histories.setdefault(thread, [user(0, "go")])
            text = made(thread, step)
            history.append(asks(step, (call_id, "fetch", {"step": step})))
            if hooked:  # (stored as a tool hook stores it; else the compactor stores it when it needs to)
                persist_call(s, "fetch", {"step": step}, text, call_id=call_id, task_id=thread)
            history.append(answer(call_id, text, name="fetch"))
            shown, _ = compactor.view(list(history), key=thread)
            asked = {}
            for message in shown:
                if message["role"] == "assistant":
                    for call in message["calls"]:
                        asked[call["id"]] = made(thread, call["args"]["step"])
                elif message["role"] == "tool":
                    assert f"OUT-{thread}-" in message["text"] or is_stand_in(message["text"])
                    for other in {"t1", "t2", "t3"} - {thread}:
                        assert f"OUT-{other}-" not in message["text"]
                    if is_stand_in(message["text"]):
                        ref = f"ctx:{handle_of(message['text'])}"
                        back = read_context(s, ref, 0, 10**9, scope=thread)
                        assert back.partition("\n")[2] == asked[message["call_id"]], (ref, back[:120])


def test_consecutive_handles_share_no_predictable_part(tmp_path: Path) -> None:
    with session(tmp_path / "ctx") as s:
        ids = [s.record_call("t", {"i": i}, "x").id for i in range(2000)]
    assert all(re.fullmatch(r"[a-z]{10}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert len({i[0] for i in ids}) > 16  # (no shared first character, let alone prefix)
    # letter by letter, consecutive ids agree about as often as chance has it (1 in 26), not more
    agree = sum(a == b for x, y in itertools.pairwise(ids) for a, b in zip(x, y, strict=True))
    assert agree < 2 * (len(ids) - 1) * 10 / 26


def test_ten_thousand_guessed_handles_read_nothing(tmp_path: Path) -> None:
    with session(tmp_path / "ctx") as s:
        theirs = {s.record_call("t", {"i": i}, f"their output {i}", task_id="victim").id for i in range(300)}
        mine = s.record_call("t", {}, "my output", task_id="attacker").id
        alphabet = string.ascii_lowercase + string.digits
        guesses = {mine[:i] + c + mine[i + 1 :] for i in range(len(mine)) for c in alphabet}  # its neighbours
        guesses |= {legacy_pointer_id(mine[:6], n) for n in range(300)}  # a session's part then a counter
        guesses.discard(mine)
        while len(guesses) < 10_000:
            guesses.add(new_pointer_id())
        # read without any scope: a handle is found only by being known
        found = [g for g in guesses if not read_context(s, f"ctx:{g}").startswith("No stored output")]
        assert found == []
        assert theirs  # (there was something to find)


def test_a_read_without_a_scope_stays_in_the_conversation_around_it(tmp_path: Path) -> None:
    # A user's own loop calling read_context() inside a conversation's task block reads that conversation's
    # calls only: a handle of another conversation, leaked into this one's prompt, reads as unknown.
    with session(tmp_path / "ctx") as s:
        theirs = s.record_call("t", {}, "their output", task_id="victim").id
        mine = s.record_call("t", {}, "my output", task_id="attacker").id
        untagged = s.record_call("t", {}, "nobody's output").id
        with s.task("attacker"):
            assert read_context(s, f"ctx:{mine}").endswith("\nmy output")
            assert read_context(s, f"ctx:{theirs}").startswith("No stored output")
            assert read_context(s, f"ctx:{theirs}#args").startswith("No stored output")
            assert read_context(s, f"ctx:{theirs}", search="output").startswith("No stored output")
            assert read_context(s, f"ctx:{untagged}").startswith("No stored output")
            # an explicit scope still says what may be read
            assert read_context(s, f"ctx:{theirs}", scope=("attacker", "victim")).endswith("\ntheir output")
        # outside any conversation, the session's calls are all its own
        assert read_context(s, f"ctx:{theirs}").endswith("\ntheir output")
        assert read_context(s, f"ctx:{untagged}").endswith("\nnobody's output")


def test_a_conversation_session_reads_every_call_it_holds_without_a_scope(tmp_path: Path) -> None:
    # A Conversations session is one conversation's: what an assembler stored under its own id, or the
    # application untagged, reads back there, inside an adapter's tool call as outside one.
    conversations = Conversations(tmp_path / "ctx")
    try:
        with conversations.open("chat-1") as s:
            plugin = ToolOutputPlugin(session=s)
            ContextAssembler(session=s, plugins=[plugin])
            shown = plugin.add_output("fetch", "revenue by region\n" * 600)
            upload = s.save_context("upload", {"name": "q3.csv"}, "q3 " * 2000).handle
            for ref in (shown.handle, upload):
                assert read_context(s, ref).startswith(f"[{ref} characters 0-")
                with reference_scope(lambda: (s, "chat-1")):  # (an adapter's tool call, scoped by thread)
                    assert read_context(s, ref).startswith(f"[{ref} characters 0-")
    finally:
        conversations.close()


def test_a_read_whose_conversation_cannot_be_told_answers_in_words(tmp_path: Path) -> None:
    def where() -> tuple[Any, str]:
        raise KeyError("no session for thread None")

    with session(tmp_path / "ctx") as s:
        ref = s.save_context("t", {}, "output").handle
        with reference_scope(where):
            answer = read_context(s, ref)
        assert answer.startswith(f"'{ref}' could not be read just now (KeyError)")
        said = toolctx.testing.escalated_warnings()
        assert len(said) == 1
        assert "could not tell which conversation reads" in said[0]

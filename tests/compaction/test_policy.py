"""The compaction policy on its own: batches, what is left alone, argument stand-ins, restorability."""

from __future__ import annotations

import dataclasses
import gc
import json
import re
from pathlib import Path
from typing import Any

import pytest

import toolctx
from toolctx import session
from toolctx.compaction import (
    CompactionSettings,
    Compactor,
    ToolCall,
    handle_of,
    is_stand_in,
    notes,
    persist_call,
    read_context,
    shown_output,
)
from toolctx.errors import ConfigError
from toolctx.models import StorageKind
from toolctx.tokens import estimate_tokens

from .conftest import DictAdapter, Message, answer, asks, says, user

SMALL = CompactionSettings(high_water=1000, low_water=200, keep=2, min_gain=0, cached_price=1.0)


class Loop:
    """A made-up agent loop: each step asks for tool calls, stores them as a tool hook would, then calls the model."""

    def __init__(self, s: toolctx.ContextSession, settings: CompactionSettings = SMALL) -> None:
        self.session = s
        self.compactor = Compactor(DictAdapter(), settings, s)
        self.messages: list[Message] = [user(0, "fix the failing test")]
        self.views: list[list[Message]] = []
        self.edits: list[int] = []
        self.steps = 0
        self.task: str | None = None  # what the tool hook stores calls under

    def step(
        self, *calls: tuple[str, dict[str, Any], str], name: str = "shell", error: bool = False, thought: str = ""
    ) -> list[Message]:
        self.steps += 1
        ids = [f"c{self.steps}_{i}" for i in range(len(calls))]
        asked = ((i, name, a) for i, (_, a, _) in zip(ids, calls, strict=True))
        self.messages.append(asks(self.steps, *asked, text=thought))
        for call_id, (_, args, output) in zip(ids, calls, strict=True):
            failure = ValueError(output) if error else None
            persist_call(self.session, name, args, output, call_id=call_id, error=failure, task_id=self.task)
            self.messages.append(answer(call_id, output, name, error))
        return self.call_model()

    def call_model(self) -> list[Message]:
        shown, edits = self.compactor.view(list(self.messages), task=self.task)
        self.views.append(shown)
        self.edits.append(len(edits))
        return shown


def restored(s: toolctx.ContextSession, text: str, part: str = "result") -> str:
    pointer_id = handle_of(text)
    assert pointer_id is not None, text
    header, _, body = read_context(s, f"ctx:{pointer_id}", 0, 10**9, part).partition("\n")
    assert header.startswith("[ctx:"), header
    return body


def output(i: int, size: int = 2000) -> str:
    return "".join(f"{i}: line {n} of the test run output\n" for n in range(size // 30))[:size]


def tokens(messages: list[Message]) -> int:
    return sum(DictAdapter().describe(m).tokens for m in messages)


def test_below_the_high_water_mark_nothing_changes(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        shown = loop.step(("ls", {"command": "ls"}, "a.py b.py"))
        assert shown == loop.messages
        assert all(a is b for a, b in zip(shown, loop.messages, strict=True))
        assert not notes(s).offer_read_context  # no stand-in: read_context is not worth its definition


def test_a_batch_compacts_down_to_the_low_water_mark_and_keeps_the_recent_results(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)))
        shown = loop.views[-1]
        assert tokens(loop.messages) > SMALL.high_water
        assert loop.views[-2] == loop.messages[: len(loop.views[-2])]  # nothing before the first batch
        results = [m for m in shown if m["role"] == "tool"]
        assert [is_stand_in(m["text"]) for m in results[-2:]] == [False, False]  # keep=2
        assert all(is_stand_in(m["text"]) for m in results[:-2])
        assert tokens(shown) <= SMALL.low_water + tokens(results[-2:]) + tokens(shown[:1])
        for m in results[:-2]:
            assert restored(s, m["text"]) == next(o["text"] for o in loop.messages if o["id"] == m["id"])
        assert notes(s).offer_read_context


def test_between_batches_the_prefix_stays_the_same(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s, CompactionSettings(high_water=2000, low_water=200, keep=2, min_gain=0, cached_price=1.0))
        for _ in range(30):
            loop.step(("run", {"command": "pytest"}, output(loop.steps, 900)))
        batches = [i for i, n in enumerate(loop.edits) if n]
        assert len(batches) >= 2
        assert len(batches) < len(loop.edits) / 3  # edits come in batches, not one per call
        for i in range(1, len(loop.views)):
            before, now = loop.views[i - 1], loop.views[i]
            if not loop.edits[i]:
                assert now[: len(before)] == before
            # a stand-in, once shown, is shown the same way on every later call
            for old, new in zip(before, now, strict=False):
                if old["role"] == "tool" and is_stand_in(old["text"]):
                    assert new["text"] == old["text"]


def test_a_batch_that_frees_too_little_is_not_made(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s, CompactionSettings(high_water=300, low_water=0, keep=1, min_gain=100_000))
        for _ in range(6):
            loop.step(("run", {"command": "pytest"}, output(loop.steps, 800)))
        assert loop.edits == [0] * 6
        assert loop.views[-1] == loop.messages


def test_parallel_calls_keep_their_pairs_and_each_gets_its_own_stand_in(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(
            s, CompactionSettings(high_water=500, low_water=0, keep=1, min_gain=0, cached_price=1.0, args_chars=100)
        )
        loop.step(*((f"w{i}", {"path": f"f{i}.py", "content": "x = 1\n" * (100 + i)}, output(i)) for i in range(3)))
        shown = loop.step(("ls", {"command": "ls"}, "done"))
        asked = shown[1]
        assert [c["id"] for c in asked["calls"]] == ["c1_0", "c1_1", "c1_2"]
        for i, call in enumerate(asked["calls"]):
            assert call["args"]["path"] == f"f{i}.py"
            assert is_stand_in(call["args"]["content"])
            assert restored(s, call["args"]["content"], "args.content") == "x = 1\n" * (100 + i)
        assert [m["call_id"] for m in shown[2:5]] == ["c1_0", "c1_1", "c1_2"]
        handles = {handle_of(m["text"]) for m in shown[2:5]}
        assert len(handles) == 3
        assert [m["id"] for m in shown] == [m["id"] for m in loop.messages]


def test_errors_and_excluded_tools_are_left_alone(context_dir: Path) -> None:
    settings = CompactionSettings(
        high_water=500, low_water=0, keep=0, min_gain=0, cached_price=1.0, exclude_tools=("plan",)
    )
    with session(context_dir) as s:
        loop = Loop(s, settings)
        loop.step(("boom", {"command": "boom"}, output(1)), error=True)
        loop.step(("plan", {"text": "the plan"}, output(2)), name="plan")
        # an error the framework does not mark, but the store does (as the Agents SDK's handled errors)
        loop.messages.append(asks(9, ("quiet", "shell", {"command": "quiet"})))
        persist_call(s, "shell", {"command": "quiet"}, output(3), call_id="quiet", error=ValueError("quiet"))
        loop.messages.append(answer("quiet", output(3)))
        loop.step(("ok", {"command": "ok"}, output(4)))  # the first batch is possible: read_context is offered
        loop.call_model()  # and the batch is made
        texts = {m["id"]: m["text"] for m in loop.views[-1] if m["role"] == "tool"}
        assert texts["tc1_0"] == output(1)
        assert texts["tc2_0"] == output(2)
        assert texts["tquiet"] == output(3)
        assert is_stand_in(texts["tc3_0"])
        with pytest.raises(ConfigError, match="exclude_tools"):
            CompactionSettings(exclude_tools=(1,))  # type: ignore[arg-type]


def test_an_excluded_tool_and_an_output_its_stand_in_would_show_whole_are_shown_as_they_are(
    context_dir: Path,
) -> None:
    settings = CompactionSettings(exclude_tools=("fetch",), cached_price=1.0)
    with session(context_dir) as s:
        notes(s).offer_read_context = True  # (a stand-in would pay: only the rules below keep one from being made)
        page = "".join(f"{n}: a line of the page\n" for n in range(2000))
        fetched = persist_call(s, "fetch", {"url": "https://example.com"}, page, call_id="f1")
        assert fetched is not None
        assert fetched.tool == "fetch"
        assert shown_output(settings, s, fetched, page) is None
        assert shown_output(settings, s, s.find_call("f1"), page) is None  # (a pointer names its tool too)
        other = persist_call(s, "shell", {"command": "cat page"}, page, call_id="s1")
        assert is_stand_in(shown_output(settings, s, other, page))
        # Dense text: over max_output_tokens in fewer characters than the stand-in keeps of an output.
        digits = " ".join(f"{n:04d}" for n in range(380))  # 1,899 characters
        assert estimate_tokens(digits) > settings.max_output_tokens
        assert len(digits) <= settings.head_chars + settings.tail_chars
        dense = persist_call(s, "shell", {"command": "seq"}, digits, call_id="s2")
        assert shown_output(settings, s, dense, digits) is None


def test_long_string_arguments_become_stand_ins_and_the_arguments_stay_json(context_dir: Path) -> None:
    script = "cat <<'EOF' > fix.py\n" + "def handler(request):\n    return 1\n" * 40 + "EOF"
    with session(context_dir) as s:
        loop = Loop(s, CompactionSettings(high_water=400, low_water=0, keep=1, min_gain=0, cached_price=1.0))
        loop.step(("write", {"command": script, "timeout": 30}, ""))
        loop.step(("ls", {"command": "ls"}, output(2)))
        shown = loop.step(("ls", {"command": "ls -la"}, "fix.py"))
        args = shown[1]["calls"][0]["args"]
        json.dumps(args)
        assert args["timeout"] == 30
        assert is_stand_in(args["command"])
        assert f"{len(script):,} characters" in args["command"]  # cut from the whole stored argument
        assert restored(s, args["command"], "args.command") == script
        assert json.loads(restored(s, args["command"], "args")) == {"command": script, "timeout": 30}
        assert loop.messages[1]["calls"][0]["args"]["command"] == script  # the framework's own copy is untouched
        assert "has no argument" in read_context(s, f"ctx:{handle_of(args['command'])}", part="args.nope")
        assert "part must be" in read_context(s, f"ctx:{handle_of(args['command'])}", part="everything")


def test_a_stand_in_of_a_stand_in_names_the_same_stored_output(context_dir: Path) -> None:
    big = output(7, 20_000)
    with session(context_dir) as s:
        loop = Loop(
            s,
            CompactionSettings(
                high_water=600, low_water=0, keep=1, min_gain=0, cached_price=1.0, max_output_tokens=1000
            ),
        )
        pointer = persist_call(s, "shell", {"command": "cat log"}, big, call_id="big")
        first = shown_output(loop.compactor.settings, s, pointer, big)
        assert first is not None
        assert is_stand_in(first)
        assert notes(s).offer_read_context
        loop.messages += [asks(0, ("big", "shell", {"command": "cat log"})), answer("big", first)]
        loop.step(("ls", {"command": "ls"}, output(1)))
        shown = loop.step(("ls", {"command": "ls"}, output(2)))
        second = next(m["text"] for m in shown if m["id"] == "tbig")
        assert is_stand_in(second)
        assert len(second) < len(first) / 5
        assert handle_of(second) == handle_of(first) == pointer.id  # type: ignore[union-attr]
        assert restored(s, second) == big
        assert len(s) == 3  # nothing stored twice


def test_stand_ins_are_cut_from_the_redacted_copy(context_dir: Path) -> None:
    secret = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    big = secret + "\n" + output(1, 8000)
    with session(context_dir) as s:
        settings = CompactionSettings(
            high_water=300, low_water=0, keep=0, min_gain=0, cached_price=1.0, preview_chars=200
        )
        pointer = persist_call(s, "shell", {"command": "env"}, big, call_id="env")
        first = shown_output(settings, s, pointer, big)
        assert first is not None
        assert "abcdefghijklmnopqrstuvwxyz0123456789" not in first
        stored = restored(s, first)
        assert stored != big
        assert "abcdefghijklmnopqrstuvwxyz0123456789" not in stored
        assert f"{len(stored):,} characters" in first  # sizes are those of what read_context returns
        loop = Loop(s, settings)
        loop.messages += [asks(0, ("env", "shell", {"command": "env"})), answer("env", big)]
        shown = loop.call_model()
        marker = next(m["text"] for m in shown if m["id"] == "tenv")
        assert "abcdefghijklmnopqrstuvwxyz0123456789" not in marker
        assert f"({len(stored):,} chars)" in marker
        assert marker.endswith(stored[:200] + " [...]")


def test_a_result_that_cannot_be_stored_is_shown_whole(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with session(context_dir) as s:
        loop = Loop(
            s,
            CompactionSettings(high_water=300, low_water=0, keep=0, min_gain=0, cached_price=1.0, max_output_tokens=10),
        )

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise OSError("disk full")

        monkeypatch.setattr(s._saver, "save", refuse)  # the session's one save path, under every way of saving
        pointer = persist_call(s, "shell", {"command": "cat"}, output(1), call_id="lost")
        assert pointer is None  # storing failed, and did not raise
        assert shown_output(loop.compactor.settings, s, pointer, output(1)) is None  # so: the whole output
        loop.messages += [asks(0, ("lost", "shell", {"command": "cat"})), answer("lost", output(1))]
        shown = loop.call_model()  # compaction tries to store it late, fails, and leaves it whole
        assert next(m["text"] for m in shown if m["id"] == "tlost") == output(1)
        escalated = toolctx.testing.escalated_warnings()
        assert escalated
        assert all(re.search("store", str(w)) for w in escalated)


@pytest.mark.parametrize("memory_budget", [1, 4 * 2**20], ids=["moved-to-the-store", "in-memory"])
def test_a_stored_calls_token_estimate_is_its_outputs_wherever_the_output_is(
    context_dir: Path, memory_budget: int
) -> None:
    # persist_call leaves the estimate for later: it must still be the output's once it has left memory
    text = output(3, 5000)
    with session(context_dir, memory_budget=memory_budget) as s:
        saved = persist_call(s, "shell", {"command": "cat log"}, text, call_id="c")
        assert saved is not None
        second = persist_call(s, "shell", {"command": "cat log2"}, output(4, 5000), call_id="d")  # pushes "c" out
        assert second is not None
        pointer = s.get_pointer(saved.id)
        assert pointer is not None
        assert pointer.storage == (StorageKind.DISK if memory_budget == 1 else StorageKind.MEMORY)
        assert pointer.tokens == estimate_tokens(json.dumps(text)) > 1000


def test_a_result_the_store_has_only_the_call_of_is_shown_whole(context_dir: Path) -> None:
    with session(context_dir) as s:
        settings = CompactionSettings(max_output_tokens=10)
        pointer = persist_call(s, "shell", {}, output(1), call_id="x")
        assert pointer is not None
        unstored = dataclasses.replace(pointer, stored=False)
        assert shown_output(settings, s, unstored, output(1)) is None


def test_a_history_edited_elsewhere_is_read_again(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        for _ in range(8):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)))
        before = loop.views[-1]
        summarised = [user(0, "summary of the earlier steps"), *loop.messages[5:]]
        shown, _ = loop.compactor.view(summarised)
        assert [m["id"] for m in shown] == [m["id"] for m in summarised]
        kept = {m["id"]: m["text"] for m in before if m["role"] == "tool"}
        for m in shown:  # earlier decisions still apply: the same stand-ins
            if m["role"] == "tool" and is_stand_in(kept.get(m["id"], "")):
                assert m["text"] == kept[m["id"]]


def test_a_call_that_fails_half_way_leaves_no_item_twice_in_the_next(context_dir: Path) -> None:
    """An adapter sends its input unchanged when compaction fails; the next call must still be whole and single."""

    class Flaky(DictAdapter):
        fail_on: str | None = None

        def describe(self, item: Message) -> Any:
            if item["id"] == self.fail_on:
                self.fail_on = None
                raise OSError("a one-off failure")
            return super().describe(item)

    with session(context_dir) as s:
        loop = Loop(s)
        adapter = Flaky()
        loop.compactor = Compactor(adapter, SMALL, s)
        for _ in range(4):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)))
        loop.messages.append(asks(99, ("c99", "shell", {"command": "ls"})))
        loop.messages.append(answer("c99", "a.py", "shell"))
        adapter.fail_on = "tc99"  # the second of the two new items
        with pytest.raises(OSError, match="one-off"):
            loop.compactor.view(list(loop.messages))
        shown = loop.call_model()
        assert [m["id"] for m in shown] == [m["id"] for m in loop.messages]


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="low_water"):
        CompactionSettings(high_water=10, low_water=20)
    with pytest.raises(ConfigError, match="keep"):
        CompactionSettings(keep=-1)
    assert "read_context" in CompactionSettings().exclude_tools
    assert estimate_tokens("abcd") == 1


def test_the_first_stand_in_waits_for_an_output_that_pays_for_the_cache_break(context_dir: Path) -> None:
    """read_context joins the tool list with the first stand-in, so the whole prompt's cache breaks once."""
    settings = CompactionSettings(high_water=10**6, max_output_tokens=1000, head_chars=200, tail_chars=0)
    with session(context_dir) as s:
        loop = Loop(s, settings)
        for i in range(12):  # a long conversation of small outputs: about 6,000 tokens shown
            loop.step(("ls", {"command": f"ls {i}"}, output(i, 2000)))
        shown = notes(s).shown_tokens
        assert shown == tokens(loop.views[-1])
        lines = [f"99: line {n} of the test run output\n" for n in range(100_000)]

        def text_of(tokens_wanted: int) -> str:  # the longest text estimated at most this many tokens
            low, high = 0, len(lines)
            while low < high:
                middle = (low + high + 1) // 2
                low, high = (
                    (middle, high) if estimate_tokens("".join(lines[:middle])) <= tokens_wanted else (low, middle - 1)
                )
            return "".join(lines[:low])

        calls = notes(s).model_calls
        assert calls == 13  # (the model answered 12 times, the first answer made before this loop's first view)
        # frees a little less than pays for re-sending the whole prompt once at the full price: not made
        threshold = int(0.9 * shown / (1 + 0.1 * calls))
        modest = text_of(threshold - 20 + settings.stand_in_tokens)
        pointer = persist_call(s, "shell", {"command": "cat a"}, modest, call_id="modest")
        assert estimate_tokens(modest) > settings.max_output_tokens
        assert shown_output(settings, s, pointer, modest) is None
        assert not notes(s).offer_read_context
        big = text_of(threshold + 20 + settings.stand_in_tokens)  # a little more: worth it
        pointer = persist_call(s, "shell", {"command": "cat b"}, big, call_id="big")
        assert is_stand_in(shown_output(settings, s, pointer, big))
        assert notes(s).offer_read_context
        # read_context is in the tool list from now on: any output over the limit gets its stand-in
        pointer = persist_call(s, "shell", {"command": "cat c"}, modest, call_id="later")
        assert is_stand_in(shown_output(settings, s, pointer, modest))


def test_the_prompt_before_the_messages_counts_in_the_first_stand_ins_cache_break(context_dir: Path) -> None:
    """The first stand-in changes the tool list, at the start of the prompt: system prompt and tools are re-sent."""
    settings = CompactionSettings(high_water=10**6, max_output_tokens=1000, head_chars=200, tail_chars=0)
    with session(context_dir) as s:
        loop = Loop(s, settings)
        for i in range(12):
            loop.step(("ls", {"command": f"ls {i}"}, output(i, 2000)))
        shown, calls = notes(s).shown_tokens, notes(s).model_calls
        big = "".join(f"{n}: a row of the report, with its fields\n" for n in range(3000))
        freed = estimate_tokens(big) - settings.stand_in_tokens
        assert freed * (1 + 0.1 * calls) > 0.9 * shown  # pays when only the messages are re-sent
        prefix = int(freed * (1 + 0.1 * calls) / 0.9) - shown + 50  # ...not once a system prompt this long is
        notes(s).prefix_tokens = prefix
        pointer = persist_call(s, "report", {"month": "may"}, big, call_id="report")
        assert shown_output(settings, s, pointer, big) is None
        assert not notes(s).offer_read_context
        notes(s).prefix_tokens = prefix - 100
        assert is_stand_in(shown_output(settings, s, pointer, big))


def test_the_first_batch_waits_until_it_pays_for_re_sending_the_system_prompt_too(context_dir: Path) -> None:
    settings = CompactionSettings(high_water=3000, low_water=0, keep=1, min_gain=0)
    with session(context_dir) as s:
        loop = Loop(s, settings)
        notes(s).prefix_tokens = 200_000  # a very long system prompt: the first batch never pays
        for _ in range(12):
            loop.step(("run", {"command": "pytest"}, output(loop.steps, 900)))
        assert not any(loop.edits)
        assert not notes(s).offer_read_context
        assert loop.views[-1] == loop.messages
        notes(s).prefix_tokens = 100  # a short one: it does (after the one call that brings read_context in)
        loop.step(("run", {"command": "pytest"}, output(loop.steps, 900)))
        assert notes(s).offer_read_context
        loop.step(("run", {"command": "pytest"}, output(loop.steps, 900)))
        assert loop.edits[-1] > 0


def thought(i: int) -> str:
    return f"THOUGHT {i}: the failure comes from the parser, so I will look at how it reads the header. " * 5


def test_old_assistant_text_goes_in_the_batch_as_a_restorable_marker(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        shown = loop.views[-1]
        said = [m for m in shown if m["role"] == "assistant"]
        results = [m for m in shown if m["role"] == "tool"]
        assert is_stand_in(results[0]["text"])
        assert not is_stand_in(results[-1]["text"])
        # text before a compacted result is a marker; the text of the calls still shown whole stays
        assert is_stand_in(said[0]["text"])
        assert [is_stand_in(m["text"]) for m in said[-2:]] == [False, False]
        for before, after in zip(loop.messages, shown, strict=True):
            if after["role"] == "assistant" and is_stand_in(after["text"]):
                assert "assistant text" in after["text"]
                assert len(after["text"]) < len(before["text"])
                assert restored(s, after["text"]) == before["text"]
                assert after["calls"][0]["id"] == before["calls"][0]["id"]  # the calls stay, paired


def _renamed(message: Message, prefix: str) -> Message:
    """The same message in another conversation: its ids (and its calls') prefixed."""
    renamed = {**message, "id": prefix + message["id"]}
    if "call_id" in message:
        renamed["call_id"] = prefix + message["call_id"]
    if message.get("calls"):
        renamed["calls"] = [{**c, "id": prefix + c["id"]} for c in message["calls"]]
    return renamed


def test_a_later_turn_shows_old_assistant_text_with_the_same_marker(context_dir: Path) -> None:
    # The Agents SDK keeps the original items in its session: a later turn's filter (a new process, a new
    # compactor) compacts the same old text again. It must find the stored copy, not store a second one:
    # the same marker keeps the prompt prefix the provider cached, and the store does not grow.
    with session(context_dir) as s:
        loop = Loop(s)
        loop.task = "conversation-1"
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        first = loop.views[-1]
        stored = len(s)
        later = Compactor(DictAdapter(), SMALL, s).view(list(loop.messages), task="conversation-1")[0]
        assert [m["text"] for m in later] == [m["text"] for m in first]
        assert any(m["role"] == "assistant" and is_stand_in(m["text"]) for m in later)
        assert len(s) == stored
        # the same text in another conversation of the session is stored under that one's scope
        other = Compactor(DictAdapter(), SMALL, s)
        renamed = [_renamed(m, "other-") for m in loop.messages]
        for m in renamed:  # its calls, stored as its tool hooks would, under its task
            if m["role"] == "tool":
                persist_call(s, "run", {"command": "pytest"}, m["text"], call_id=m["call_id"], task_id="conversation-2")
        theirs = other.view(renamed, task="conversation-2")[0]
        markers = {m["text"] for m in later if m["role"] == "assistant" and is_stand_in(m["text"])}
        assert markers
        assert markers.isdisjoint(m["text"] for m in theirs if m["role"] == "assistant")
        for m in theirs:  # each conversation reads its own markers back, and not the other's
            if m["role"] == "assistant" and is_stand_in(m["text"]):
                ref = f"ctx:{handle_of(m['text'])}"
                assert read_context(s, ref, 0, 10**9, scope="conversation-2").startswith("[ctx:")
                assert not read_context(s, ref, 0, 10**9, scope="conversation-1").startswith("[ctx:")


def test_old_assistant_text_is_keyed_by_its_redacted_form(context_dir: Path) -> None:
    # The key is kept with the stored call: made from the text before redaction, it would let anyone holding
    # the store test guesses of the secret against it.
    from toolctx.compaction._decisions import text_key as _text_key

    secret = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    with session(context_dir) as s:
        loop = Loop(s)
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=f"{secret} {thought(loop.steps)}")
        marker = next(m["text"] for m in loop.views[-1] if m["role"] == "assistant" and is_stand_in(m["text"]))
        pointer = s.get_pointer(handle_of(marker) or "")
        assert pointer is not None
        assert pointer.call_id is not None
        said = f"{secret} {thought(1)}"
        assert pointer.call_id != _text_key(None, said)  # not from the text as the model wrote it...
        assert s.redactor is not None
        assert pointer.call_id == _text_key(None, s.redactor.redact_text(said))  # ...but as stored
        assert "abcdefghijklmnopqrstuvwxyz0123456789" not in restored(s, marker)
        stored = len(s)  # and a later turn still finds it
        Compactor(DictAdapter(), SMALL, s).view(list(loop.messages))
        assert len(s) == stored


def test_short_assistant_text_and_text_only_messages(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        loop.messages.append(says(0, thought(0)))  # an answer between turns, no calls
        loop.step(("run", {"command": "ls"}, output(1)), thought="Let me look.")
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)))
        shown = loop.views[-1]
        assert is_stand_in(shown[1]["text"])
        assert restored(s, shown[1]["text"]) == thought(0)
        assert shown[2]["text"] == "Let me look."  # under text_chars: kept as it is


def test_assistant_text_markers_stay_the_same_and_survive_a_reread(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s)
        for _ in range(12):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        first = {m["id"]: m["text"] for m in loop.views[-1] if m["role"] == "assistant" and is_stand_in(m["text"])}
        assert first
        loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        again, _ = loop.compactor.view(list(loop.messages), key="a fresh read of the same history", task=None)
        for view in (loop.views[-1], again):
            for m in view:
                if m["id"] in first:
                    assert m["text"] == first[m["id"]]
        markers = {m["text"] for view in [*loop.views, again] for m in view if m["role"] == "assistant"}
        stored = [p for p in s.get_all_pointers() if p.tool_name == "assistant_text"]
        assert len(stored) == len({t for t in markers if is_stand_in(t)})  # each stored once, not on the re-read


def test_old_assistant_text_is_stored_under_the_task_of_the_conversations_calls(context_dir: Path) -> None:
    # The oldest call has no task (stored before the conversation had one): it is stored again under the
    # conversation's task when compacted, and the markers of old assistant text go under that task too, so a
    # read scoped to it finds every marker.
    with session(context_dir) as s:
        loop = Loop(s)
        loop.step(("run", {"command": "pytest"}, output(0)), thought=thought(0))
        loop.task = "thread-1"
        while sum(loop.edits) < 4:
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        markers = [m["text"] for m in loop.views[-1] if m["role"] == "assistant" and is_stand_in(m["text"])]
        assert markers
        for marker in markers:
            text = read_context(s, f"ctx:{handle_of(marker)}", 0, 10**9, scope="thread-1")
            assert text.partition("\n")[2] in {thought(n) for n in range(loop.steps + 1)}, text


def test_assistant_text_left_whole_when_it_cannot_be_stored(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with session(context_dir) as s:
        original = s._record  # the session's save, under save_context and the adapters' path alike

        def failing(tool_name: str, *args: Any, **kwargs: Any) -> Any:
            if tool_name == "assistant_text":
                raise OSError("disk full")
            return original(tool_name, *args, **kwargs)

        monkeypatch.setattr(s, "_record", failing)
        loop = Loop(s)
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        shown = loop.views[-1]
        assert any(is_stand_in(m["text"]) for m in shown if m["role"] == "tool")
        assert [m["text"] for m in shown if m["role"] == "assistant"] == [
            m["text"] for m in loop.messages if m["role"] == "assistant"
        ]
        assert set(toolctx.testing.escalated_warnings()) == {
            "could not store old assistant text to compact it; it stays as it is (OSError: disk full)"
        }


def test_text_chars_sets_what_counts_as_long(context_dir: Path) -> None:
    with session(context_dir) as s:
        settings = CompactionSettings(
            high_water=1000, low_water=200, keep=2, min_gain=0, cached_price=1.0, text_chars=10_000
        )
        loop = Loop(s, settings)
        while not any(loop.edits):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        assert not any(is_stand_in(m["text"]) for m in loop.views[-1] if m["role"] == "assistant")
    with pytest.raises(ConfigError, match="text_chars"):
        CompactionSettings(text_chars=0)


def test_now_makes_a_batch_below_the_high_water_mark(context_dir: Path) -> None:
    with session(context_dir) as s:
        loop = Loop(s, CompactionSettings(keep=1))  # the defaults: 6,000 tokens before a batch
        for _ in range(4):
            loop.step(("run", {"command": "pytest"}, output(loop.steps)), thought=thought(loop.steps))
        assert loop.edits == [0, 0, 0, 0]
        assert not notes(s).offer_read_context
        shown, edits = loop.compactor.view(list(loop.messages), now=True)
        assert edits
        assert notes(s).offer_read_context  # in the same call: the caller's context does not fit
        results = [m for m in shown if m["role"] == "tool"]
        assert all(is_stand_in(m["text"]) for m in results[:-1])
        assert not is_stand_in(results[-1]["text"])  # keep=1
        assert loop.compactor.view(list(loop.messages), now=True)[1] == []  # nothing more to compact


def test_remembered_estimates_are_the_estimates() -> None:
    from toolctx.tokens import estimate_tokens
    from toolctx.tokens import estimate_tokens_cached as estimated

    texts = ["bash", "ls -la\n" * 50, "x" * 5000, '{"a": 1}', "日本語のテキスト" * 20, ""]
    for text in texts * 2:  # the second round is answered from memory
        assert estimated(text) == estimate_tokens(text)
        assert estimated(text.encode()) == estimate_tokens(text.encode())
    for n in range(1200):  # more texts than it keeps: it starts over and stays right
        assert estimated(f"line {n}") == estimate_tokens(f"line {n}")


class _CountingArgs(dict[str, Any]):
    """Arguments that count how often the policy reads them."""

    reads = 0

    def values(self) -> Any:
        _CountingArgs.reads += 1
        return super().values()

    def items(self) -> Any:
        _CountingArgs.reads += 1
        return super().items()


class _SizedAdapter(DictAdapter):
    """Tells the policy how long each call's arguments were as sent, as the framework adapters do."""

    def describe(self, item: Message) -> Any:
        described = super().describe(item)
        if not described.calls:
            return described
        calls = tuple(c._replace(args=_CountingArgs(c.args), size=len(json.dumps(c.args))) for c in described.calls)
        return described._replace(calls=calls)


def test_the_arguments_of_a_call_sent_short_are_never_read_for_long_ones(context_dir: Path) -> None:
    # (keeping what is in use reads every call's arguments for the words it uses: off here)
    settings = CompactionSettings(high_water=1000, low_water=0, keep=1, min_gain=0, cached_price=1.0, in_use_lines=0)
    with session(context_dir) as s:
        loop = Loop(s, settings)
        loop.compactor = Compactor(_SizedAdapter(), settings, s)
        _CountingArgs.reads = 0
        for _ in range(8):
            loop.step(("run", {"command": "pytest -x"}, output(loop.steps, 900)))
        assert any(loop.edits)  # old results were compacted...
        assert _CountingArgs.reads == 0  # ...without reading arguments that cannot hold a long string
        loop.step(("write", {"path": "a.py", "body": "x = 1\n" * 200}, "written"))
        for _ in range(3):
            loop.step(("run", {"command": "pytest -x"}, output(loop.steps, 900)))
        written = next(
            m
            for m in loop.views[-1]
            if m["role"] == "assistant" and m["calls"][0]["name"] == "shell" and "body" in m["calls"][0]["args"]
        )
        assert is_stand_in(written["calls"][0]["args"]["body"])  # a long one is still found and stood in for
        assert _CountingArgs.reads > 0


def test_read_context_once_offered_is_offered_from_the_first_call_when_the_session_is_resumed(
    context_dir: Path,
) -> None:
    first = toolctx.Conversations(context_dir)
    quiet, busy = first.get("quiet"), first.get("busy")
    persist_call(quiet, "shell", {"command": "ls"}, "a.py", call_id="q1")
    persist_call(busy, "shell", {"command": "ls"}, "a.py", call_id="b1")
    notes(busy).offer_read_context = True  # (a stand-in was shown)
    first.close()
    again = toolctx.Conversations(context_dir)  # a later turn, as a new process would run it
    assert not notes(again.get("quiet")).offer_read_context  # nothing to read back: not offered
    assert notes(again.get("busy")).offer_read_context
    again.close()
    # A session kept before toolctx noted this holds calls: its conversation may show handles
    marker = context_dir / toolctx.Conversations.session_id("quiet") / ".toolctx-session"
    written = json.loads(marker.read_text())
    marker.write_text(json.dumps({k: v for k, v in written.items() if k != "notes"}))
    third = toolctx.Conversations(context_dir)
    assert notes(third.get("quiet")).offer_read_context
    third.close()


def test_an_offer_that_could_not_be_noted_is_noted_when_the_session_is_opened_again(context_dir: Path) -> None:
    conversations = toolctx.Conversations(context_dir, max_open=1)
    held = conversations.get("x")  # an adapter holds it...
    persist_call(held, "shell", {"command": "ls"}, "a.py", call_id="x1")
    conversations.get("y")  # ...while another conversation closes it (at most one open)
    with pytest.warns(toolctx.ToolctxWarning, match="could not note 'read_context_offered'"):
        notes(held).offer_read_context = True
    assert notes(conversations.get("x")).offer_read_context  # opened again: offered, and noted now
    conversations.close()
    later = toolctx.Conversations(context_dir)  # (another process would read it from the marker)
    assert notes(later.get("x")).offer_read_context
    assert not notes(later.get("y")).offer_read_context
    later.close()


def test_notes_belong_to_their_session(context_dir: Path) -> None:
    with session(context_dir / "a") as a, session(context_dir / "b") as b:
        notes(a).offer_read_context = True
        assert not notes(b).offer_read_context
        assert notes(a).offer_read_context
        notes(b).prefix_tokens = 7
        assert (notes(a).prefix_tokens, notes(b).prefix_tokens) == (0, 7)


def test_a_new_session_gets_fresh_notes_after_the_last_one_is_gone(context_dir: Path) -> None:
    with session(context_dir / "a") as a:
        notes(a).prefix_tokens = 99
    del a
    gc.collect()
    with session(context_dir / "b") as b:
        assert notes(b).prefix_tokens == 0


def test_what_a_long_argument_frees_is_its_share_of_the_arguments_as_sent() -> None:
    body = "x = 1\n" * 200
    sent = json.dumps({"path": "a.py", "body": body})
    call = ToolCall("c1", "write", {"path": "a.py", "body": body}, len(sent), estimate_tokens(sent))
    share = Compactor._argument_tokens(call, body)
    assert 0.95 * estimate_tokens(sent) < share <= estimate_tokens(sent)  # (its escaped newlines count: they are sent)
    # an adapter that does not know the arguments' tokens: the argument is estimated on its own
    assert Compactor._argument_tokens(call._replace(tokens=-1), body) == estimate_tokens(body)

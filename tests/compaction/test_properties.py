"""Invariants of the compaction policy over random sessions."""

from __future__ import annotations

import json
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx import session
from toolctx.compaction import CompactionSettings, Compactor, handle_of, is_stand_in, persist_call, read_context

from .conftest import DictAdapter, Message, answer, asks, user

call_shape = st.tuples(
    st.integers(0, 3000),  # characters of the output
    st.integers(0, 1500),  # characters of a string argument
    st.booleans(),  # an error
)
step_shape = st.tuples(st.lists(call_shape, min_size=0, max_size=3), st.integers(0, 900))  # calls, text size
sessions = st.lists(step_shape, min_size=1, max_size=25)
policies = st.builds(
    lambda high, low, keep, gain, args: CompactionSettings(
        high_water=high, low_water=min(low, high), keep=keep, min_gain=gain, args_chars=args
    ),
    st.integers(100, 4000),
    st.integers(0, 2000),
    st.integers(0, 4),
    st.integers(0, 800),
    st.integers(20, 600),
)


def text(seed: int, size: int) -> str:
    return "".join(f"{seed}-{n} " for n in range(size))[:size]


def read_back(s: Any, shown: str, part: str) -> str:
    header, _, body = read_context(s, f"ctx:{handle_of(shown)}", 0, 10**9, part).partition("\n")
    assert header.startswith("[ctx:"), header
    return body


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=sessions, policy=policies)
def test_random_sessions(steps: list[tuple[list[tuple[int, int, bool]], int]], policy: CompactionSettings) -> None:
    with tempfile.TemporaryDirectory() as tmp, session(tmp) as s:
        compactor = Compactor(DictAdapter(), policy, s)
        messages: list[Message] = [user(0, "go")]
        originals: dict[str, tuple[dict[str, Any], str]] = {}
        previous: list[Message] = []
        added = 0
        said: dict[str, str] = {}
        for n, (calls, size) in enumerate(steps):
            ids = [f"c{n}_{i}" for i in range(len(calls))]
            made = []
            for call_id, (out, arg, _) in zip(ids, calls, strict=True):
                args = {"command": text(n, arg), "n": n}
                originals[call_id] = (args, text(n + 1000, out))
                made.append((call_id, "shell", args))
            said[f"a{n}"] = text(n + 5000, size)
            messages.append(asks(n, *made, text=said[f"a{n}"]))
            for call_id, (_, _, error) in zip(ids, calls, strict=True):
                args, out = originals[call_id]
                persist_call(s, "shell", args, out, call_id=call_id, error=ValueError("no") if error else None)
                messages.append(answer(call_id, out, error=error))
            added += 1 + len(calls)
            shown, edits = compactor.view(list(messages))

            # nothing removed or moved: every call keeps its result, in order
            assert [(m["role"], m["id"]) for m in shown] == [(m["role"], m["id"]) for m in messages]
            for m, o in zip(shown, messages, strict=True):
                if m["role"] == "assistant":
                    if is_stand_in(m["text"]):
                        assert read_back(s, m["text"], "result") == said[m["id"]]
                    else:
                        assert m["text"] == said[m["id"]]
                    assert [c["id"] for c in m["calls"]] == [c["id"] for c in o["calls"]]
                    for c in m["calls"]:
                        json.dumps(c["args"])
                        value = c["args"]["command"]
                        if is_stand_in(value):
                            assert read_back(s, value, "args.command") == originals[c["id"]][0]["command"]
                        else:
                            assert value == originals[c["id"]][0]["command"]
                        assert c["args"]["n"] == originals[c["id"]][0]["n"]
                elif m["role"] == "tool":
                    if is_stand_in(m["text"]):
                        assert not m["error"]  # errors are never replaced
                        assert read_back(s, m["text"], "result") == originals[m["call_id"]][1]
                    else:
                        assert m["text"] == originals[m["call_id"]][1]

            # between batches the prefix the model saw last time is sent again unchanged
            if not edits:
                assert shown[: len(previous)] == previous
            previous = shown

            # work is proportional to what was added: a few operations per item, never per item per call
            assert compactor.operations <= 3 * added

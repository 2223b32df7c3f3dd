"""A conversation served by several workers shows the model exactly what one worker would have.

Each worker is its own session object and compactor on one session kept in a real
S3 endpoint (moto's server, over HTTP) with a SQLite session index: the decisions
made so far (batches, stand-ins, outputs left whole, argument and text markers)
are kept with the session, and a worker that did not make them reads them before
it shows the conversation.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

import toolctx
from tests.conftest import count_calls
from toolctx.compaction import CompactionSettings, Compactor, persist_call

from .conftest import DictAdapter, Message, answer, asks, says, user

SETTINGS = CompactionSettings(high_water=3000, low_water=500, keep=2, min_gain=200, args_chars=200, text_chars=150)
HANDLE = re.compile(r"ctx:[0-9a-z]{7,64}")


def conversation(steps: int, seed: int) -> list[tuple[list[Message], bool]]:
    """Per model call, the messages new since the previous one, and whether the tool hook stored the call."""
    pick = random.Random(seed)
    script: list[tuple[list[Message], bool]] = [([user(0, "fix the failing test")], True)]
    for n in range(1, steps):
        size = pick.choice([200, 900, 6000, 15000])
        command = "cat " + "x" * pick.choice([10, 400])  # (a long argument, some of the time)
        text = pick.choice(["", "Looking at the output. " * 12])  # (long assistant text, some of the time)
        body = "".join(f"{n}: line {i} of the output\n" for i in range(size // 25))
        call_id = f"call_{n % 3}"  # (ids reused, as a server numbering its calls per response does)
        script.append(
            ([asks(n, (call_id, "shell", {"command": command}), text=text), answer(call_id, body)], pick.random() < 0.8)
        )
    script.append(([says(steps, "done")], True))
    return script


def numbered(views: list[list[Message]]) -> list[str]:
    order: dict[str, str] = {}
    return [HANDLE.sub(lambda m: order.setdefault(m.group(0), f"h{len(order)}"), repr(v)) for v in views]


def serve(
    script: list[tuple[list[Message], bool]],
    workers: list[tuple[toolctx.ContextSession, Compactor[Any]]],
    route: random.Random,
) -> list[list[Message]]:
    messages: list[Message] = []
    views = []
    for new, hooked in script:
        session, compactor = route.choice(workers)
        for message in new:
            if message["role"] == "tool" and hooked:  # (stored by the tool hook of the worker serving the step)
                ask = messages[-1]["calls"][0] if messages[-1]["role"] == "assistant" else None
                args = ask["args"] if ask else {}
                persist_call(session, "shell", args, message["text"], call_id=message["call_id"], task_id="thread-1")
            messages.append(message)
        views.append(compactor.view(list(messages), "thread-1", session)[0])
    return views


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_turns_on_random_workers_show_what_one_worker_shows(
    seed: int, s3_server: Any, s3_env: dict[str, str], tmp_path: Path
) -> None:
    store, index = f"s3://{s3_server.bucket()}/conversations", f"sqlite:///{tmp_path / 'index.db'}"
    script = conversation(40, seed)
    with toolctx.session(tmp_path, store=store, index=index, keep=True, threshold=0) as alone:
        one = serve(script, [(alone, Compactor(DictAdapter(), SETTINGS, alone))], random.Random(seed))
    with toolctx.session(tmp_path, store=store, index=index, keep=True, threshold=0) as first:
        workers = [(first, Compactor(DictAdapter(), SETTINGS, first))]
        for _ in range(2):
            other = toolctx.ContextSession.resume(first.session_id, store=store, index=index, threshold=0)
            workers.append((other, Compactor(DictAdapter(), SETTINGS, other)))
        many = serve(script, workers, random.Random(seed))
        for other, _ in workers[1:]:
            other.close()
    assert any("[toolctx" in repr(view) for view in one)  # (the conversation was compacted)
    assert numbered(many) == numbered(one)


def test_read_context_offered_by_one_worker_is_offered_by_every_worker(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path
) -> None:
    # The first stand-in brings read_context into the tool list; a worker that saw the conversation before
    # that (its notes made then) must offer it too, or the tool list, first in the prompt, would differ.
    from toolctx.compaction import notes

    store, index = f"s3://{s3_server.bucket()}/conversations", f"sqlite:///{tmp_path / 'index.db'}"
    with toolctx.session(tmp_path, store=store, index=index, keep=True, threshold=0) as first:
        other = toolctx.ContextSession.resume(first.session_id, store=store, index=index)
        try:
            assert not notes(other).offer_read_context
            notes(first).offer_read_context = True  # (as a stand-in shown by this worker's tool hook does)
            assert notes(other).offer_read_context
        finally:
            other.close()


@pytest.mark.parametrize("seed", [4, 5])
def test_turns_under_a_lease_show_what_one_worker_shows_and_query_the_index_once_a_turn(
    seed: int, s3_server: Any, s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.index import SessionIndex

    reads = count_calls(monkeypatch, SessionIndex, ("decided", "noted", "state"))
    store, index = f"s3://{s3_server.bucket()}/conversations", f"sqlite:///{tmp_path / 'index.db'}"
    script = conversation(41, seed)

    def served(workers: list[toolctx.Conversations], key: str) -> tuple[list[list[Message]], list[int]]:
        route, messages, views, turns = random.Random(seed), list[Message](), list[list[Message]](), list[int]()
        compactors = {id(w): Compactor(DictAdapter(), SETTINGS, w.get(key)) for w in workers}
        for start in range(0, len(script), 4):  # (a turn: four model calls, each after the tool hook's)
            worker = route.choice(workers)
            session, before = worker.hold(key), len(reads)
            for new, hooked in script[start : start + 4]:
                for message in new:
                    if message["role"] == "tool" and hooked:
                        args = messages[-1]["calls"][0]["args"]
                        persist_call(session, "shell", args, message["text"], call_id=message["call_id"], task_id=key)
                    messages.append(message)
                views.append(compactors[id(worker)].view(list(messages), key, session)[0])
            worker.release(key)
            turns.append(len(reads) - before)
        return views, turns

    fleet = [toolctx.Conversations(tmp_path / f"w{n}", store=store, index=index) for n in range(3)]
    alone = toolctx.Conversations(tmp_path / "alone", store=store, index=index)
    try:
        one, _ = served([alone], "thread-alone")
        many, turns = served(fleet, "thread-fleet")
    finally:
        for worker in [*fleet, alone]:
            worker.close()
    assert any("[toolctx" in repr(view) for view in one)  # (the conversation was compacted)
    assert numbered(many) == numbered(one)
    assert max(turns) == 1  # the decisions and the offer of read_context, in one query by a turn's first model call


def test_long_assistant_text_of_a_turn_is_stored_as_it_arrives_not_by_the_batch_that_marks_it(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path
) -> None:
    store, index = f"s3://{s3_server.bucket()}/conversations", f"sqlite:///{tmp_path / 'index.db'}"
    worker = toolctx.Conversations(tmp_path / "w", store=store, index=index)
    compactor: Compactor[Message] = Compactor(DictAdapter(), SETTINGS)
    thinking = "Looking at the output of the tests again. " * 10
    try:
        session = worker.hold("thread-1")
        messages = [user(0, "fix the failing test"), asks(1, ("c1", "shell", {"command": "ls"}), text="")]
        messages.append(answer("c1", "a.py b.py"))
        compactor.view(list(messages), "thread-1", session)
        messages += [asks(2, ("c2", "shell", {"command": "pytest"}), text=thinking), answer("c2", "1 failed")]
        shown, _ = compactor.view(list(messages), "thread-1", session)  # (nothing compacted yet)
        assert not any("[toolctx" in repr(m) for m in shown)
        worker.release("thread-1")  # (once what the turn stored landed)
        stored = [p for p in session.get_all_pointers() if p.tool_name == "assistant_text"]
        assert len(stored) == 1
        assert thinking.startswith(stored[0].preview)
    finally:
        worker.close()

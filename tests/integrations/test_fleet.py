"""A fleet: worker processes serving the turns of two conversations, each turn routed at random.

The workers are real processes that stay up between turns (each keeps the
conversations it served open, as a server process does) and reach a real S3
endpoint over HTTP on loopback. Every turn is served with toolctx (its big output
stood in), no worker is ever told a conversation is busy, every handle shown in turn
1 reads back on whichever worker serves a later turn, and neither conversation's
model ever sees the other's outputs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from . import fleet_worker

CONVERSATIONS = ("alpha", "beta")
TURNS = 4


@pytest.fixture
def workers(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[ProcessPoolExecutor]]:
    monkeypatch.setenv("TOOLCTX_FLEET_STORE", f"s3://{s3_server.bucket()}/conversations")
    monkeypatch.setenv("TOOLCTX_FLEET_LOCAL", str(tmp_path / "local"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    context = multiprocessing.get_context("spawn")  # (each a fresh interpreter, as a server's workers are)
    pool = [ProcessPoolExecutor(max_workers=1, mp_context=context) for _ in range(3)]
    try:
        yield pool
    finally:
        for worker in pool:
            worker.shutdown(cancel_futures=True)


def serve(
    pool: list[ProcessPoolExecutor], turn: Callable[..., dict[str, Any]], state: dict[str, Any]
) -> list[dict[str, Any]]:
    routing = random.Random(7)  # (the same routing every run)
    served = []
    for number in range(1, TURNS + 1):
        for conversation in CONVERSATIONS:
            worker = routing.choice(pool)
            outcome = worker.submit(turn, conversation, number, state[conversation]).result(timeout=300)
            if "history" in outcome:
                state[conversation] = outcome["history"]
            served.append({**outcome, "conversation": conversation, "turn": number})
    return served


def check(served: list[dict[str, Any]]) -> None:
    assert len({s["pid"] for s in served}) > 1  # (the turns of a conversation went to several workers)
    for s in served:
        assert s["stood_in"], f"turn {s['turn']} of {s['conversation']} ran without toolctx"
        if s["turn"] > 1:
            answer = s["read_back"]
            assert answer is not None
            assert answer.split("\n", 1)[1] == fleet_worker.big(s["conversation"], 1)
        other = next(c for c in CONVERSATIONS if c != s["conversation"])
        assert not any(f"{other} turn" in shown for shown in s["inputs"])


def test_langchain_turns_on_random_workers(workers: list[ProcessPoolExecutor]) -> None:
    check(serve(workers, fleet_worker.langchain_turn, dict.fromkeys(CONVERSATIONS, "")))


def test_agents_sdk_turns_on_random_workers(workers: list[ProcessPoolExecutor], tmp_path: Path) -> None:
    history = str(tmp_path / "history.db")
    served = serve(workers, fleet_worker.sdk_turn, dict.fromkeys(CONVERSATIONS, history))
    check(served)
    assert json.dumps(served).count("SessionBusyError") == 0

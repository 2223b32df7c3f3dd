"""A process killed with SIGKILL at random moments never leaves a damaged context behind."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

import toolctx
from toolctx import ContextSession
from toolctx._naming import LOCK_NAME, MANIFEST_NAME, MARKER_NAME, is_temp_name, parse_context_filename
from toolctx.sessions._records import parse_document

WRITER = Path(__file__).with_name("writer.py")
CREATOR = Path(__file__).with_name("creator.py")
KILLS = 20


def kill_writer_at_random(context_dir: Path, session_id: str, threshold: int, rng: random.Random) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, str(WRITER), str(context_dir), session_id, str(threshold)],
        stdout=subprocess.PIPE,
        env=env,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL


def test_sigkill_at_random_moments_leaves_only_whole_contexts(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    for round_ in range(KILLS):
        session_id = f"crash-{round_}"
        threshold = rng.choice([0, 4096, 32 * 1024])
        kill_writer_at_random(tmp_path, session_id, threshold, rng)
        session_dir = tmp_path / session_id
        if not session_dir.exists():
            # killed before its directory was in place (it appears with its marker in it): nothing was saved,
            # and what the kill may have left is a hidden unfinished directory that gc removes
            toolctx.gc(tmp_path, older_than=0)
            assert not [name for name in os.listdir(tmp_path) if session_id in name]
            continue
        names = sorted(p.name for p in session_dir.iterdir())
        assert MARKER_NAME in names, names

        complete: dict[str, str] = {}
        for name in names:
            parsed = parse_context_filename(name)
            if parsed is None:
                assert name in {MANIFEST_NAME, LOCK_NAME, MARKER_NAME} or is_temp_name(name), name
                continue
            context = parse_document((session_dir / name).read_bytes())  # complete and valid, or this raises
            assert context.id == parsed.pointer_id
            assert context.result == {"i": context.args["i"], "body": "é" * (context.args["i"] % 7 * 1500)}
            complete[context.id] = name

        resumed = ContextSession.resume(session_id, tmp_path, keep=False)
        pointers = resumed.get_all_pointers()
        assert {p.id for p in pointers} == set(complete), f"round {round_}: resume lost or invented contexts"
        assert all(p.filename is not None and not p.filename.startswith(".") for p in pointers)
        loaded = resumed.load_contexts(pointers)
        assert len(loaded) == len(complete)
        listed = session_dir / MANIFEST_NAME
        # killed before its first context was whole, a session has nothing to list, and may have no manifest
        lines = listed.read_bytes().splitlines() if complete or listed.exists() else []
        manifest = [orjson.loads(line) for line in lines]
        assert sorted(entry["id"] for entry in manifest) == sorted(complete)  # rewritten whole and consistent
        resumed.close()
        assert not session_dir.exists(), f"round {round_}: {sorted(os.listdir(session_dir))}"


@pytest.mark.parametrize("step", ["made", "marked"])
def test_a_kill_while_the_session_directory_is_made_leaves_only_what_gc_removes(tmp_path: Path, step: str) -> None:
    session_id = "unfinished-session"
    (tmp_path / "notes.txt").write_text("mine")
    foreign = tmp_path / f".{session_id}.0123456789abcdef.new"  # named like one, but holding a file of the user's
    foreign.mkdir()
    (foreign / "user.txt").write_text("mine")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, str(CREATOR), str(tmp_path), session_id, step], stdout=subprocess.PIPE, env=env
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"stopped"
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    [left] = sorted(set(os.listdir(tmp_path)) - {"notes.txt", foreign.name})  # the directory the kill interrupted
    assert session_id in left

    assert toolctx.gc(tmp_path) == []  # made a moment ago: spared (it may be being made right now)
    assert toolctx.gc(tmp_path, older_than=0, dry_run=True) == [tmp_path / left]
    assert toolctx.gc(tmp_path, older_than=0) == [tmp_path / left]
    assert sorted(os.listdir(tmp_path)) == [foreign.name, "notes.txt"]
    assert (foreign / "user.txt").read_text() == "mine"
    with toolctx.session(tmp_path, session_id=session_id, threshold=0) as s:  # the id is free again
        s.save_context("t", {}, "x")
    assert sorted(os.listdir(tmp_path)) == [foreign.name, "notes.txt"]

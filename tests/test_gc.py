"""toolctx.gc removes what crashed processes left behind, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

import toolctx
from toolctx import ConfigError, session
from toolctx._naming import LOCK_NAME, MARKER_NAME

CRASH = """
import os, sys, toolctx
keep = len(sys.argv) > 3 and sys.argv[3] == "keep"
s = toolctx.session(sys.argv[1], session_id=sys.argv[2], threshold=0, keep=keep)
s.__enter__()
s.save_context("t", {"i": 1}, "x" * 100)
s.save_context("t", {"i": 2}, "y" * 100)
os._exit(1)  # dies without cleaning up, like a crash
"""

HOLD = """
import sys, toolctx
with toolctx.session(sys.argv[1], session_id=sys.argv[2], threshold=0) as s:
    s.save_context("t", {}, "live")
    print("ready", flush=True)
    sys.stdin.read()
"""


def run(script: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", script, *args], env=env, check=False)


def age(directory: Path, seconds: float) -> None:
    """Make every file in ``directory`` look ``seconds`` old."""
    then = time.time() - seconds
    for path in [directory, *directory.iterdir()]:
        os.utime(path, (then, then))


def test_orphans_of_crashed_processes_are_removed(context_dir: Path) -> None:
    run(CRASH, str(context_dir), "crashed")
    orphan = context_dir / "crashed"
    assert len(list(orphan.glob("t_*.json"))) == 2
    assert toolctx.gc(context_dir) == []  # too recent for the default hour
    age(orphan, 2 * 3600)
    assert toolctx.gc(context_dir, dry_run=True) == [orphan]
    assert orphan.exists()
    assert toolctx.gc(context_dir) == [orphan]
    assert not orphan.exists()


def test_older_than_accepts_seconds_and_timedeltas(context_dir: Path) -> None:
    run(CRASH, str(context_dir), "crashed")
    age(context_dir / "crashed", 120)
    assert toolctx.gc(context_dir, older_than=timedelta(minutes=5)) == []
    assert toolctx.gc(context_dir, older_than=60) == [context_dir / "crashed"]
    with pytest.raises(ConfigError, match="older_than"):
        toolctx.gc(context_dir, older_than=-1)


def test_live_sessions_are_never_touched(context_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, "-c", HOLD, str(context_dir), "other-process"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"ready"
        with session(context_dir, session_id="this-process", threshold=0) as mine:
            mine.save_context("t", {}, "mine")
            age(context_dir / "other-process", 10 * 3600)
            age(context_dir / "this-process", 10 * 3600)
            assert toolctx.gc(context_dir, older_than=0) == []
            assert mine.load_contexts(mine.get_all_pointers())[0].result == "mine"
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
    assert list(context_dir.iterdir()) == []


def test_a_kept_session_whose_process_crashed_stays_for_resume(context_dir: Path) -> None:
    run(CRASH, str(context_dir), "kept-crashed", "keep")
    crashed = context_dir / "kept-crashed"
    age(crashed, 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0) == []  # keep=True: meant to be resumed, even after a crash
    with toolctx.ContextSession.resume("kept-crashed", context_dir) as resumed:
        assert sorted(c.result for c in resumed.load_contexts(resumed.get_all_pointers())) == ["x" * 100, "y" * 100]
    age(crashed, 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == [crashed]


def test_kept_sessions_stay_unless_asked(context_dir: Path) -> None:
    with session(context_dir, session_id="kept", keep=True) as s:
        s.save_context("t", {}, "keep me")
    age(context_dir / "kept", 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0) == []
    with toolctx.ContextSession.resume("kept", context_dir) as resumed:
        assert [c.result for c in resumed.load_contexts(resumed.get_all_pointers())] == ["keep me"]
    age(context_dir / "kept", 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == [context_dir / "kept"]
    assert list(context_dir.iterdir()) == []


def test_nothing_but_toolctx_files_is_deleted(context_dir: Path) -> None:
    (context_dir / "photos").mkdir()
    (context_dir / "photos" / "cat.jpg").write_bytes(b"meow")
    (context_dir / "notes.txt").write_text("mine")
    os.symlink(context_dir / "photos", context_dir / "linked")
    run(CRASH, str(context_dir), "crashed")
    (context_dir / "crashed" / "user-file.txt").write_text("left here by the user")
    age(context_dir / "crashed", 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0) == [context_dir / "crashed"]
    assert sorted(p.name for p in (context_dir / "crashed").iterdir()) == ["user-file.txt"]
    assert (context_dir / "photos" / "cat.jpg").read_bytes() == b"meow"
    assert (context_dir / "notes.txt").read_text() == "mine"
    assert (context_dir / "linked").is_symlink()


def test_a_missing_context_dir_is_nothing_to_do(tmp_path: Path) -> None:
    assert toolctx.gc(tmp_path / "never-created") == []


def test_a_folder_is_a_session_only_if_toolctx_marked_it(context_dir: Path) -> None:
    # Names alone make nothing toolctx's: a lock file, a manifest and documents named like its own.
    for folder in ("has-a-lock", "has-everything"):
        (context_dir / folder).mkdir()
        (context_dir / folder / "session.lock").write_text("{}")
    (context_dir / "has-everything" / "manifest.jsonl").write_text('{"op":"put","file":"x"}\n')
    (context_dir / "has-everything" / "t_0123456789abcdef_1735012345678_1_9f3a1c.json").write_text("{}")
    age(context_dir / "has-a-lock", 10 * 3600)
    age(context_dir / "has-everything", 10 * 3600)
    before = sorted(p.name for p in context_dir.rglob("*"))
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == []
    assert sorted(p.name for p in context_dir.rglob("*")) == before


def test_files_named_like_toolctx_s_in_an_orphan_are_kept_unless_toolctx_wrote_them(context_dir: Path) -> None:
    run(CRASH, str(context_dir), "crashed")
    orphan = context_dir / "crashed"
    (orphan / "t_0123456789abcdef_1735012345678_7_9f3a1c.json").write_text('{"user": "data"}')
    age(orphan, 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0) == [orphan]
    assert [p.name for p in orphan.iterdir()] == ["t_0123456789abcdef_1735012345678_7_9f3a1c.json"]


def make_legacy(directory: Path, *, closed: bool) -> None:
    """Turn a session directory into what toolctx wrote before markers existed."""
    (directory / MARKER_NAME).unlink()
    owner = {"pid": 2**22 + 1, "host": "gone", "since": 1.0, **({"closed": 2.0} if closed else {})}
    (directory / LOCK_NAME).write_bytes(orjson.dumps(owner))


def test_sessions_from_before_markers_are_still_collected(context_dir: Path) -> None:
    run(CRASH, str(context_dir), "crashed")
    with session(context_dir, session_id="kept", keep=True, threshold=0) as s:
        s.save_context("t", {}, "keep me")
    make_legacy(context_dir / "crashed", closed=False)
    make_legacy(context_dir / "kept", closed=True)
    age(context_dir / "crashed", 10 * 3600)
    age(context_dir / "kept", 10 * 3600)
    assert toolctx.gc(context_dir, older_than=0) == [context_dir / "crashed"]
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == [context_dir / "kept"]
    assert list(context_dir.iterdir()) == []


def test_an_unfinished_folder_that_cannot_be_read_is_left_and_the_rest_collected(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(CRASH, str(context_dir), "crashed")
    unreadable = context_dir / ".made.0123456789abcdef.new"  # a session folder a killed process was making
    unreadable.mkdir()
    listed = os.scandir

    def scandir(path: str | os.PathLike[str] = ".") -> object:  # (root reads everything: refuse it here)
        if os.fspath(path) == str(unreadable):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return listed(path)

    monkeypatch.setattr(os, "scandir", scandir)
    removed = toolctx.gc(context_dir, older_than=0)
    assert context_dir / "crashed" in removed
    assert unreadable.is_dir()

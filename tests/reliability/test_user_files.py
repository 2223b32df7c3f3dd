"""resume, gc, clear and sessions ending never change a file toolctx did not write, nor hang on one.

A context directory is shared with the user's own folders and files, some of
them named exactly like toolctx's (``manifest.jsonl``, ``session.lock``, context
documents, temporary files), some of them FIFOs that a plain ``open()`` would
wait on forever, some of them links. Every operation that reads or deletes runs
against the directory and against the user's folders; afterwards every byte and
modification time of the user's files is what it was.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

import toolctx
from toolctx import ContextSession, SessionNotFoundError, ToolctxWarning, session
from toolctx._naming import LOCK_NAME, MANIFEST_NAME, MARKER_FORMAT, MARKER_NAME

T = TypeVar("T")

HAS_FIFO = hasattr(os, "mkfifo")
DOCUMENT_NAME = "search_0123456789abcdef_1735012345678_1_9f3a1c.json"
TEMP_NAME = f".{DOCUMENT_NAME}.0123abcd.tmp"
BIG = "x" * 40_000
CRASH = """
import os, sys, toolctx
toolctx.session(sys.argv[1], session_id="orphan-one").save_context("t", {}, "x" * 40_000)
os._exit(1)  # dies without cleaning up
"""


def no_hang(action: Callable[[], T], seconds: float = 60.0) -> T:
    """Run ``action``, failing the test instead of hanging the suite if it never returns."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{action!r} hung (a FIFO opened for reading?)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def describe(path: Path) -> tuple[object, ...]:
    """What must not change about a user's path: its kind, mode and, for a file, bytes and modification time."""
    info = os.lstat(path)
    kind = stat.S_IFMT(info.st_mode)
    if stat.S_ISDIR(kind):
        return (kind, stat.S_IMODE(info.st_mode))  # (a folder's time changes when a session folder is made in it)
    content = path.read_bytes() if stat.S_ISREG(kind) else os.readlink(path) if stat.S_ISLNK(kind) else None
    return (kind, stat.S_IMODE(info.st_mode), info.st_size, info.st_mtime_ns, content)


@pytest.fixture
def user_paths(tmp_path: Path) -> list[Path]:
    """A context directory ``tmp_path/ctx`` full of the user's things; yields them all."""
    root = tmp_path / "ctx"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("outside the context dir")
    made: list[Path] = []

    def file(path: Path, content: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        made.append(path)

    # Files named like toolctx's, at the top and in folders named like sessions.
    for folder in (root, root / "datasets"):
        file(folder / MANIFEST_NAME, b'{"my": "rows"}\n')
        file(folder / LOCK_NAME, b"my lock")
        file(folder / DOCUMENT_NAME, b'{"user": "data"}')
        file(folder / TEMP_NAME, b"")
        file(folder / "notes.txt", b"notes")
    file(root / "datasets" / "raw" / "part-0.csv", b"a,b\n1,2\n")
    # A lock exactly like the ones toolctx wrote before markers existed, plus one key: not toolctx's.
    file(root / "looks-old" / LOCK_NAME, orjson.dumps({"pid": 1, "host": "h", "since": 1.0, "owner": "me"}))
    # A marker for another name (a copied session folder), and one that is a link to a real marker.
    marker = {"format": MARKER_FORMAT, "session_id": "elsewhere", "kept": False}
    file(root / "copied" / MARKER_NAME, orjson.dumps(marker) + b"\n")
    file(outside / "linked" / MARKER_NAME, orjson.dumps({**marker, "session_id": "linked"}) + b"\n")
    (root / "linked").mkdir()
    os.symlink(outside / "linked" / MARKER_NAME, root / "linked" / MARKER_NAME)
    os.symlink(outside, root / "link-to-outside")
    made += [root / "linked", root / "linked" / MARKER_NAME, root / "link-to-outside"]
    if HAS_FIFO:  # FIFOs where toolctx's files would be: opening one to read waits for a writer forever
        (root / "pipes").mkdir()
        for name in (MARKER_NAME, LOCK_NAME, MANIFEST_NAME, DOCUMENT_NAME, TEMP_NAME):
            os.mkfifo(root / "pipes" / name)
            made.append(root / "pipes" / name)
        os.mkfifo(root / "fifo")
        made += [root / "pipes", root / "fifo"]
        with socket.socket(socket.AF_UNIX) as listener:  # a socket named like the lock
            try:
                listener.bind(str(root / "datasets" / "raw" / LOCK_NAME))
                made.append(root / "datasets" / "raw" / LOCK_NAME)
            except OSError:  # the path is too long for a socket address here
                pass
    made += [parent for path in made for parent in path.parents if root in parent.parents]
    return sorted(set(made))


def user_folders(root: Path) -> list[Path]:
    """The user's folders directly in the context directory (named like sessions, but not toolctx's)."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def everything_under(root: Path) -> list[Path]:
    """Every path below ``root``, links not followed."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        found += [Path(folder, name) for name in dirs + files]
    return sorted(found)


def save_and_clear(s: ContextSession) -> None:
    with s:
        s.save_context("search", {}, BIG)
        s.clear()


def test_nothing_toolctx_did_not_write_is_changed_or_hangs_it(user_paths: list[Path], tmp_path: Path) -> None:
    root = tmp_path / "ctx"
    before = {p: describe(p) for p in user_paths}
    outside_before = {p: describe(p) for p in (tmp_path / "outside").rglob("*")}

    # resume() refuses every folder toolctx did not create, naming it and saying what to do.
    for folder in user_folders(root):
        for keep in (True, False):
            with pytest.raises(SessionNotFoundError, match=rf"{folder.name}.*keep=True"):
                no_hang(lambda: ContextSession.resume(folder.name, root, keep=keep))  # noqa: B023

    with pytest.raises(SessionNotFoundError, match="no session directory"):
        ContextSession.resume("link-to-outside", root)

    # A real kept session and the orphan of a crash next to them, so gc has work to do.
    with session(root, session_id="kept-one", keep=True) as kept:
        kept.save_context("fetch", {}, BIG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", CRASH, str(root)], env=env, check=False)
    assert (root / "orphan-one").is_dir()

    # gc, on the context directory and on the user's folders as if they were context directories.
    for context_dir in [root, *user_folders(root)]:
        no_hang(lambda: toolctx.gc(context_dir, older_than=0, dry_run=True))  # noqa: B023
    assert no_hang(lambda: toolctx.gc(root, older_than=0)) == [root / "orphan-one"]
    assert no_hang(lambda: toolctx.gc(root, older_than=0, include_kept=True)) == [root / "kept-one"]
    for context_dir in user_folders(root):
        assert no_hang(lambda: toolctx.gc(context_dir, older_than=0, include_kept=True)) == []  # noqa: B023

    # Sessions that end (kept or not) in the context directory and inside the user's folders.
    for context_dir in [root, root / "datasets"]:
        for keep in (False, True):
            with session(context_dir, keep=keep, threshold=0) as s:
                s.save_context("search", {"q": 1}, BIG)
                s.save_context("search", {"q": 2}, "small")
                s.clear_context_dir()
                s.save_context("search", {"q": 3}, BIG)
            if keep:
                ContextSession.resume(s.session_id, context_dir, keep=False).close()
            assert not s.session_dir.exists()
    # A session given the name of a user's folder never takes it over.
    for folder in user_folders(root):
        with pytest.warns(ToolctxWarning, match="could not store"):
            save_and_clear(session(root, session_id=folder.name, keep=True, threshold=0))

    assert {p: describe(p) for p in user_paths} == before
    assert {p: describe(p) for p in (tmp_path / "outside").rglob("*")} == outside_before
    assert everything_under(root) == sorted(p for p in user_paths if root in p.parents)


def test_files_the_user_put_in_a_session_folder_outlive_clear_and_the_end_of_the_session(
    context_dir: Path,
) -> None:
    with session(context_dir, threshold=0) as s:
        mine = s.save_context("search", {"q": 1}, BIG)
        assert mine.filepath is not None
        other = session(context_dir, threshold=0)
        copied = other.save_context("search", {"q": 1}, BIG)
        assert copied.filepath is not None
        assert copied.filename is not None
        user: dict[str, bytes] = {
            "notes.txt": b"mine",
            DOCUMENT_NAME: b'{"user": "data"}',  # named like a context document
            copied.filename: Path(copied.filepath).read_bytes(),  # a document of another session
            TEMP_NAME: b"the user's",  # named like a temporary file
        }
        for name, content in user.items():
            (s.session_dir / name).write_bytes(content)
        if HAS_FIFO:
            os.mkfifo(s.session_dir / "search_0123456789abcdef_1735012345678_2_9f3a1c.json")
        before = {p: describe(p) for p in s.session_dir.iterdir() if p.name in user or p.suffix == ".json"}
        del before[Path(mine.filepath)]
        no_hang(s.clear_context_dir)
        assert not Path(mine.filepath).exists()
        s.save_context("search", {"q": 2}, BIG)
        other.close()
    assert {p: describe(p) for p in s.session_dir.iterdir()} == before  # marker, lock and own files gone
    assert toolctx.gc(context_dir, older_than=0, include_kept=True) == []  # no marker: not toolctx's any more

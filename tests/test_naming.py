from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx import ContextSession, session
from toolctx._naming import (
    HEAD_BYTES,
    LOCK_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    MAX_TOOL_NAME,
    context_filename,
    is_own_file,
    is_temp_name,
    new_pointer_id,
    new_session_id,
    parse_context_filename,
    sanitize_tool_name,
    validate_session_id,
)
from toolctx.errors import ConfigError


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("search_code", "search_code"),
        ("../../etc/passwd", "etc-passwd"),
        ("/abs/path", "abs-path"),
        ("a\x00b", "a-b"),
        ("café crème", "cafe-creme"),
        ("検索", "tool"),
        ("..", "tool"),
        ("", "tool"),
        ("-rf", "rf"),
        ("C:\\Windows", "C-Windows"),
    ],
)
def test_sanitize_tool_name(raw: str, safe: str) -> None:
    assert sanitize_tool_name(raw) == safe


def test_long_names_are_cut() -> None:
    assert len(sanitize_tool_name("x" * 10_000)) == MAX_TOOL_NAME


@given(st.text())
def test_any_name_sanitises_to_a_flat_safe_name(name: str) -> None:
    safe = sanitize_tool_name(name)
    assert 1 <= len(safe) <= MAX_TOOL_NAME
    assert set(safe) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    assert ".." not in safe
    assert parse_context_filename(context_filename(safe, "0" * 16, 1_700_000_000_000, 3, "abcdef"))


def test_context_filename_round_trips() -> None:
    name = context_filename("search_code", "0123456789abcdef", 1735012345678, 12, "9f3a1c")
    assert name == "search_code_0123456789abcdef_1735012345678_12_9f3a1c.json"
    parsed = parse_context_filename(name)
    assert parsed is not None
    assert parsed.tool == "search_code"
    assert parsed.counter == 12
    assert parsed.pointer_id == "9f3a1cc"


@pytest.mark.parametrize(
    "name",
    [
        "notes.txt",
        "manifest.jsonl",
        "x_0123456789abcdef_1735012345678_1_9f3a1c.json\n",
        "../x_0123456789abcdef_1735012345678_1_9f3a1c.json",
        ".x_0123456789abcdef_1735012345678_1_9f3a1c.json.12345678.tmp",
    ],
)
def test_foreign_names_are_not_context_files(name: str) -> None:
    assert parse_context_filename(name) is None


def test_temp_names_are_recognised() -> None:
    assert is_temp_name(".x_0123456789abcdef_1735012345678_1_9f3a1c.json.0000002a.tmp")
    assert is_temp_name(".manifest.jsonl.00000000.tmp")
    assert not is_temp_name("x.json")
    assert not is_temp_name(".x.json.tmp")


def test_session_ids() -> None:
    sid = new_session_id()
    assert validate_session_id(sid) == sid
    assert new_session_id() != sid
    for bad in ["", "..", "a/b", "../x", ".hidden", "a..b", "x" * 200, "a\x00", 5]:
        with pytest.raises(ConfigError, match="session_id"):
            validate_session_id(bad)


# -- telling toolctx's files from files merely named like them ---------------------------------

SESSION = "20261122T043300-9f3a1c2b"
DOCUMENT = "search_0123456789abcdef_1735012345678_12_9f3a1c.json"  # pointer id 9f3a1cc
HEADER = b'{"format":"toolctx/1","id":"9f3a1cc","session_id":"' + SESSION.encode() + b'","tool_name":"search"'


@pytest.mark.parametrize(
    ("name", "head", "own"),
    [
        (DOCUMENT, HEADER, True),
        (DOCUMENT, HEADER.replace(b"toolctx/1", b"toolctx/2"), True),  # a later format version
        (DOCUMENT, HEADER.replace(b"9f3a1cc", b"9f3a1cd"), False),  # another call's document under this name
        (DOCUMENT, HEADER.replace(b"-9f3a1c2b", b"-00000000"), False),  # another session's document
        (DOCUMENT, b'{"user": "data"}', False),
        (DOCUMENT, b"", False),
        ("notes.json", HEADER, False),  # not a name toolctx makes
        (f".{DOCUMENT}.0123abcd.tmp", HEADER[:40], False),  # cut inside the header: cannot tell
        (f".{DOCUMENT}.0123abcd.tmp", HEADER + b',"result":', True),
        (f".{DOCUMENT}.0123abcd.tmp", b"", True),  # a crash before the first byte
        (f".{DOCUMENT}.0123abcd.tmp", b"the user's", False),
        ("manifest.jsonl", b'{"op":"put","file":"search_0123', True),
        ("manifest.jsonl", b'{"op":"pu', True),  # its first line cut short
        ("manifest.jsonl", b"", True),
        ("manifest.jsonl", b'{"my": "rows"}\n', False),
        (".manifest.jsonl.0000002a.tmp", b'{"op":"put","file":"', True),
        ("session.lock", b'{"pid":4242,"host":"h","since":1.0}', True),
        ("session.lock", b"", True),  # rewritten in place: empty after a crash
        ("session.lock", b"my lock", False),
        (
            ".toolctx-session",
            b'{"format":"toolctx-session/1","session_id":"' + SESSION.encode() + b'","kept":false}',
            True,
        ),
        (".toolctx-session", b'{"format":"toolctx-session/1","session_id":"other","kept":false}', False),
        (".toolctx-session", b"", False),
    ],
)
def test_is_own_file_reads_what_toolctx_writes_first(name: str, head: bytes, own: bool) -> None:
    assert is_own_file(name, head, SESSION) is own


@pytest.mark.parametrize("session_id", ["s", "s" * 128])
def test_what_a_session_writes_is_recognised_as_its_own_from_its_first_bytes(
    context_dir: Path, session_id: str
) -> None:
    with session(context_dir, session_id=session_id, keep=True, threshold=0) as s:
        pointer = s.save_context("search" * 20, {"q": "x" * 5000}, {"hits": ["y" * 100] * 100})
        assert pointer.filename is not None
        written = sorted(s.session_dir.iterdir())
        assert [p.name for p in written] == sorted([MARKER_NAME, LOCK_NAME, MANIFEST_NAME, pointer.filename])
        for path in written:
            assert is_own_file(path.name, path.read_bytes()[:HEAD_BYTES], session_id), path.name
        for path in (s.session_dir / pointer.filename, s.session_dir / MARKER_NAME):  # they name their session
            assert not is_own_file(path.name, path.read_bytes()[:HEAD_BYTES], session_id + "x"), path.name
    ContextSession.resume(session_id, context_dir, keep=False).close()


def test_a_forked_child_never_draws_the_ids_its_parent_draws() -> None:
    new_pointer_id()  # (the parent has random numbers drawn and not used yet)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, ",".join(new_pointer_id() for _ in range(10)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read().split(",")
    parent = [new_pointer_id() for _ in range(10)]
    assert len(child) == 10
    assert not set(child) & set(parent)

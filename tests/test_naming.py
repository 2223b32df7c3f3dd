from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx._naming import (
    MAX_TOOL_NAME,
    context_filename,
    is_temp_name,
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

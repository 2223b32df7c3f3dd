"""Hostile results, escaping names and refusing disks: the tool call always goes through."""

from __future__ import annotations

import errno
import math
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import files_under
from toolctx import StorageKind, ToolctxWarning, current_session, persist_context, session
from toolctx._naming import MARKER_NAME


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque handle>"


def cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {"name": "loop"}
    value["self"] = value
    return value


HOSTILE: list[tuple[str, Any, str | None]] = [
    ("object", Opaque(), "not JSON-serialisable"),
    ("cycle", cyclic(), "cycle"),
    ("huge int", 10**40, "64-bit"),
    ("surrogates", "text \udc80 more", "surrogates"),
    ("object in list", [1, Opaque()], "not JSON-serialisable"),
    ("bytes", b"\x00\x01binary", None),
    ("nan", [math.nan, -math.inf], None),
]


@pytest.mark.parametrize(("label", "result", "note"), HOSTILE, ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("threshold", [32 * 1024, 0], ids=["memory", "disk"])
def test_hostile_results_come_back_unchanged_and_are_stored_in_fallback_form(
    context_dir: Path, label: str, result: Any, note: str | None, threshold: int
) -> None:
    @persist_context
    def tool() -> Any:
        return result

    with session(context_dir, threshold=threshold) as s:
        if note is None:
            assert tool() is result
        else:
            with pytest.warns(ToolctxWarning, match=note):
                assert tool() is result
        [stored] = s.load_contexts(s.get_all_pointers())
    if note is not None:
        assert any(note in n for n in stored.notes)
    if label == "object":
        assert stored.result == {"$repr": "<Opaque handle>", "$type": f"{__name__}.Opaque"}
    elif label == "cycle":
        assert stored.result == {"name": "loop", "self": {"$cycle": "dict"}}
    elif label == "huge int":
        assert stored.result == str(10**40)
    elif label == "surrogates":
        assert stored.result == "text \\udc80 more"
    elif label == "bytes":
        assert stored.result == {"$bytes": "AAFiaW5hcnk="}
    elif label == "nan":
        assert stored.result == [None, None]


def test_hostile_arguments_are_stored_too(context_dir: Path) -> None:
    @persist_context
    def tool(handle: Any, text: str) -> str:
        return "ok"

    with session(context_dir) as s:
        assert tool(Opaque(), "bad \ud800") == "ok"
        [pointer] = s.get_all_pointers()
        [stored] = s.load_contexts([pointer])
    assert pointer.args == {
        "handle": {"$repr": "<Opaque handle>", "$type": f"{__name__}.Opaque"},
        "text": "bad \\ud800",
    }
    assert any("surrogates" in n for n in stored.notes)


ESCAPES = ["../../x", "/etc/passwd", "..", "a\x00b", "x" * 10_000, "C:\\evil", "~/home", "con", "名前/../../x"]


@pytest.mark.parametrize("name", ESCAPES, ids=range(len(ESCAPES)))
def test_tool_names_and_arguments_never_escape_the_session_directory(tmp_path: Path, name: str) -> None:
    context_dir = tmp_path / "inner" / "ctx"
    tool = persist_context(name=name)(lambda path: "y" * 40_000)
    with session(context_dir) as s:
        tool(path=f"../../{name}")
        s.save_context(name, {name: name}, "z" * 40_000, task_id=name)
        written = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert len(written) >= 3
        for path in written:
            assert path.parent == s.session_dir
            assert len(path.name) < 255
    assert files_under(tmp_path / "inner" / "ctx") == []
    assert [p.name for p in tmp_path.iterdir()] == ["inner"]


def test_long_argument_values_are_shortened_in_pointers_but_kept_whole(context_dir: Path) -> None:
    document = "word " * 10_000

    @persist_context
    def summarise(text: str, tags: list[str]) -> str:
        return "short"

    with session(context_dir) as s:
        summarise(document, tags=[str(i) for i in range(500)])
        [pointer] = s.get_all_pointers()
        [stored] = s.load_contexts([pointer])
    assert len(pointer.args["text"]) < 300
    assert pointer.args["tags"][-1] == "… [500 items]"
    assert stored.args == {"text": document, "tags": [str(i) for i in range(500)]}


def refuse_with(code: int) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(code, errno.errorcode[code])

    return refuse


@pytest.mark.parametrize(
    ("fault", "target", "code"),
    [
        ("full disk", "writev", errno.ENOSPC),
        ("read-only filesystem", "open", errno.EROFS),
        ("permission denied", "mkdir", errno.EACCES),
    ],
)
def test_a_refusing_disk_never_breaks_the_tool(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str, target: str, code: int
) -> None:
    @persist_context
    def fetch(n: int) -> str:
        return "x" * 50_000

    with session(context_dir) as s:
        monkeypatch.setattr(f"toolctx.storage._local.os.{target}", refuse_with(code))
        with pytest.warns(ToolctxWarning, match="could not store the output of tool 'fetch'"):
            assert fetch(1) == "x" * 50_000
        monkeypatch.undo()
        [pointer] = s.get_all_pointers()
        assert pointer.storage is StorageKind.NONE
        assert not pointer.stored
        assert s.load_contexts([pointer]) == []
        assert fetch(2) == "x" * 50_000  # the disk is back: storing works again
        assert s.get_all_pointers()[1].storage is StorageKind.DISK


def test_a_context_dir_that_is_a_file_is_refused_gracefully(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("user data")

    @persist_context
    def fetch() -> str:
        return "x" * 50_000

    with session(blocker / "ctx") as s:
        with pytest.warns(ToolctxWarning, match="could not store"):
            assert fetch() == "x" * 50_000
        assert s.get_all_pointers()[0].storage is StorageKind.NONE
    assert blocker.read_text() == "user data"


def test_a_failed_spill_keeps_results_in_memory(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with session(context_dir, memory_budget=1_000) as s:
        first = s.save_context("t", {"n": 1}, "a" * 600)
        monkeypatch.setattr("toolctx.storage._local.os.writev", refuse_with(errno.ENOSPC))
        with pytest.warns(ToolctxWarning, match="stays in memory"):
            s.save_context("t", {"n": 2}, "b" * 600)
        monkeypatch.undo()
        assert [c.result for c in s.load_contexts(s.get_all_pointers())] == ["a" * 600, "b" * 600]
        assert s.get_pointer(first.id) is not None


def test_files_are_private_and_writes_leave_no_temp_files(context_dir: Path) -> None:
    with session(context_dir, threshold=0) as s:
        for i in range(20):
            s.save_context("t", {"i": i}, "v")
        names = [p.name for p in s.session_dir.iterdir()]
        assert MARKER_NAME in names  # the one hidden file: the mark that toolctx made this folder
        assert not [n for n in names if n.startswith(".") and n != MARKER_NAME]  # no temp file left
        assert stat.S_IMODE(s.session_dir.stat().st_mode) == 0o700
        assert {stat.S_IMODE(p.stat().st_mode) for p in s.session_dir.iterdir()} == {0o600}


def test_default_session_tools_never_write_outside_the_context_dir(tmp_path: Path) -> None:
    persist_context(name="../../../outside")(lambda: "x" * 40_000)()
    session_dir = current_session().session_dir
    assert [p.parent for p in tmp_path.rglob("*.json")] == [session_dir]

"""@persist_context(by_reference=...): a handle passed where a value is expected, resolved before the tool runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import toolctx
from toolctx import ConfigError, HandleError, persist_context, session
from toolctx.compaction import HandleParameters, is_text_schema, read_context
from toolctx.sessions import Reference, parse_reference, resolve_reference

SOURCE = "".join(f"line {n}\tcafé  \r\n" for n in range(1, 101)) + "last, no newline"
REPORT = {"items": [{"name": f"item {n}", "price": n} for n in range(5)], "total": 5}

written: dict[str, Any] = {}


@persist_context
def read_file(path: str) -> str:
    return SOURCE


@persist_context
def report(q: str) -> dict[str, Any]:
    return REPORT


@persist_context
def failing(q: str) -> str:
    raise RuntimeError("the backend is down")


@persist_context(by_reference=("content",))
def write_file(path: str, content: str) -> str:
    written[path] = content
    return f"wrote {len(content)}"


@persist_context(by_reference=True)
def save_json(path: str, data: dict[str, Any], title: str | None = None) -> str:
    written[path] = (data, title)
    return "saved"


@persist_context(by_reference=("data", "rows"))
def load(data: dict[str, Any], rows: list[int] | None = None) -> Any:
    return data, rows


@pytest.fixture(autouse=True)
def _clean() -> None:
    written.clear()


# -- parsing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("ctx:abcdefghij", Reference("ctx:abcdefghij", "abcdefghij")),
        ("  ctx:abcdefghij\n", Reference("ctx:abcdefghij", "abcdefghij")),
        ("ctx:abcdefghij#args.content", Reference("ctx:abcdefghij#args.content", "abcdefghij", "args.content")),
        ("ctx:abcdefghij#args", Reference("ctx:abcdefghij#args", "abcdefghij", "args")),
        ("ctx:abcdefghij#lines=10-40", Reference("ctx:abcdefghij#lines=10-40", "abcdefghij", lines="10-40")),
        (
            "ctx:abcdefghij#args.content&lines=3-",
            Reference("ctx:abcdefghij#args.content&lines=3-", "abcdefghij", "args.content", lines="3-"),
        ),
        (
            'ctx:abcdefghij#path=$["a&b"][0]',
            Reference('ctx:abcdefghij#path=$["a&b"][0]', "abcdefghij", path='$["a&b"][0]'),
        ),
    ],
)
def test_handles_with_a_part_and_a_selection_parse(text: str, parsed: Reference) -> None:
    assert parse_reference(text) == parsed


@pytest.mark.parametrize("value", [None, 3, ["ctx:abcdefghij"], "abcdefghij", "ctx: a note", "ctx:abcdefghij and more"])
def test_values_that_are_not_one_handle_are_not_references(value: object) -> None:
    assert parse_reference(value) is None


@pytest.mark.parametrize(
    "text",
    [
        "ctx:",
        "ctx:ABC",
        "ctx:abc",
        "ctx:abcdefghij#",
        "ctx:abcdefghij#bogus",
        "ctx:abcdefghij#args.",
        "ctx:abcdefghij#lines=1-2&path=$.a",
        "ctx:abcdefghij#args.a&args.b",
        "ctx:abcdefghij#path=",
    ],
)
def test_a_malformed_handle_is_refused_with_the_syntax(text: str) -> None:
    with pytest.raises(HandleError, match=r"write ctx:<id> for a stored output") as caught:
        parse_reference(text)
    assert caught.value.reason == "malformed"


# -- resolving ----------------------------------------------------------------------------------------------


def test_a_handle_passes_the_stored_output_exactly_and_the_call_stores_the_handle(context_dir: Path) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        assert write_file("copy.py", handle) == f"wrote {len(SOURCE)}"
        [stored] = s.load_contexts([s.get_all_pointers()[1]])
    assert written["copy.py"] == SOURCE
    assert stored.args == {"path": "copy.py", "content": handle}
    assert stored.notes == [f"arguments: content passed by reference: {handle}"]


def test_parts_lines_and_paths_select_what_read_context_would(context_dir: Path) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        report("all")
        source, data = (p.handle for p in s.get_all_pointers())
        write_file("lines", content=f"{source}#lines=10-12")
        write_file("tail", content=f"{source}#lines=101-")
        write_file("arg", content=f"{source}#args.path")
        write_file("args", content=f"{source}#args")
        write_file("name", content=f"{data}#path=$.items[2].name")
        write_file("json", content=f"{data}#path=items.1")
    lines = SOURCE.splitlines(keepends=True)
    assert written["lines"] == "".join(lines[9:12])
    assert written["tail"] == "last, no newline"
    assert written["arg"] == "a.py"
    assert json.loads(written["args"]) == {"path": "a.py"}
    assert written["name"] == "item 2"
    assert json.loads(written["json"]) == {"name": "item 1", "price": 1}


def test_a_parameter_declared_as_json_gets_the_value(context_dir: Path) -> None:
    with session(context_dir) as s:
        report("all")
        save_json("x", {"inline": 1}, "kept")  # (values still pass as they are)
        as_text = s.save_context("cat", {"path": "r.json"}, json.dumps(REPORT)).handle
        data = s.get_all_pointers()[0].handle
        assert load(data) == (REPORT, None)
        assert load(as_text, rows=f"{data}#path=$.items[0]") == (REPORT, {"name": "item 0", "price": 0})
        assert load({"a": 1}, rows=f"{as_text}#path=$.items[1].price") == ({"a": 1}, 1)
    assert written["x"] == ({"inline": 1}, "kept")


def test_by_reference_true_opts_in_the_string_parameters_only(context_dir: Path) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        save_json("out", {"raw": handle}, title=handle)
        save_json(handle, {}, None)
    assert written["out"] == ({"raw": handle}, SOURCE)  # (data is not a string parameter: left alone)
    assert written[SOURCE] == ({}, None)


def test_positional_keyword_method_and_async_calls_resolve_alike(context_dir: Path) -> None:
    class Files:
        @persist_context(by_reference=("content",))
        def write(self, path: str, content: str) -> str:
            written[path] = content
            return "ok"

        @persist_context(by_reference=("content",))
        async def awrite(self, path: str, content: str) -> str:
            written[path] = content
            return "ok"

    with session(context_dir) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        Files().write("m", handle)
        asyncio.run(Files().awrite("a", content=handle))
        write_file(path="k", content=handle)
    assert written == {"m": SOURCE, "a": SOURCE, "k": SOURCE}


def test_an_argument_passed_by_reference_reads_as_the_value_it_named(context_dir: Path) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        first = s.get_all_pointers()[0].handle
        write_file("one", first)
        second = s.get_all_pointers()[1].handle
        write_file("two", f"{second}#args.content")
    assert written["two"] == SOURCE


@pytest.mark.parametrize(
    ("given", "reason", "words"),
    [
        ("ctx:zzzzzzzzzz", "unknown", "no stored output ctx:zzzzzzzzzz in this conversation"),
        ("{read_file}#args.nope", "part", "has no argument 'nope'; its arguments are ['path']"),
        ("{read_file}#lines=500", "selection", "line 500 is past the end of ctx:"),
        ("{report}#path=$.missing", "selection", "has no key 'missing'"),
        ("{failing}", "error", "is a call that failed (RuntimeError); it has no output to pass"),
        ("ctx:abc", "malformed", "is not a handle"),
    ],
)
def test_a_refused_handle_raises_for_the_model_and_the_tool_does_not_run(
    context_dir: Path, given: str, reason: str, words: str
) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        report("all")
        with pytest.raises(RuntimeError):
            failing("x")
        handles = {p.tool_name: p.handle for p in s.get_all_pointers()}
        with pytest.raises(HandleError) as caught:
            write_file("out", given.format(**handles))
        refused = s.get_all_pointers()[-1]
        [stored] = s.load_contexts([refused])
    assert caught.value.reason == reason
    assert str(caught.value).startswith("the content argument: ")
    assert words in str(caught.value)
    assert "out" not in written
    assert refused.tool_name == "write_file"
    assert refused.is_error
    assert stored.error is not None
    assert stored.error.type == "HandleError"


def test_a_refusal_shows_the_handle_whatever_the_parameter_is_called(context_dir: Path) -> None:
    @persist_context(by_reference=("token",))
    def call_api(token: str) -> str:
        return "called"

    with session(context_dir), pytest.raises(HandleError) as caught:  # (error messages are redacted: a
        call_api("ctx:zzzzzzzzzz")  # parameter named like a secret must not hide what to fix)
    assert str(caught.value).startswith("the token argument: no stored output ctx:zzzzzzzzzz in this conversation")


def test_a_handle_of_another_task_reads_as_unknown(context_dir: Path) -> None:
    with session(context_dir) as s:
        with s.task("alice"):
            read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        with s.task("alice"):
            write_file("mine", handle)
        with s.task("mallory"), pytest.raises(HandleError, match="no stored output") as caught:
            write_file("stolen", handle)
    assert caught.value.reason == "unknown"
    assert written == {"mine": SOURCE}


def test_a_handle_passes_within_a_conversation_and_not_to_another(tmp_path: Path) -> None:
    """In a conversation's session (``Conversations.open``), the calls of plain decorated tools are its own."""
    from toolctx.sessions import Conversations

    conversations = Conversations(tmp_path / "conversations")
    with conversations.open("alice") as alice:
        read_file("a.py")
        handle = alice.get_all_pointers()[0].handle
        write_file("mine", handle)
    with conversations.open("bob"), pytest.raises(HandleError, match="no stored output"):
        write_file("stolen", handle)
    assert written == {"mine": SOURCE}


def test_a_handle_of_another_session_reads_as_unknown(context_dir: Path, tmp_path: Path) -> None:
    with session(context_dir) as other:
        read_file("a.py")
        handle = other.get_all_pointers()[0].handle
        with session(tmp_path / "elsewhere"), pytest.raises(HandleError, match="no stored output"):
            write_file("stolen", handle)
    assert written == {}


def test_a_redacted_copy_is_refused_so_no_marker_is_written(context_dir: Path) -> None:
    @persist_context
    def read_env(path: str) -> str:
        return "A=1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nB=2\n"

    with session(context_dir) as s:
        read_env(".env")
        handle = s.get_all_pointers()[0].handle
        write_file("first", f"{handle}#lines=1")  # (a selection without the marker passes)
        with pytest.raises(HandleError, match=r"has secrets redacted \(it holds \[REDACTED\]\)") as caught:
            write_file(".env.bak", handle)
    assert caught.value.reason == "redacted"
    assert "Pass the value itself" in str(caught.value)
    assert written == {"first": "A=1\n"}


def test_without_redaction_nothing_is_refused_for_markers(context_dir: Path) -> None:
    with session(context_dir, redact=False) as s:
        s.save_context("cat", {}, "a [REDACTED] word, as written")
        write_file("out", s.get_all_pointers()[0].handle)
    assert written["out"] == "a [REDACTED] word, as written"


def test_a_string_starting_with_ctx_is_a_value_where_not_opted_in(context_dir: Path) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        write_file(handle, "ctx: not a handle, a sentence")
    assert written == {handle: "ctx: not a handle, a sentence"}


def test_a_store_that_cannot_be_read_says_so(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with session(context_dir) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle

        def broken(ref: str) -> Any:
            raise OSError("disk unplugged")

        monkeypatch.setattr(s, "parts_of", broken)
        with pytest.raises(HandleError, match=r"could not be read just now \(OSError: disk unplugged\)") as caught:
            write_file("out", handle)
    assert caught.value.reason == "unreadable"
    assert written == {}


def test_resolve_reference_scopes_by_task(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = s.save_context("cat", {"path": "a"}, "text", task_id=7)
        reference = parse_reference(pointer.handle)
        assert reference is not None
        assert resolve_reference(s, reference, scope=7) == "text"
        assert resolve_reference(s, reference, scope=(3, 7)) == "text"
        assert resolve_reference(s, reference) == "text"
        with pytest.raises(HandleError, match="no stored output"):
            resolve_reference(s, reference, scope=8)


# -- options ------------------------------------------------------------------------------------------------


def test_by_reference_names_must_be_parameters_of_the_tool() -> None:
    with pytest.raises(ConfigError, match=r"by_reference names \['body'\].*its parameters are \['path', 'content'\]"):

        @persist_context(by_reference=("body",))
        def write(path: str, content: str) -> None: ...

    with pytest.raises(ConfigError, match="by_reference"):

        @persist_context(by_reference=("rest",))
        def variadic(*rest: str) -> None: ...


def test_a_tool_not_opted_in_keeps_its_calls_as_they_were(context_dir: Path) -> None:
    plain = persist_context(lambda path, content: (path, content))
    with session(context_dir):
        assert plain("ctx:abcdefghij", content="ctx:abcdefghij#lines=1") == ("ctx:abcdefghij", "ctx:abcdefghij#lines=1")


def test_the_adapters_setting_is_checked_and_reads_json_schemas() -> None:
    with pytest.raises(ConfigError, match="maps tool names"):
        HandleParameters(["write_file"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="maps tool names"):
        HandleParameters({"write_file": [1]})  # type: ignore[dict-item]
    setting = HandleParameters({"write_file": ["content"], "save": True, "off": False})
    assert "write_file" in setting
    assert "off" not in setting
    properties = {
        "path": {"type": "string"},
        "data": {"type": "object"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "anything": {},
        "rows": {"type": "array"},
    }
    assert setting.parameters("save", properties) == (("path", "note", "anything"), frozenset())
    assert setting.parameters("write_file", {"content": {"type": "string"}}) == (("content",), frozenset())
    assert HandleParameters({"t": ["data", "rows"]}).parameters("t", properties) == (
        ("data", "rows"),
        frozenset({"data", "rows"}),
    )
    with pytest.raises(ConfigError, match=r"by_reference names \['content'\] that tool 'write_file' does not take"):
        setting.check("write_file", {"path": {}, "body": {}})
    setting.check("write_file", {"path": {}, "content": {}})
    assert is_text_schema({"type": ["string", "null"]})
    assert not is_text_schema({"type": ["string", "integer"]})


def test_the_error_is_a_toolctx_error_and_a_value_error() -> None:
    assert issubclass(HandleError, toolctx.ToolctxError)
    assert issubclass(HandleError, ValueError)


def test_a_read_back_and_toolctx_show_say_the_argument_was_passed_by_reference(context_dir: Path) -> None:
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from toolctx.cli._app import app

    with session(context_dir, keep=True) as s:
        read_file("a.py")
        handle = s.get_all_pointers()[0].handle
        write_file("copy.py", f"{handle}#lines=2-3")
        write = s.get_all_pointers()[1]
        assert read_context(s, write.handle, part="args.content").endswith(f"\n{handle}#lines=2-3")
        session_id = s.session_id
    shown = CliRunner().invoke(app, ["show", session_id, write.handle, "--context-dir", str(context_dir), "--no-pager"])
    assert shown.exit_code == 0
    assert f'"content":"{handle}#lines=2-3"' in shown.stdout
    assert f"notes: arguments: content passed by reference: {handle}#lines=2-3" in shown.stdout

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolctx import ContextSession, persist_context, session
from toolctx.redaction import REDACTED
from toolctx.sessions._echoes import redacted_values, scrub_json, scrub_text

SECRET = "hunter2-correct-horse"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token, matched by the rules anywhere


def stored_files(context_dir: Path) -> str:
    return "\n".join(p.read_text() for p in context_dir.rglob("*") if p.is_file())


def test_a_secret_argument_echoed_in_the_result_and_the_exception_is_redacted_there_too(context_dir: Path) -> None:
    @persist_context
    def login(user: str, password: str) -> dict[str, str]:
        return {"status": f"logged in {user} with {password}", f"seen {password}": "key"}

    @persist_context
    def fail(user: str, password: str) -> None:
        raise PermissionError(f"wrong password {password!r} for {user}")

    with session(context_dir, keep=True, threshold=0) as s:
        assert login("ann", SECRET)["status"].endswith(SECRET)  # the caller still gets the real result
        with pytest.raises(PermissionError, match=SECRET):
            fail("ann", SECRET)
        ok, failed = s.load_contexts(s.get_all_pointers())
    assert ok.args == {"user": "ann", "password": REDACTED}
    assert ok.result == {"status": f"logged in ann with {REDACTED}", f"seen {REDACTED}": "key"}
    assert failed.error is not None
    assert failed.error.message == f"wrong password '{REDACTED}' for ann"
    assert failed.error.traceback is not None
    assert SECRET not in failed.error.traceback
    assert SECRET not in stored_files(context_dir)


def test_secrets_in_names_tags_call_ids_and_descriptions_are_redacted(context_dir: Path) -> None:
    with ContextSession(context_dir, keep=True, threshold=0) as s:
        pointer = s.save_context(
            f"fetch-{TOKEN}",
            {"api_key": SECRET},
            "ok",
            task_id=f"task {TOKEN}",
            query_id=f"q {TOKEN}",
            call_id=f"call {SECRET}",
            description=f"fetch with {SECRET} and {TOKEN}",
        )
        [context] = s.load_contexts([pointer])
        assert s.find_call(f"call {REDACTED}", task_id=f"task {REDACTED}") is not None
    for shown in (pointer, context):
        assert TOKEN not in shown.tool_name
        assert shown.task_id == f"task {REDACTED}"
        assert shown.query_id == f"q {REDACTED}"
        assert shown.tool_description == f"fetch with {REDACTED} and {REDACTED}"
    assert pointer.filename is not None
    assert TOKEN not in pointer.filename
    text = stored_files(context_dir)
    assert TOKEN not in text
    assert SECRET not in text


@pytest.mark.parametrize("result", ["ok", "x" * 300_000], ids=["small", "large"])
def test_a_secret_only_in_the_call_id_is_redacted(context_dir: Path, result: str) -> None:
    # the call id is screened in the same scan as small arguments and results, on its own beside large ones
    with ContextSession(context_dir, keep=True) as s:
        s.save_context("fetch", {"url": "https://example.org"}, result, call_id=f"call-{TOKEN}")
        [pointer] = s.get_all_pointers()
        assert s.find_call(f"call-{REDACTED}") is not None
    assert pointer.call_id == f"call-{REDACTED}"
    assert TOKEN not in stored_files(context_dir)


def test_a_call_without_secret_arguments_is_stored_unchanged(context_dir: Path) -> None:
    with ContextSession(context_dir) as s:
        pointer = s.save_context("search", {"query": "password reset"}, {"hits": ["password reset guide"]})
        [context] = s.load_contexts([pointer])
    assert context.result == {"hits": ["password reset guide"]}


def test_redacted_values_are_the_whole_values_replaced_longest_first() -> None:
    before = json.dumps({"password": "abcd", "nested": {"token": ["x1234567", 98765]}, "q": "abcdef"}).encode()
    after = json.dumps({"password": REDACTED, "nested": {"token": REDACTED}, "q": "abcdef"}).encode()
    assert redacted_values(before, after) == ("x1234567", "98765", "abcd")
    short = json.dumps({"pin": "123"}).encode()
    assert redacted_values(short, json.dumps({"pin": REDACTED}).encode()) == ()  # too short to search for


def test_scrubbing_json_touches_strings_and_keys_never_numbers() -> None:
    data = json.dumps({"abcd": "x abcd y", "n": 12345, "list": ["abcd"]}).encode()
    scrubbed = json.loads(scrub_json(data, ("abcd", "2345")))
    assert scrubbed == {REDACTED: f"x {REDACTED} y", "n": 12345, "list": [REDACTED]}
    assert scrub_json(b'{"a": 1}', ("abcd",)) == b'{"a": 1}'
    assert scrub_text("no secret here", ("abcd",)) == "no secret here"


def test_a_placeholder_argument_is_not_searched_for_in_the_output(context_dir: Path) -> None:
    # The argument is still stored redacted, but "test" in the output is no echo of password="test".
    with ContextSession(context_dir, keep=True) as s:
        pointer = s.save_context("login", {"user": "ann", "password": "test"}, "Ran 3 tests in test_login.py: ok")
        [context] = s.load_contexts([pointer])
    assert context.args == {"user": "ann", "password": REDACTED}
    assert context.result == "Ran 3 tests in test_login.py: ok"

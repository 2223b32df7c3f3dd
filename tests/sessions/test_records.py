"""One definition of a stored call's metadata, carried by every form a call takes."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.sessions.helpers import BIG
from toolctx import CallMetadata, ContextPointer, StoredContext, session
from toolctx._naming import MANIFEST_NAME
from toolctx.sessions._records import CALL_FIELDS, Call

META = set(CallMetadata.model_fields)


def test_pointers_and_loaded_contexts_share_the_metadata_definition() -> None:
    assert issubclass(ContextPointer, CallMetadata)
    assert issubclass(StoredContext, CallMetadata)
    assert set(CALL_FIELDS) <= set(Call.__slots__)  # what a call carries itself, by the same names


def test_every_metadata_field_reaches_the_file_the_manifest_and_the_pointer(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s, s.task(7), s.query("how big?"):
        pointer = s.save_context("fetch", {"url": "https://x"}, BIG, call_id="call-1", description="the page")
        document = orjson.loads(Path(pointer.filepath or "").read_bytes())
        [line] = (s.session_dir / MANIFEST_NAME).read_bytes().splitlines()
        manifest = orjson.loads(line)
        [loaded] = s.load_contexts([pointer])
    for name in META:
        assert name in document, name
        assert name in manifest or name == "session_id", name
        assert getattr(loaded, name) == getattr(pointer, name), name
    assert document["call_id"] == manifest["call_id"] == "call-1"
    assert document["task_id"] == manifest["task_id"] == 7
    assert document["tool_description"] == "the page"


def test_a_resumed_pointer_equals_the_original(context_dir: Path) -> None:
    with session(context_dir, keep=True) as s, s.task("t"):
        small = s.save_context("note", {"n": 1}, "short", call_id="a")
        big = s.save_context("fetch", {"n": 2}, BIG, call_id="b")
        session_id = s.session_id
    with session.resume(session_id, context_dir, keep=False) as again:
        resumed = {p.id: p for p in again.get_all_pointers()}
    for before in (small, big):
        after = resumed[before.id]
        for name in META - {"timestamp"}:
            assert getattr(after, name) == getattr(before, name), name
        assert abs((after.timestamp - before.timestamp).total_seconds()) < 1e-5
        assert (after.size, after.tokens, after.preview, after.is_error) == (
            before.size,
            before.tokens,
            before.preview,
            before.is_error,
        )


def test_pointers_and_contexts_handed_out_are_what_validation_would_build(context_dir: Path) -> None:
    # They are built without pydantic's validation (their values are toolctx's own): every field is
    # there, in the model's order, and validating their dump gives an equal object.
    with session(context_dir) as s, s.task(3), s.query("q"):
        small = s.save_context("grep", {"pattern": "x", "path": "."}, "a\nb", call_id="c1")
        big = s.save_context("cat", {"file": "f"}, BIG, error=ValueError("boom"), call_id="c2")
        contexts = s.load_contexts([small, big])
        found = s.find_call("c1")
        assert found is not None
        found.args["pattern"] = "changed"  # changing what one pointer holds leaves the next ones alone
        again = s.find_call("c1")
        assert again is not None
        assert again.args["pattern"] == "x"
        assert again is not found
    for made in [small, big, found, *contexts]:
        assert made is not None
        validated = type(made).model_validate(made.model_dump())
        assert made == validated
        assert list(dict(made)) == list(type(made).model_fields)
        assert made.model_fields_set == set(type(made).model_fields)
    assert small.args == {"pattern": "x", "path": "."}
    assert small.task_id == 3
    assert small.call_id == "c1"
    assert contexts[0].result == "a\nb"
    assert contexts[1].error is not None
    assert small == again

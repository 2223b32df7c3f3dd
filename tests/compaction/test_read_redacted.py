"""A read-back of a copy whose secrets were redacted says so in its first line, so the mark is never copied as text.

The stand-in and the read-back are cut from the same stored copy: what the model is shown
and what it reads back agree character for character, marks included.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import toolctx
from toolctx.compaction import (
    CompactionSettings,
    answer_read_context,
    persist_call,
    read_context,
    shown_output,
    stored_text,
)
from toolctx.redaction import REDACTED, Redactor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _replay_measure import read_back_text

SETTINGS = (
    "DEBUG = True\n"
    "SECRET_KEY = 'q8&Xk9vQ2rLWm3nB8tYPq7sD4fG'\n"
    "DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', 'PASSWORD': 'Wm3nB8tY-Pq7s'}}\n"
    "TEST_SECRET_KEY = 'test-secret-key'\n"
)
STORED = SETTINGS.replace("q8&Xk9vQ2rLWm3nB8tYPq7sD4fG", REDACTED).replace("Wm3nB8tY-Pq7s", REDACTED)
NOTE = f"2 secrets here were replaced by {REDACTED} when stored: do not copy {REDACTED} into a file"


def header_and_body(answer: str) -> tuple[str, str]:
    header, _, body = answer.partition("\n")
    return header, body


def test_a_read_back_of_a_redacted_copy_says_so_in_its_first_line(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        ref = s.save_context("cat", {"path": "settings.py"}, SETTINGS).handle
        answer = read_context(s, ref, 0, 10**9)
        header, body = header_and_body(answer)
        assert body == STORED  # the placeholder test value is kept, the two real secrets are not
        assert header.startswith(f"[{ref} characters 0-{len(STORED):,} of {len(STORED):,}. {NOTE}")
        assert header.endswith("ask the user for the real values.]")
        assert read_back_text(answer) == STORED  # the benchmark still reads the answer's body


def test_the_note_counts_the_marks_in_what_is_shown(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        ref = s.save_context("cat", {"path": "settings.py"}, SETTINGS).handle
        one = read_context(s, ref, lines="1-2")
        assert header_and_body(one)[0] == (
            f"[{ref} lines 1-2 of 4. 1 secret here was replaced by {REDACTED} when stored: "
            f"do not copy {REDACTED} into a file; ask the user for the real value.]"
        )
        assert header_and_body(read_context(s, ref, lines="4"))[0] == f"[{ref} lines 4-4 of 4.]"
        assert NOTE in header_and_body(read_context(s, ref, search="DEBUG", context=3))[0]
        alone = read_context(s, ref, search="TEST_SECRET", context=0)
        assert header_and_body(alone)[0].endswith("1 matching lines of 4.]")
        page = read_context(s, ref, 0, 20)
        assert page == f"[{ref} characters 0-20 of {len(STORED):,}. {len(STORED) - 20:,} more characters follow; " + (
            f"continue with offset=20.]\n{STORED[:20]}"
        )


def test_arguments_and_json_paths_are_noted_too(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        ref = s.save_context("write", {"content": SETTINGS}, {"db": {"password": "Wm3nB8tY-Pq7s", "port": 5432}}).handle
        header, body = header_and_body(read_context(s, ref, part="args.content"))
        assert body == STORED
        assert NOTE in header
        header, body = header_and_body(read_context(s, ref, path="$.db"))
        assert REDACTED in body
        assert f"1 secret here was replaced by {REDACTED}" in header
        model = answer_read_context(s, {"id": ref, "path": "$.db.port"})
        assert model.partition("\n")[2] == "5432"
        assert "secret" not in model.partition("\n")[0]


def test_a_clean_copy_has_the_plain_header(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        text = "SECRET_KEY = 'test'\npassword = getpass()\n"
        ref = s.save_context("cat", {"path": "conftest.py"}, text).handle
        assert read_context(s, ref) == f"[{ref} characters 0-{len(text)} of {len(text)}.]\n{text}"


def test_the_mark_is_the_sessions_own(tmp_path: Path) -> None:
    with toolctx.session(tmp_path, redact=Redactor(replacement="<hidden>")) as s:
        ref = s.save_context("cat", {"path": ".env"}, "API_KEY=Wm3nB8tY-Pq7s\n").handle
        header, body = header_and_body(read_context(s, ref))
        assert body == "API_KEY=<hidden>\n"
        assert "1 secret here was replaced by <hidden> when stored: do not copy <hidden> into a file" in header
    with toolctx.session(tmp_path, redact=False) as s:  # nothing was replaced: a mark in the output is the tool's
        text = f"log line: token {REDACTED}\n"
        ref = s.save_context("cat", {"path": "app.log"}, text).handle
        assert read_context(s, ref) == f"[{ref} characters 0-{len(text)} of {len(text)}.]\n{text}"


def test_the_stand_in_and_the_read_back_are_cut_from_the_same_stored_copy(tmp_path: Path) -> None:
    output = SETTINGS * 400  # big enough to be stood in
    with toolctx.session(tmp_path) as s:
        saved = persist_call(s, "cat", {"path": "settings.py"}, output, call_id="c1", task_id="t")
        assert saved is not None
        shown = shown_output(CompactionSettings(max_output_tokens=500), s, saved, output)
        assert shown is not None
        stored = stored_text(s.load_contexts([saved.id])[0])
        assert stored == STORED * 400
        head = shown.partition("\n")[2][:1500]  # the preview the model is shown
        assert head == stored[:1500]
        assert "q8&Xk9vQ2rL" not in shown
        header, body = header_and_body(read_context(s, saved.id, 0, 10**9, scope="t"))
        assert body == stored
        assert f"{800:,} secrets here were replaced by {REDACTED}" in header


def test_a_ranged_read_of_a_shared_store_is_noted(s3_server: Any, s3_env: dict[str, str], tmp_path: Path) -> None:
    output = SETTINGS * 400
    store = f"s3://{s3_server.bucket()}/read-redacted"
    with toolctx.session(tmp_path, store=store, keep=True, threshold=0) as first:
        saved = first.save_context("cat", {"path": "settings.py"}, output, call_id="c1", task_id="t")
        other = toolctx.ContextSession.resume(first.session_id, store=store)  # another worker: a ranged read
        try:
            header, body = header_and_body(read_context(other, saved.handle, 0, len(STORED), scope="t"))
            assert body == STORED
            assert NOTE in header
        finally:
            other.close()

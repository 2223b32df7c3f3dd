"""read_context by lines, by search and by JSON path: exact slices of the stored copy, bounded, bad queries told."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolctx
from toolctx.compaction import read_context

SOURCE = "".join(f"def function_{n}(x):\n    return x + {n}  # café\n" for n in range(1, 301))
REPORT = {"items": [{"name": f"item {n}", "price": n * 1.5, "tags": ["a", "b"]} for n in range(50)], "total": 50}


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[toolctx.ContextSession, str, str]]:
    with toolctx.session(tmp_path) as s:
        code = s.save_context("cat", {"path": "module.py"}, SOURCE).handle
        report = s.save_context("report", {"q": "all"}, json.dumps(REPORT)).handle
        yield s, code, report


def body(answer: str) -> str:
    return answer.partition("\n")[2]


def test_lines_come_back_exactly_as_stored(stored: tuple[toolctx.ContextSession, str, str]) -> None:
    s, code, _ = stored
    lines = SOURCE.splitlines(keepends=True)
    answer = read_context(s, code, lines="120-125")
    assert answer.startswith(f"[{code} lines 120-125 of 600.]")
    assert body(answer) == "".join(lines[119:125])
    assert body(read_context(s, code, lines="600")) == lines[599]
    assert body(read_context(s, code, lines="599-")) == "".join(lines[598:])
    assert body(read_context(s, code, lines="590-900")) == "".join(lines[589:])  # (a range past the end: to it)


def test_a_range_longer_than_the_limit_stops_at_a_line_and_says_where_to_go_on(
    stored: tuple[toolctx.ContextSession, str, str],
) -> None:
    s, code, _ = stored
    lines = SOURCE.splitlines(keepends=True)
    answer = read_context(s, code, lines="1-600", limit=100)
    shown = body(answer)
    assert len(shown) <= 100
    assert shown == "".join(lines[: shown.count("\n")])
    n = shown.count("\n")
    assert f'Continue with lines="{n + 1}-600"' in answer


def test_a_search_lists_the_matching_lines_with_their_numbers_and_the_lines_around(
    stored: tuple[toolctx.ContextSession, str, str],
) -> None:
    s, code, _ = stored
    answer = read_context(s, code, search="def function_150(", context=1)
    assert answer.startswith(f"[{code} search for the text 'def function_150(': 1 matching lines of 600.]")
    assert body(answer) == "298-    return x + 149  # café\n299:def function_150(x):\n300-    return x + 150  # café"
    by_regex = read_context(s, code, search=r"return x \+ 1\d\d\b", regex=True, context=0, limit=10**6)
    assert by_regex.split("]")[0].endswith("100 matching lines of 600.")
    assert body(by_regex).count("\n--\n") == 99  # (each line apart: its own group)


def test_a_search_is_bounded_and_says_how_many_it_left_out(stored: tuple[toolctx.ContextSession, str, str]) -> None:
    s, code, _ = stored
    answer = read_context(s, code, search="café", context=0, limit=500)
    assert len(body(answer)) <= 500
    assert "300 matching lines of 600. Showing the first" in answer


def test_a_json_path_reads_one_value(stored: tuple[toolctx.ContextSession, str, str]) -> None:
    s, _, report = stored
    assert body(read_context(s, report, path="$.items[7].name")) == "item 7"
    assert json.loads(body(read_context(s, report, path="items.7"))) == REPORT["items"][7]
    assert json.loads(body(read_context(s, report, path='$["items"][-1]["tags"]'))) == ["a", "b"]
    assert body(read_context(s, report, path="$.total")) == "50"
    paged = read_context(s, report, path="$.items", offset=10, limit=40)
    assert body(paged) == json.dumps(REPORT["items"], indent=2)[10:50]
    assert "continue with offset=50" in paged


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"lines": "ten"}, "lines must be a line number or a range"),
        ({"lines": "0-3"}, "is not a range of lines"),
        ({"lines": "900"}, "line 900 is past the end"),
        ({"search": "(", "regex": True}, "is not a valid regular expression"),
        ({"search": "x", "context": 99}, "context must be a number of lines from 0 to 20"),
        ({"search": "no such text"}, "No line of"),
        ({"path": "$.items"}, "is not JSON"),
        ({"lines": "1", "search": "x"}, "one at a time"),
    ],
)
def test_a_question_about_code_it_cannot_answer_is_told_in_words(
    stored: tuple[toolctx.ContextSession, str, str], query: dict[str, object], said: str
) -> None:
    s, code, _ = stored
    assert said in read_context(s, code, **query)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("$.nothing", "has no key 'nothing'; its keys: 'items', 'total'"),
        ("$.items[50]", "has 50 items: index 50 is past its end"),
        ("$.total.x", "is a number: it has no 'x'"),
        ("$.items[", "cannot be read at"),
    ],
)
def test_a_json_path_it_cannot_follow_is_told_in_words(
    stored: tuple[toolctx.ContextSession, str, str], path: str, said: str
) -> None:
    s, _, report = stored
    assert said in read_context(s, report, path=path)


def test_an_argument_is_navigable_too(tmp_path: Path) -> None:
    with toolctx.session(tmp_path) as s:
        handle = s.save_context("write_file", {"path": "m.py", "content": SOURCE}, "written").handle
        answer = read_context(s, handle, part="args.content", search="def function_3(", context=0)
        assert answer.startswith(f"[{handle} args.content search for the text")
        assert body(answer) == "5:def function_3(x):"


def test_a_handle_can_name_its_part_and_selection_as_argument_stand_ins_write_it(tmp_path: Path) -> None:
    lines = SOURCE.splitlines(keepends=True)
    with toolctx.session(tmp_path) as s:
        handle = s.save_context("write_file", {"path": "m.py", "content": SOURCE}, "written").handle
        assert read_context(s, f"{handle}#args.content") == read_context(s, handle, part="args.content")
        assert body(read_context(s, f"{handle}#args.content", lines="3-4")) == "".join(lines[2:4])
        assert body(read_context(s, f"{handle}#args.content&lines=3-4")) == "".join(lines[2:4])
        found = read_context(s, f"{handle}#args.content", search="def function_3(", context=0)
        assert body(found) == "5:def function_3(x):"  # (a search given beside a handle with a part)
        assert read_context(s, f"{handle}#args.path", part="args.path") == read_context(s, handle, part="args.path")
        # what cannot be read together is told in words, naming the value
        both = read_context(s, f"{handle}#args.content", part="args.path")
        assert "args.content, and part='args.path' another" in both
        assert "selects lines or a path already" in read_context(s, f"{handle}#lines=1-2", search="def")
        assert "is not a handle" in read_context(s, f"{handle}#")
        assert "cannot be read at 'nothing'" in read_context(s, f"{handle}#nothing")

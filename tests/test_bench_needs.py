"""The replay's measure of what the next step needs: extraction rules, and hidden values through both loops."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("agents")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import replay
from _replay_needs import extract_values, needed_values, shows
from _replay_trace import read_traces


def count(text: str) -> int:
    return len(text.encode()) // 4


def test_each_rule_takes_its_kind_once() -> None:
    line = (
        'grep -n "def deserialize_db_from_string" django/db/creation.py; sed -n 665,670p x.py; '
        "Mia Li paid $1,044.50 on 2024-05-15 for ZFA04Y as mia_li_3668 with QuerySet; it's done"
    )
    assert dict(extract_values(line)) == {
        "def deserialize_db_from_string": "quoted",
        "2024-05-15": "date",
        "1,044.50": "amount",
        "django/db/creation.py": "path",
        "x.py": "path",
        "ZFA04Y": "code",
        "mia_li_3668": "identifier",
        "QuerySet": "identifier",
        "Mia Li": "name",
        "665": "number",
        "670": "number",
    }
    assert list(extract_values("the file and the test ran, don't worry")) == []  # plain words are no values


def test_a_value_matches_whole() -> None:
    assert shows("line 665: x", "665")
    assert not shows("line 1665: x", "665")
    assert not shows("handler_3501", "handler_350")
    assert shows("(handler_350)", "handler_350")


def session(steps: list[tuple[str, str]], user: str = "Fix it.") -> dict[str, Any]:
    return {
        "id": "made/needs",
        "source": "made-coding",
        "system": "You are a coding agent; the repository is at /testbed.",
        "turns": [
            {
                "user": user,
                "steps": [
                    {"text": None, "calls": [{"id": f"c{i}", "name": "bash", "args": {"command": c}, "output": o}]}
                    for i, (c, o) in enumerate(steps)
                ],
                "final": "Done.",
            }
        ],
    }


def listing(lines: int) -> str:
    return "".join(f"src/app.py:{i}: def handler_{i}(request): return {i}\n" for i in range(lines))


def test_what_is_needed_comes_from_earlier_and_not_from_the_system_or_the_user() -> None:
    steps = [("grep -rn handler src", listing(40)), ("sed -n 17,20p src/app.py", "x"), ("cat /testbed/a.py", "y")]
    [trace] = read_traces([session(steps, user="Look at src/app.py.")])
    needs = needed_values(trace)
    assert len(needs) == 4  # one per model call: three steps and the final answer
    assert needs[0] == ()  # nothing was shown before the first call
    # (src/app.py is in the user's message: never hidden, so never counted)
    assert {(n.value, n.kind, n.source, n.item) for n in needs[1]} == {
        ("17", "number", "tool output", "c0"),
        ("20", "number", "tool output", "c0"),
    }
    assert needs[2] == ()  # /testbed/a.py was never shown before


def test_hidden_values_through_both_loops() -> None:
    """A late step greps for a name from the middle of a big output a batch has long stood in for."""
    steps = [("grep -rn handler src", listing(900))]
    steps += [(f"pytest tests/test_{i}.py", listing(300).replace("handler", f"case{i}")) for i in range(6)]
    steps += [("grep -n 'def handler_450' src/app.py", "src/app.py:450: def handler_450(request): return 450")]
    [trace] = read_traces([session(steps)])
    for framework in ("langchain", "agents"):
        plain, reduced = replay.replay_session(trace, framework, count)
        assert plain.needed == reduced.needed > 0
        assert plain.hidden == 0  # without toolctx the prompt shows everything earlier
        assert reduced.hidden >= 1  # the batch's stand-in for the first listing hides handler_450
        assert reduced.calls_hidden >= 1
        assert reduced.needed_by["source:tool output"][1] >= 1
        summary = replay.summarize([plain, reduced])
        row = next(iter(summary.values()))
        assert row["with"]["hidden"] == reduced.hidden
        assert "values the next step needs, hidden" in replay.render(summary)

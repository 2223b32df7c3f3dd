"""What the model still uses: old outputs it took names from lately stay whole, and markers keep the lines in use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx import ContextSession, session
from toolctx.compaction import CompactionSettings, is_stand_in
from toolctx.errors import ConfigError

from .test_policy import Loop, output, restored

BASE = {"max_output_tokens": 5000, "high_water": 1500, "low_water": 0, "keep": 1, "min_gain": 0, "cached_price": 1.0}


def source_file(lines: int = 120) -> str:
    """A file listing with one function the model will go on to use, in its middle."""
    body = [f"    value_{n} = compute(n)  # step {n}" for n in range(lines)]
    body[lines // 2] = "def deserialize_db_from_string(self, data):"
    return "\n".join(body)


def steps(s: ContextSession, settings: CompactionSettings, uses: int, idle: int = 0) -> Loop:
    """cat a file, then ``uses`` calls that use a name from its middle, then ``idle`` calls that use nothing
    from it, each with an output big enough to make batches."""
    loop = Loop(s, settings)
    loop.step(("cat", {"command": "cat django/db/backends/base/creation.py"}, source_file()))
    for n in range(uses):
        loop.step(("grep", {"command": f"grep -n deserialize_db_from_string tests/t{n}.py"}, output(n, 1200)))
    for n in range(idle):
        loop.step(("run", {"command": "pytest -x"}, output(100 + n, 1200)))
    return loop


def first_result(loop: Loop) -> str:
    shown = loop.views[-1]
    return next(m["text"] for m in shown if m["role"] == "tool" and m["call_id"] == "c1_0")


def test_an_old_output_the_model_used_lately_stays_whole_while_others_go(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_calls=4, in_use_tokens=10_000, in_use_lines=0)
    with session(context_dir) as s:
        loop = steps(s, settings, uses=6)
        assert sum(loop.edits) > 0  # batches were made...
        others = [m["text"] for m in loop.views[-1] if m["role"] == "tool" and m["call_id"] not in ("c1_0",)]
        assert any(is_stand_in(text) for text in others)  # ...and took other old outputs
        assert first_result(loop) == source_file()  # the file the model goes on using stays whole


def test_without_keeping_what_is_in_use_the_same_output_goes(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_calls=0, in_use_lines=0)
    with session(context_dir) as s:
        loop = steps(s, settings, uses=6)
        assert is_stand_in(first_result(loop))


def test_an_output_no_longer_used_goes_in_a_later_batch_and_reads_back(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_calls=2, in_use_tokens=10_000, in_use_lines=0)
    with session(context_dir) as s:
        loop = steps(s, settings, uses=4, idle=6)
        marker = first_result(loop)
        assert is_stand_in(marker)
        assert restored(s, marker) == source_file()


def test_what_is_kept_whole_stays_within_its_token_budget(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_calls=4, in_use_tokens=100, in_use_lines=0)
    with session(context_dir) as s:
        loop = steps(s, settings, uses=6)
        assert is_stand_in(first_result(loop))  # the file is over 100 tokens: not kept


def test_a_marker_keeps_the_lines_that_hold_names_used_since(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_tokens=0, in_use_lines=5)
    with session(context_dir) as s:
        loop = steps(s, settings, uses=6)
        marker = first_result(loop)
        assert is_stand_in(marker)
        kept = marker.split("Lines in use:\n", 1)[1].splitlines()
        assert kept == ["61: def deserialize_db_from_string(self, data):"]  # numbered from 1, only that one
        assert restored(s, marker) == source_file()  # cut from the stored copy, which reads back whole
        # once made, the marker is shown the same on every later call (the prompt prefix stays cached)
        loop.step(("grep", {"command": "grep -n value_3 x.py"}, output(99, 1200)))
        assert first_result(loop) == marker


def test_an_argument_stand_in_keeps_the_lines_in_use(context_dir: Path) -> None:
    settings = CompactionSettings(**BASE, in_use_tokens=0, in_use_lines=1, args_chars=200)
    script = "\n".join(
        ["import os", "temp_file = open_temp()", *(f"print({n})" for n in range(80)), "temp_file.close()"]
    )
    with session(context_dir) as s:
        loop = Loop(s, settings)
        loop.step(("write", {"command": f"cat > repro.py <<'EOF'\n{script}\nEOF"}, "written"))
        for n in range(6):
            loop.step(("run", {"command": f"python -c 'del temp_file' # {n}"}, output(n, 1200)))
        call = next(m for m in loop.views[-1] if m["role"] == "assistant" and m["id"] == "a1")
        shown = call["calls"][0]["args"]["command"]
        assert is_stand_in(shown)
        # (the first line of each word; a line in use before the lines naming most of what the script wrote)
        assert shown.endswith("Lines in use:\n3: temp_file = open_temp()")
        assert restored(s, shown, "args.command") == f"cat > repro.py <<'EOF'\n{script}\nEOF"


PAD = "print(2)" * 30
SETUP = "settings.configure(DATABASES={'default': {'ENGINE': 'django.db.backends.sqlite3'}}, INSTALLED_APPS=[])"


def test_a_script_stand_in_keeps_the_lines_naming_most_of_what_it_wrote(context_dir: Path) -> None:
    """An agent's next script copies the settings, imports and calls of the one it wrote before, though it
    wrote them only once yet: the lines naming the most of them stay in the stand-in, once across stand-ins."""
    settings = CompactionSettings(**BASE, in_use_tokens=0, in_use_lines=2, args_chars=200)
    script = "\n".join(["import os", "from django.conf import settings", SETUP, "django.setup()", "print(1)" * 60])
    with session(context_dir) as s:
        loop = Loop(s, settings)
        loop.step(("write", {"command": f"cat > repro.py <<'EOF'\n{script}\nEOF"}, "written"))
        loop.step(("write", {"command": f"cat > repro_2.py <<'EOF'\n{SETUP}\nrun_checks()\n{PAD}\nEOF"}, "written"))
        for n in range(6):
            loop.step(("run", {"command": f"pytest -x # {n}"}, output(n, 1200)))
        first, second = (
            m["calls"][0]["args"]["command"] for m in loop.views[-1] if m["role"] == "assistant" and m["id"] in "a1a2"
        )
        # the settings line (in use: the second script copies it); then, of the lines naming one name each
        # (repro.py, django.conf, django.setup), the earliest
        assert first.endswith(f"Lines in use:\n1: cat > repro.py <<'EOF'\n4: {SETUP}")
        # the second keeps no second copy of the settings line: the first stand-in keeps it
        assert second.endswith("Lines in use:\n1: cat > repro_2.py <<'EOF'\n3: run_checks()")
        assert restored(s, first, "args.command") == f"cat > repro.py <<'EOF'\n{script}\nEOF"


@pytest.mark.parametrize("name", ["in_use_calls", "in_use_tokens", "in_use_lines"])
def test_bad_in_use_settings_are_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        CompactionSettings(**{name: -1})


@settings(max_examples=25, deadline=None)
@given(uses=st.lists(st.booleans(), min_size=4, max_size=14))
def test_stand_ins_once_shown_never_change(tmp_path_factory: pytest.TempPathFactory, uses: list[bool]) -> None:
    """Whatever the model uses when, a stand-in is shown the same on every later call, and every result
    shown whole is the recorded output."""
    settings = CompactionSettings(**BASE, in_use_calls=3, in_use_tokens=800, in_use_lines=4)
    with session(tmp_path_factory.mktemp("ctx")) as s:
        loop = Loop(s, settings)
        loop.step(("cat", {"command": "cat creation.py"}, source_file()))
        for n, used in enumerate(uses):
            command = "grep deserialize_db_from_string x.py" if used else "pytest -x"
            loop.step(("run", {"command": f"{command} # {n}"}, output(n, 1000)))
        outputs = {m["call_id"]: m["text"] for m in loop.messages if m["role"] == "tool"}
        for before, now in zip(loop.views, loop.views[1:], strict=False):
            for old, new in zip(before, now, strict=False):
                if old["role"] == "tool" and is_stand_in(old["text"]):
                    assert new["text"] == old["text"]
        for m in loop.views[-1]:
            if m["role"] == "tool" and not is_stand_in(m["text"]):
                assert m["text"] == outputs[m["call_id"]]


def test_small_json_records_stay_whole_in_batches(context_dir: Path) -> None:
    """A customer-service agent quotes ids, dates and amounts from small JSON records long after it read them."""
    record = '{"reservation_id": "ZFA04Y", "flights": [{"flight_number": "HAT170", "price": 1044}], "pad": "%s"}'
    small, big = record % ("x" * 300), record % ("x" * 1200)
    settings = CompactionSettings(**BASE, record_chars=1000, in_use_lines=0)
    with session(context_dir) as s:
        loop = Loop(s, settings)
        loop.step(("get_reservation", {"reservation_id": "ZFA04Y"}, small))
        loop.step(("get_reservation", {"reservation_id": "XQ9ABC"}, big))
        for n in range(8):
            loop.step(("run", {"command": f"pytest -x # {n}"}, output(n, 1200)))
        shown = {m["call_id"]: m["text"] for m in loop.views[-1] if m["role"] == "tool"}
        assert shown["c1_0"] == small  # a record of at most record_chars: whole
        assert is_stand_in(shown["c2_0"])  # a bigger one is compacted like any output
        assert is_stand_in(shown["c3_0"])  # (and the plain outputs after them)
        loop = Loop(s, dataclasses.replace(settings, record_chars=0))
        loop.task = "other"
        loop.step(("get_reservation", {"reservation_id": "ZFA04Y"}, small))
        for n in range(8):
            loop.step(("run", {"command": f"pytest -x # {n}"}, output(n, 1200)))
        assert is_stand_in(next(m["text"] for m in loop.views[-1] if m.get("call_id") == "c1_0"))


def test_a_worker_reading_a_stand_in_keeps_no_line_it_already_keeps() -> None:
    """Which lines a stand-in keeps depends only on the history shown: a conversation read anew (another
    worker, a restart) takes the lines its stand-ins keep as kept, as the one that made them did."""
    from toolctx.compaction import Item, ToolCall
    from toolctx.compaction._conversation import Conversation
    from toolctx.compaction._inuse import lines_in_use

    def conversation(history: list[Item]) -> Conversation:
        made = Conversation()
        for item in history:
            made.take_in(item, usage=True)
        return made

    cat = Item(10, result_of="c1", text="a = 1\ndef deserialize_db_from_string(data):\nb = 2")
    history = [
        Item(5, calls=(ToolCall("c1", "bash", {"command": "cat creation.py"}),)),
        cat,
        Item(5, calls=(ToolCall("c2", "bash", {"command": "grep -n deserialize_db_from_string x.py"}),)),
        Item(5, result_of="c2", text="x.py:9: deserialize_db_from_string(data)"),
        Item(5, calls=(ToolCall("c3", "bash", {"command": "grep -rn deserialize_db_from_string ."}),)),
    ]
    first = conversation(history)
    lines = lines_in_use(first, 1, 16, cat.text)
    assert lines == "\nLines in use:\n2: def deserialize_db_from_string(data):"
    marker = "[toolctx stand-in] ctx:abc (40 chars)" + lines
    assert lines_in_use(first, 3, 16, history[3].text) != ""  # (until a stand-in keeping them is shown)
    first.usage.saw(marker)  # the policy shows it
    assert lines_in_use(first, 3, 16, history[3].text) == ""  # one line for each word, across stand-ins
    again = conversation([*history[:1], cat._replace(text=marker), *history[2:]])
    assert lines_in_use(again, 3, 16, history[3].text) == ""  # the same, read from the stand-in shown
    fresh = conversation(history)
    assert lines_in_use(fresh, 3, 16, history[3].text) == "\nLines in use:\n1: x.py:9: deserialize_db_from_string(data)"


def _script_lines(scripts: list[str], position: int, written: bool = False) -> str:
    """The lines the stand-in for the ``position``-th script of a conversation writing ``scripts`` keeps."""
    from toolctx.compaction import Item, ToolCall
    from toolctx.compaction._conversation import Conversation
    from toolctx.compaction._inuse import lines_in_use

    made = Conversation()
    for n, script in enumerate(scripts):
        made.take_in(Item(5, calls=(ToolCall(f"c{n}", "bash", {"command": script}),)), usage=True)
        made.take_in(Item(5, result_of=f"c{n}", text="done"), usage=True)
    return lines_in_use(made, 2 * position, 16, scripts[position], written)


@pytest.mark.parametrize(
    ("scripts", "position", "kept"),
    [
        # a dotted name is one word: the agent copies settings.configure, not "settings" and "configure"
        (
            ["import os\nsettings.configure(DEBUG=True)\nrun()", "settings.configure(DEBUG=False)"],
            0,
            "2: settings.configure(DEBUG=True)",
        ),
        # ...read as a whole name: not the tail of a longer one
        (
            ["obj.settings.configure()\nsettings.configure(DEBUG=True)", "settings.configure(DEBUG=False)"],
            0,
            "2: settings.configure(DEBUG=True)",
        ),
        # what a pair of quotes holds: a message the next script prints again
        (
            ["x = 1\nprint('=== Original query ===')", "print('=== Original query ===', y)"],
            0,
            "2: print('=== Original query ===')",
        ),
        # a name first written before this script and again in it: this is the copy the model saw last, and
        # no stand-in before keeps it (it had not been written twice when the first script went)
        (["setup_db_fixture()", "a = 2\nsetup_db_fixture()\nb = 3", "echo done"], 1, "2: setup_db_fixture()"),
        # a name between characters outside ASCII (typographic quotes, an arrow) is read as on its own
        (
            ["x = 1\nlog(\u201cload_config\u201d) \u2192 done", "load_config()"],
            0,
            "2: log(\u201cload_config\u201d) \u2192 done",
        ),
        # a dotted name at the end of a sentence: the last dot is not part of it
        (["echo 1\nvim models.py.", "cat models.py"], 0, "2: vim models.py."),
        # a name after digits is read from its first letter or underscore, as everywhere else
        (
            ["x = 1\ncat app/migrations/0001_initial.py", "python -m py_compile app/migrations/0001_initial.py"],
            0,
            "2: cat app/migrations/0001_initial.py",
        ),
        # ...and after a letter outside ASCII
        (["x = 1\nfit(na\u00efve_bayes)", "score(na\u00efve_bayes)"], 0, "2: fit(na\u00efve_bayes)"),
    ],
    ids=[
        "dotted name",
        "whole name",
        "quoted message",
        "first written earlier",
        "beside non-ASCII",
        "before a dot",
        "after digits",
        "after a letter outside ASCII",
    ],
)
def test_a_stand_in_keeps_the_line_of_each_value_the_model_writes_again(
    scripts: list[str], position: int, kept: str
) -> None:
    assert _script_lines(scripts, position) == "\nLines in use:\n" + kept


def test_a_value_written_once_keeps_no_line_in_what_the_model_was_shown() -> None:
    """Only in what the model wrote itself does a name written once keep a line (a quoted string never)."""
    script = "x = 1\nsettings.configure(DEBUG=True)\nprint('=== Original query ===')"
    assert _script_lines([script, "echo done"], 0) == ""
    assert _script_lines([script, "echo done"], 0, written=True) == "\nLines in use:\n2: settings.configure(DEBUG=True)"

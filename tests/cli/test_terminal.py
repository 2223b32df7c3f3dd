"""What reaches a real terminal: stored text escaped, never markup; large contexts shown in bounded parts.

The command runs in a subprocess on a pseudo-terminal (as a person runs it), so Rich
sees a terminal and styles its own output; the bytes the terminal receives are checked.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path

import orjson
import pytest

from toolctx import session
from toolctx.memory import MemoryStore

TITLE = "\x1b]0;pwned\x07"  # retitles the terminal
CLEAR = "\x1b[2J"  # clears it
RIGHT_TO_LEFT = "\u202e"  # prints what follows backwards
CSI = "\x9b"  # the one-character C1 form of ESC [
HOSTILE = f"{TITLE}{CLEAR}{RIGHT_TO_LEFT}gnp.exe{CSI}31m [bold red]markup[/] :smile:"
STYLING = re.compile(rb"\x1b\[[0-9;]*m")  # (Rich's own colours on a terminal)


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    return {**env, "PYTHONPATH": os.pathsep.join(sys.path), "TERM": "xterm-256color", "PAGER": "cat"}


def on_a_terminal(*args: str) -> tuple[int, bytes]:
    """Run ``toolctx ARGS`` with a pseudo-terminal as its stdin, stdout and stderr; its exit code and every byte."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 220, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "toolctx.cli", *args], stdin=slave, stdout=slave, stderr=slave, env=environment()
    )
    os.close(slave)
    received = b""
    try:
        while select.select([master], [], [], 60)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # (EIO: the command ended and closed the terminal)
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(master)
    return process.wait(timeout=60), received


def assert_nothing_acts_on_the_terminal(received: bytes) -> None:
    for raw in (TITLE, CLEAR, RIGHT_TO_LEFT, CSI, "\x07"):
        assert raw.encode() not in received, raw.encode()
    assert b"\x1b" not in STYLING.sub(b"", received)  # the only escape sequences are Rich's own colours


@pytest.fixture
def hostile(context_dir: Path, tmp_path: Path) -> tuple[Path, str, str]:
    """A kept session and a memory whose stored text is out to take over the terminal; (context dir, id, db)."""
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context(f"search{CLEAR}", {"query": HOSTILE}, [HOSTILE])
        s.save_context("fetch", {"url": HOSTILE}, None, error=ValueError(HOSTILE))
    db = tmp_path / "memory.db"
    with MemoryStore(db) as store:
        store.agent("worker").save("TASK", HOSTILE)
    return context_dir, ids_of(context_dir / "kept-1")[0], str(db)


def ids_of(folder: Path) -> list[str]:
    """The ids of the contexts a session folder's manifest lists, oldest first."""
    lines = (folder / "manifest.jsonl").read_bytes().splitlines()
    return [orjson.loads(line)["id"] for line in lines if line.strip()]


def test_stored_escape_sequences_reach_the_terminal_as_text(hostile: tuple[Path, str, str]) -> None:
    context_dir, context_id, db = hostile
    where = ("--context-dir", str(context_dir))
    commands = [
        ("ls", *where),
        ("ls", "kept-1", *where),
        ("show", "kept-1", context_id, *where),  # through the pager
        ("show", "kept-1", context_id, "--no-pager", *where),
        ("show", "kept-1", context_id, "--length", "40", *where),  # a part
        ("memory", "items", "worker", "--db", db),
        ("memory", "agents", "--db", db),
    ]
    for command in commands:
        code, received = on_a_terminal(*command)
        assert code == 0, received
        assert_nothing_acts_on_the_terminal(received)
    code, received = on_a_terminal("show", "kept-1", context_id, "--no-pager", *where)
    text = received.decode()
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\u202egnp.exe\\x9b31m" in text  # shown, escaped
    assert "[bold red]markup[/] :smile:" in text  # neither markup nor an emoji code
    code, received = on_a_terminal("memory", "items", "worker", "--db", db)
    assert "\\x1b]0;pwned" in received.decode()


def test_errors_naming_stored_or_given_text_reach_the_terminal_as_text(hostile: tuple[Path, str, str]) -> None:
    context_dir, _, db = hostile
    for command in (
        ("ls", f"kept-1{TITLE}", "--context-dir", str(context_dir)),
        ("show", "kept-1", f"{CLEAR}abc", "--context-dir", str(context_dir)),
        ("memory", "items", f"worker{TITLE}{RIGHT_TO_LEFT}", "--db", db),
        ("ls", "--context-dir", str(context_dir / f"gone{CLEAR}")),
    ):
        code, received = on_a_terminal(*command)
        assert code in (2, 3), received
        assert_nothing_acts_on_the_terminal(received)
        assert b"Traceback" not in received


def test_json_for_scripts_carries_the_stored_text_exactly_with_nothing_raw(hostile: tuple[Path, str, str]) -> None:
    context_dir, _, _ = hostile
    result = subprocess.run(
        [sys.executable, "-m", "toolctx.cli", "ls", "kept-1", "--context-dir", str(context_dir), "--json"],
        capture_output=True,
        env=environment(),
        check=True,
    )
    assert_nothing_acts_on_the_terminal(result.stdout)
    pointers = orjson.loads(result.stdout)
    assert pointers[0]["args"] == {"query": HOSTILE}  # the same value, escaped only in its JSON spelling
    assert pointers[0]["tool_name"] == f"search{CLEAR}"


MEASURED = """
import sys
from toolctx.cli import main

peak, sys.argv = sys.argv[1], ["toolctx", *sys.argv[2:]]
try:
    main()
finally:  # VmHWM: the most memory this process held since it started (not what its parent held)
    with open("/proc/self/status") as status, open(peak, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM")).split()[1])
"""


def run_measured(*args: str) -> tuple[int, bytes, int]:
    """Run ``toolctx ARGS``; its exit code, output, and the most memory it held (bytes)."""
    with tempfile.NamedTemporaryFile() as peak:
        result = subprocess.run(
            [sys.executable, "-c", MEASURED, peak.name, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environment(),
            check=False,
        )
        return result.returncode, result.stdout, int(Path(peak.name).read_text()) * 1024


def test_a_two_gigabyte_context_is_shown_in_parts_without_reading_it(context_dir: Path) -> None:
    with session(context_dir, session_id="big", keep=True, threshold=0) as s:
        s.save_context("dump", {"table": "events"}, "row " * 500_000)
    [stored] = [p for p in (context_dir / "big").iterdir() if p.name.startswith("dump_")]
    context_id = stored.stem.rpartition("_")[2]
    with stored.open("r+b") as handle:
        handle.truncate(2 << 30)  # 2 GiB, sparse: made at once, read only if something reads it whole
    where = ("--context-dir", str(context_dir), "--no-pager")

    code, output, peak = run_measured("show", "big", context_id, *where)
    text = output.decode()
    assert code == 0, text[-2000:]
    assert "dump: " in text
    assert "bytes 0 to 1,048,576 of 2,147,483,648" in text
    assert f"toolctx show big {context_id} --offset 1048576" in text
    assert f"toolctx show big {context_id} --full" in text
    assert "2,146,435,072 of 2,147,483,648 bytes left out" in text
    assert len(output) < 2 << 20
    assert peak < 400 << 20  # a fifth of the file: it was not read whole

    code, output, peak = run_measured("show", "big", context_id, "--offset", str((2 << 30) - 100), *where)
    assert code == 0
    assert "bytes 2,147,483,548 to 2,147,483,648 of 2,147,483,648" in output.decode()
    assert "--offset" not in output.decode().splitlines()[-1]  # the last part: nothing further to read
    assert peak < 400 << 20

    code, output, peak = run_measured("show", "big", context_id, "--length", "100", "--json", *where)
    part = orjson.loads(output)
    assert (part["offset"], part["end"], part["size"], part["next_offset"]) == (0, 100, 2 << 30, 100)
    assert part["text"].startswith("{")


def test_a_context_within_the_bound_is_shown_whole(context_dir: Path) -> None:
    with session(context_dir, session_id="small", keep=True, threshold=0) as s:
        s.save_context("search", {"q": "x"}, ["a.py", "b.py"])
    [context_id] = ids_of(context_dir / "small")
    code, output, _ = run_measured("show", "small", context_id, "--context-dir", str(context_dir), "--no-pager")
    assert code == 0
    assert '"a.py"' in output.decode()
    assert "left out" not in output.decode()

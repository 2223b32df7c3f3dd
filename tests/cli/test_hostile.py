"""The toolctx command pointed at what is not toolctx's: one clear line, a non-zero exit, nothing changed.

Every file of ``hostile.MEMORY_FILES`` given as ``--db``, every bad folder given as
``--context-dir``, bad ids and damaged session folders: each ends with one line on
stderr naming what was given, an exit code that is not 0, no traceback, and the file
exactly as it was (no toolctx tables in another application's database).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from click.testing import Result
from typer.testing import CliRunner

import toolctx.server
from tests.cli.hostile import MEMORY_FILES, Builder, digest, toolctx_memory
from tests.conftest import files_under, new_postgres_database
from tests.memory.layouts import LAYOUTS, layout_sql
from tests.memory.test_migrations import run_sql
from toolctx import session
from toolctx.cli._app import app
from toolctx.cli._text import visible
from toolctx.memory import MemoryStore

SCHEMA_LAYOUT = 5  # (the layout this release writes)

runner = CliRunner()


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def assert_refused(result: Result, naming: str, codes: tuple[int, ...] = (1, 2, 3, 4)) -> str:
    """One line on stderr, starting ``error:`` and naming ``naming``; an exit code of ``codes``; no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in codes, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert naming in lines[0], lines[0]
    assert "\x1b" not in lines[0]
    assert "\u202e" not in lines[0]
    return lines[0]


MEMORY_COMMANDS = [
    ("memory", "agents"),
    ("memory", "items", "worker"),
    ("memory", "checkpoints", "worker"),
    ("memory", "diff", "worker", "1"),
    ("memory", "flash-save", "worker"),
    ("memory", "restore", "worker", "1"),
]


def test_the_corpus_has_forty_kinds_of_bad_input() -> None:
    assert len(MEMORY_FILES) + len(URLS) + len(FOLDERS) + len(SESSION_IDS) + len(CONTEXT_IDS) + len(DAMAGE) >= 40


@pytest.mark.parametrize("build", MEMORY_FILES, ids=lambda build: build.__name__)
def test_a_file_that_is_not_a_toolctx_memory_is_refused_and_left_as_it_was(
    tmp_path: Path, build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def serving(*args: object, **kwargs: object) -> int:  # (a file let through would serve until stopped)
        raise AssertionError("serve began serving a file it should have refused")

    monkeypatch.setattr(toolctx.server, "serve", serving)
    folder = tmp_path / "files"
    folder.mkdir()
    path = build(folder)
    before, listed = digest(path), set(os.listdir(folder))
    mtime = path.stat().st_mtime_ns if path.is_file() else None
    for command in [*MEMORY_COMMANDS, ("stats", "--context-dir", str(tmp_path))]:
        assert_refused(run(*command, "--db", f"sqlite:///{path}"), visible(str(path)))
    assert_refused(run("serve", "--db", str(path), "--port", "1"), visible(str(path)))  # refused before serving
    assert digest(path) == before
    if mtime is not None:
        assert path.stat().st_mtime_ns == mtime
    # SQLite keeps a WAL-mode database's shared index beside it even when only reading; nothing else appears.
    assert set(os.listdir(folder)) - listed <= {f"{path.name}-wal", f"{path.name}-shm"}
    if path.is_file() and not path.is_symlink() and path.read_bytes()[18:19] != b"\x02":
        assert set(os.listdir(folder)) == listed


URLS = {
    "mysql://user@host/db": "mysql",
    "sqlite://": "sqlite://",
    "sqlite:///:memory:": ":memory:",
    "sqlite:///file:memory.db?mode=ro&uri=true": "file:memory.db",
    "://": "://",
    " ": "--db is empty",
}


@pytest.mark.parametrize("url", URLS)
def test_a_url_that_names_no_memory_file_is_refused_by_name(url: str) -> None:
    for command in MEMORY_COMMANDS[:2]:
        assert_refused(run(*command, "--db", url), URLS[url], codes=(2, 3))


def test_a_locked_database_is_busy_not_a_traceback(tmp_path: Path) -> None:
    path = toolctx_memory(tmp_path)  # (rollback-journal mode: a writer's exclusive lock keeps readers out)
    holder = sqlite3.connect(path, check_same_thread=False)
    holder.isolation_level = None
    holder.execute("BEGIN EXCLUSIVE")
    try:
        line = assert_refused(run("memory", "agents", "--db", str(path)), str(path), codes=(4,))
        assert "busy" in line
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run("memory", "agents", "--db", str(path)).exit_code == 0


def test_reading_a_toolctx_memory_changes_no_byte_of_it(tmp_path: Path) -> None:
    path = toolctx_memory(tmp_path, journal="WAL")
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    for command in MEMORY_COMMANDS[:4]:
        result = run(*command, "--db", str(path))
        assert result.exit_code in (0, 3), result.output  # (no checkpoint 1 yet: diff says so)
    assert run("stats", "--context-dir", str(tmp_path), "--db", str(path)).exit_code == 0
    assert (path.read_bytes(), path.stat().st_mtime_ns) == (before, mtime)


def test_a_read_only_memory_file_can_be_looked_at(tmp_path: Path) -> None:
    path = toolctx_memory(tmp_path)
    path.chmod(0o444)
    result = run("memory", "items", "worker", "--db", str(path))
    assert result.exit_code == 0, result.output
    assert "Add retries to the uploader" in result.stdout


def test_another_application_s_postgresql_database_gets_no_tables(postgres_url: str) -> None:
    url = new_postgres_database(postgres_url)
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as connection:
        connection.execute("CREATE TABLE invoices (id integer)")
        for command in MEMORY_COMMANDS:
            assert_refused(run(*command, "--db", url), "not a toolctx memory", codes=(2,))
        tables = connection.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        assert [row[0] for row in tables] == ["invoices"]


def _fifo(path: Path) -> None:
    os.mkfifo(path)


FOLDERS: dict[str, tuple[Callable[[Path], None] | None, int]] = {
    "absent": (None, 3),
    "a-file": (lambda path: path.write_text("not a folder"), 2),
    "a-fifo": (_fifo, 2),
    "a-dangling-link": (lambda path: path.symlink_to(path.parent / "gone"), 3),
    "evil\x1b[2J\u202e": (None, 3),
}


@pytest.mark.parametrize("name", FOLDERS, ids=visible)
def test_a_context_dir_that_is_not_a_folder_is_refused_by_name(tmp_path: Path, name: str) -> None:
    make, code = FOLDERS[name]
    path = tmp_path / name
    if make is not None:
        make(path)
    for command in (["ls"], ["ls", "kept-1"], ["show", "kept-1", "abcdef0"], ["stats"], ["gc", "--dry-run"]):
        assert_refused(run(*command, "--context-dir", str(path)), visible(str(path)), codes=(code,))


@pytest.fixture
def kept(context_dir: Path) -> Path:
    """A kept session "kept-1" with one stored call; its folder."""
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context("search", {"query": "retry"}, ["uploader.py"])
    return context_dir / "kept-1"


SESSION_IDS = ["../etc", "a/b", "", "x" * 300, "kept-1\x1b]0;pwned\x07", "\u202ekept-1", ".", "-"]


@pytest.mark.parametrize("session_id", SESSION_IDS, ids=visible)
def test_a_bad_session_id_is_refused_by_name(context_dir: Path, kept: Path, session_id: str) -> None:
    before = files_under(context_dir)
    for command in (["ls", session_id], ["show", session_id, "abcdef0"]):
        assert_refused(run(*command, "--context-dir", str(context_dir)), visible(session_id)[:40], codes=(2, 3))
    assert files_under(context_dir) == before


CONTEXT_IDS = ["zz", "ctx:", "ctx:zz", "\x1b[2J", "0" * 1000, "abcdef0", "../manifest"]


@pytest.mark.parametrize("context_id", CONTEXT_IDS, ids=visible)
def test_a_bad_context_id_is_refused_by_name(context_dir: Path, kept: Path, context_id: str) -> None:
    result = run("show", "kept-1", context_id, "--context-dir", str(context_dir))
    assert_refused(result, visible(context_id.removeprefix("ctx:"))[:40], codes=(2, 3))


def _stored(folder: Path) -> Path:
    return next(p for p in folder.iterdir() if p.name.startswith("search_"))


def _replace(path: Path, make: Callable[[Path], None]) -> None:
    path.unlink()
    make(path)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "file-is-a-folder": lambda folder: _replace(_stored(folder), Path.mkdir),
    "file-is-a-fifo": lambda folder: _replace(_stored(folder), _fifo),
    "file-links-elsewhere": lambda folder: _replace(_stored(folder), lambda p: p.symlink_to("/etc/hostname")),
    "file-is-garbage": lambda folder: _stored(folder).write_bytes(bytes(range(256))),
    "file-truncated": lambda folder: _stored(folder).write_bytes(_stored(folder).read_bytes()[:40]),
    "file-of-another-format": lambda folder: _stored(folder).write_text('{"format": "other/9"}'),
    "file-gone": lambda folder: _stored(folder).unlink(),
    "manifest-garbage": lambda folder: (folder / "manifest.jsonl").write_bytes(bytes(range(256)) * 4),
    "manifest-is-a-fifo": lambda folder: _replace(folder / "manifest.jsonl", _fifo),
    "marker-garbage": lambda folder: (folder / ".toolctx-session").write_bytes(b"\xff\x00"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_session_folder_is_listed_or_refused_never_a_traceback(
    context_dir: Path, kept: Path, damage: str
) -> None:
    context_id = _stored(kept).stem.rpartition("_")[2]
    DAMAGE[damage](kept)
    listing = run("ls", "--context-dir", str(context_dir))
    assert listing.exit_code == 0, listing.output
    for command in (["ls", "kept-1"], ["stats"], ["gc", "--dry-run"]):
        result = run(*command, "--context-dir", str(context_dir))
        assert result.exit_code in (0, 3), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert_refused(run("show", "kept-1", context_id, "--context-dir", str(context_dir)), "kept-1", codes=(3,))


def test_a_huge_checkpoint_id_or_limit_is_a_message(tmp_path: Path) -> None:
    path = toolctx_memory(tmp_path)
    for command in (
        ("memory", "diff", "worker", str(2**70)),
        ("memory", "restore", "worker", str(2**70)),
        ("memory", "items", "worker", "--limit", str(2**70)),
        ("memory", "items", "worker", "--limit", "-1"),
    ):
        result = run(*command, "--db", str(path))
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, repr(result.exception))
        assert result.exit_code in (0, 2, 3), (command, result.output)
        assert "Traceback" not in result.output


UNPRIVILEGED = """
import os, sys
from toolctx.cli._app import app
import sqlite3, sqlalchemy.dialects.sqlite, toolctx.memory  # (loaded before the user who may not read them)
if os.geteuid() == 0:
    os.setgid(65534)
    os.setuid(65534)  # nobody: root would read the file whatever its mode
sys.argv = ["toolctx", *sys.argv[1:]]
app()
"""


def test_a_file_or_folder_this_user_may_not_read_is_refused_by_name(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    path = toolctx_memory(tmp_path)
    path.chmod(0)
    folder = tmp_path / "sessions"
    folder.mkdir(mode=0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for args, naming in (
        (["memory", "agents", "--db", str(path)], str(path)),
        (["ls", "--context-dir", str(folder)], str(folder)),
    ):
        result = subprocess.run(
            [sys.executable, "-c", UNPRIVILEGED, *args], capture_output=True, text=True, env=env, check=False
        )
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(("error: cannot read", "error: cannot reach"))
        assert naming in line
        assert "permission denied" in line.lower()


def test_a_toolctx_memory_on_postgresql_is_read_in_read_only_transactions(postgres_url: str) -> None:
    url = new_postgres_database(postgres_url)
    with MemoryStore(url) as store:
        store.agent("worker").save("TASK", "Add retries to the uploader")
        revision = store.revision()
    result = run("memory", "items", "worker", "--db", url)
    assert result.exit_code == 0, result.output
    assert "Add retries to the uploader" in result.stdout
    saved = run("memory", "flash-save", "worker", "--db", url)  # a writing command still writes
    assert saved.exit_code == 0, saved.output
    with MemoryStore(url) as store:
        assert store.revision() > revision


def test_a_memory_of_an_older_layout_is_named_so_and_left_for_a_store_to_upgrade(tmp_path: Path) -> None:
    path = toolctx_memory(tmp_path)
    connection = sqlite3.connect(path)
    connection.execute("ALTER TABLE context_agents DROP COLUMN updated_at")  # (as an early release wrote it,
    connection.execute("DROP TABLE context_schema")  # before layouts had a version table)
    connection.commit()
    connection.close()
    before = path.read_bytes()
    line = assert_refused(run("memory", "items", "worker", "--db", str(path)), str(path), codes=(2,))
    assert "older layout" in line
    assert path.read_bytes() == before  # looking does not upgrade it
    MemoryStore(path).close()  # opening a store does
    result = run("memory", "items", "worker", "--db", str(path))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("layout", [name for name, (version, _) in LAYOUTS.items() if version < SCHEMA_LAYOUT])
def test_every_earlier_layout_is_read_or_named_older_and_read_once_upgraded(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "memory.db"
    run_sql(f"sqlite:///{path}", layout_sql(layout, "sqlite"))
    before = path.read_bytes()
    looked = run("memory", "agents", "--db", str(path))  # read as it is where it can be, or named older
    if looked.exit_code != 0:
        assert "older layout" in assert_refused(looked, str(path), codes=(2,))  # (never "not a toolctx memory")
    assert path.read_bytes() == before
    MemoryStore(path).close()
    result = run("memory", "agents", "--db", str(path))
    assert result.exit_code == 0, result.output

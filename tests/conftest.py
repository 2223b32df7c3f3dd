from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import structlog
from hypothesis import settings

import toolctx.testing

pytest_plugins = ["toolctx_pytest"]  # here, not by entry point: see addopts in pyproject.toml

# Under CI a clean checkout passes or fails the same way every run: examples are
# derived from the test alone (no random seed, no example database carried over).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("TOOLCTX_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _isolated_toolctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the default context_dir at a temporary folder; check no session or toolctx warning leaks out."""
    monkeypatch.setenv("TOOLCTX_CONTEXT_DIR", str(tmp_path / "default-context"))
    structlog.reset_defaults()
    toolctx.testing.escalated_warnings()
    yield
    leaked = toolctx.testing.reset()
    structlog.reset_defaults()
    assert leaked == [], f"sessions still open after the test: {leaked!r}"
    # filterwarnings = error: toolctx holds its warnings back from tool calls; fail on them here.
    escalated = toolctx.testing.escalated_warnings()
    assert escalated == [], f"toolctx warnings escalated to errors during the test: {escalated!r}"


@pytest.fixture
def context_dir(tmp_path: Path) -> Path:
    path = tmp_path / "ctx"
    path.mkdir()
    return path


def files_under(path: Path) -> list[Path]:
    """Every file and directory below ``path`` (for 'nothing left behind' checks)."""
    return sorted(path.rglob("*")) if path.exists() else []


@pytest.fixture(scope="session")
def s3_server() -> Iterator[Any]:
    """A real S3 endpoint over HTTP on loopback for the whole run (moto's server, a process of its own).

    Without moto the tests that need it skip, except under CI, where they fail.
    """
    from tests.s3_server import S3Server, require_moto

    require_moto()
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process pointed at the S3 server by the standard AWS variables; the variables, for children too."""
    env = s3_server.environment()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback for the whole run (``make test`` installs it).

    ``TOOLCTX_TEST_POSTGRES_URL`` points the tests at a server of your own instead.
    Without PostgreSQL the tests that need it skip, except under CI, where they fail.
    """
    configured = os.environ.get("TOOLCTX_TEST_POSTGRES_URL")
    if configured:
        yield configured
        return
    from tests.postgres_server import PostgresServer, find_bindir

    if find_bindir() is None:
        message = "PostgreSQL is not installed; `make test` installs it (scripts/ensure-postgres)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with PostgresServer() as server:
        yield server.url


def new_postgres_database(url: str) -> str:
    """A new, empty database on the server of ``url``; its URL (tests that need tables of their own)."""
    import uuid

    import psycopg

    base, _, _ = url.rpartition("/")
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{base}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def index_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty session index of each kind: a SQLite file, a new PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'index.db'}"
    return new_postgres_database(request.getfixturevalue("postgres_url"))


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: type, names: tuple[str, ...]) -> list[str]:
    """Record the name of each call to the methods ``names`` of class ``owner`` (in order) while the test runs."""
    calls: list[str] = []

    def counted(name: str) -> Any:
        original = getattr(owner, name)

        def call(self: Any, *args: Any) -> Any:
            calls.append(name)
            return original(self, *args)

        return call

    for name in names:
        monkeypatch.setattr(owner, name, counted(name))
    return calls


def unavailable(reason: str) -> NoReturn:
    """Skip a test whose means this run lacks, except under CI, where ``make test`` provides them: fail there."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; under CI `make test` provides it")
    pytest.skip(reason)

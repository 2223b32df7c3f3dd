from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

import toolctx._vars as vars_module
import toolctx.scope as scope_module


@pytest.fixture(autouse=True)
def _isolated_toolctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the default context_dir at a temporary folder and check no session leaks out."""
    monkeypatch.setenv("TOOLCTX_CONTEXT_DIR", str(tmp_path / "default-context"))
    structlog.reset_defaults()
    yield
    leaked = vars_module.active_session.get()
    still_entered = list(vars_module._entered)
    scope_module._close_default()
    structlog.reset_defaults()
    assert leaked is None, f"a session is still active after the test: {leaked!r}"
    assert still_entered == [], f"sessions still entered after the test: {still_entered!r}"


@pytest.fixture
def context_dir(tmp_path: Path) -> Path:
    path = tmp_path / "ctx"
    path.mkdir()
    return path


def files_under(path: Path) -> list[Path]:
    """Every file and directory below ``path`` (for 'nothing left behind' checks)."""
    return sorted(path.rglob("*")) if path.exists() else []


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

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from toolctx.memory import MemoryConfig, MemoryStore

START = 1_800_000_000.0
DAY = 86_400.0


class FakeClock:
    """UNIX seconds that only move when a test says so."""

    def __init__(self, now: float = START):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, *, days: float = 0.0, hours: float = 0.0) -> None:
        self.now += days * DAY + hours * 3600.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _emptied(url: str) -> str:
    reset = MemoryStore(url)
    with reset.engine.begin() as conn:
        conn.execute(text("TRUNCATE context_checkpoints, context_items, context_agents RESTART IDENTITY CASCADE"))
    reset.close()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each kind: every conformance test runs on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return _emptied(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite-file", "sqlite://", ":memory:", "postgresql"])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every kind of database URL a store accepts: a SQLite file, in-memory SQLite (both ways), PostgreSQL."""
    if request.param == "sqlite-file":
        return str(tmp_path / "memory.db")
    if request.param == "postgresql":
        return _emptied(request.getfixturevalue("postgres_url"))
    return str(request.param)


@pytest.fixture
def store(db_url: str, clock: FakeClock) -> Iterator[MemoryStore]:
    opened = MemoryStore(db_url, config=MemoryConfig(clock=clock))
    yield opened
    opened.close()

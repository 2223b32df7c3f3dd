"""Stores made by every earlier layout open with today's MemoryStore, data intact, at the current version."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url
from sqlalchemy.engine import Engine

from tests.conftest import new_postgres_database
from tests.memory.layouts import FOUND_ON_POSTGRESQL, LAYOUTS, SAMPLE, layout_sql, refused_sql
from toolctx.errors import ConfigError
from toolctx.memory import MemoryStore, Tier

CURRENT = 5  # the version this release writes: a new layout adds a step and a layout here


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no table yet, of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return new_postgres_database(request.getfixturevalue("postgres_url"))


def raw_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed)


def run_sql(url: str, statements: list[str]) -> None:
    engine = raw_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    engine.dispose()


def versions(url: str) -> list[int]:
    engine = raw_engine(url)
    with engine.connect() as conn:
        found = [row[0] for row in conn.exec_driver_sql("SELECT version FROM context_schema ORDER BY version")]
    engine.dispose()
    return found


def item_indexes(url: str) -> dict[str, str]:
    """Each index of context_items as the database describes it, by name."""
    engine = raw_engine(url)
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            rows = conn.exec_driver_sql("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'context_items'")
        else:
            rows = conn.exec_driver_sql(
                "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'context_items' AND sql IS NOT NULL "
                "AND type = 'index'"
            )
        found = {str(name): " ".join(str(sql).split()) for name, sql in rows}
    engine.dispose()
    return found


@pytest.fixture
def current_indexes(tmp_path: Path, request: pytest.FixtureRequest, empty_url: str) -> dict[str, str]:
    """The item indexes of a store made new by this release, on the same kind of database."""
    if empty_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        url = new_postgres_database(request.getfixturevalue("postgres_url"))
    MemoryStore(url).close()
    return item_indexes(url)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_store_in_an_earlier_layout_opens_with_its_data_at_the_current_version(
    empty_url: str, layout: str, current_indexes: dict[str, str]
) -> None:
    dialect = raw_engine(empty_url).dialect.name
    found = FOUND_ON_POSTGRESQL.get(layout, LAYOUTS[layout][0]) if dialect == "postgresql" else LAYOUTS[layout][0]
    run_sql(empty_url, layout_sql(layout, dialect))
    with MemoryStore(empty_url) as store:
        agent = store.agent("worker", create=False)
        kept = {item.id: item for item in agent.items(archived=True)} | {item.id: item for item in agent.items()}
        assert {
            item_id: (item.item_type, item.content, item.tier.value, item.loaded, item.archived)
            for item_id, item in kept.items()
        } == SAMPLE
        assert [item.id for item in agent.working_set()] == [1, 2]
        [checkpoint] = agent.checkpoints()
        assert (checkpoint.id, checkpoint.item_count) == (1, 2)
        # The store works as a new one does: new ids follow the old, every write path runs.
        assert agent.save("TASK", "after the upgrade").id == 4
        assert agent.delete([2]) == [2]
        agent.update_tiers()
        restored = agent.restore(1)
        assert [item.content for item in restored.items] == [SAMPLE[1][1]]
        assert agent.flash_save().checkpoint_id == 2
        assert store.revision() > 0
    # Each missing step ran once, after the version found was written down.
    assert versions(empty_url) == list(range(found, CURRENT + 1))
    assert item_indexes(empty_url) == current_indexes
    with MemoryStore(empty_url) as store:  # and opening it again changes nothing
        assert store.agent("worker", create=False).stats().total_items == 3
    assert versions(empty_url) == list(range(found, CURRENT + 1))


def test_a_new_store_records_the_current_version(empty_url: str) -> None:
    MemoryStore(empty_url).close()
    assert versions(empty_url) == [CURRENT]


def test_a_database_a_newer_toolctx_upgraded_is_refused_and_left_alone(empty_url: str) -> None:
    with MemoryStore(empty_url) as store:
        store.agent("worker").save("TASK", "kept")
    run_sql(empty_url, ["INSERT INTO context_schema VALUES (9, 1900000000.0, 'from the future')"])
    with pytest.raises(ConfigError, match=r"schema version 9, newer than this toolctx knows \(5\).*pip install -U"):
        MemoryStore(empty_url)
    assert versions(empty_url) == [CURRENT, 9]


def test_the_first_layout_with_text_in_the_item_table_is_refused_with_what_to_do(empty_url: str) -> None:
    run_sql(empty_url, refused_sql(raw_engine(empty_url).dialect.name))
    with pytest.raises(ConfigError, match=r"keeps item text in context_items.*start a new database"):
        MemoryStore(empty_url)
    engine = raw_engine(empty_url)
    with engine.connect() as conn:
        assert not engine.dialect.has_table(conn, "context_schema")  # nothing was changed
        assert not engine.dialect.has_table(conn, "context_contents")
    engine.dispose()


def test_opening_a_current_sqlite_store_waits_for_no_writer(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "memory.db"
    MemoryStore(str(path)).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
    opened: list[object] = []
    thread = threading.Thread(target=lambda: opened.append(MemoryStore(str(path))))
    thread.start()
    thread.join(timeout=30)
    writer.execute("ROLLBACK")
    thread.join()
    writer.close()
    assert len(opened) == 1
    assert isinstance(opened[0], MemoryStore)
    opened[0].close()
    # (a store that took the write lock to check its layout would still be waiting when the writer is done)


def _open_and_count(url: str, barrier: multiprocessing.synchronize.Barrier) -> str:
    barrier.wait()
    try:
        with MemoryStore(url) as store:
            return str(store.agent("worker", create=False).stats().total_items)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def test_processes_opening_an_old_database_at_once_upgrade_it_once(empty_url: str) -> None:
    run_sql(empty_url, layout_sql("1-34d7ec4", raw_engine(empty_url).dialect.name))
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(4) as pool:
        barrier = manager.Barrier(4)
        assert pool.starmap(_open_and_count, [(empty_url, barrier)] * 4) == ["3"] * 4
    assert versions(empty_url) == [1, 2, 3, 4, 5]
    with MemoryStore(empty_url) as store:
        assert store.agent("worker", create=False).items(Tier.HOT)[0].content == SAMPLE[1][1]

"""Tiered memory speed with 100,000 items for one agent among 10 agents, on SQLite and PostgreSQL.

    python bench/tiered.py [--items 100000] [--others 10000] [--days 30] [--runs 7] [--sqlite-only | --postgres-only]

The database holds the measured agent's items plus ``--others`` items for each of
nine other agents. The measured agent's items are saved in 200 batches spread over
``--days`` simulated days, with ``complete_task()`` and ``update_tiers()`` after every
tenth batch (as after each task), so ages, tiers and access counts look like a long-running agent's. Item
contents are 100-2,000 characters. PostgreSQL's planner statistics are refreshed
with ANALYZE after loading, as autovacuum does within a minute. How many items are HOT follows from how many
arrive per day: over 30 days the HOT tier holds a few hundred items, about what
``load("HOT")`` can put in a context window; over 5 days it holds 1,500 items and
some 280,000 tokens, more than any window. Lookups scale with the tier, not the
store, so the lookup rows also give the cost per item returned. PostgreSQL is a server started for the run on
loopback (fsync on), from the same helper the tests use.

Reported, as the median of ``--runs`` runs:

- tier lookup: ``items("HOT")`` (read only) and ``load("HOT")`` (counts an access
  and writes), against the reference of the same SELECT through the bare driver;
- ``update_tiers()`` over all active items, an hour of simulated time apart;
- flash save of a 10,000-item working set (the newest items, archived ones brought
  back as a restore would): the first one, which also archives the backlog of COLD
  items, and the median of the ones after it, each after an hour of new items. The
  first one runs ``--runs`` times, undone in between (untimed, then VACUUM on
  PostgreSQL as autovacuum would), alternating with the same flash save on the earlier
  index layout (archived items indexed beside the others) as the reference; besides
  the wall time it reports the CPU time of the client and of the database server's
  processes, which other work on the machine disturbs less;
- ``diff()`` of a 10,000-item working-set snapshot taken just before 100 items changed, against
  the reference of reading the same ids and hashes through the bare driver.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from sqlalchemy import delete, select, update

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.postgres_server import PostgresServer
from toolctx.memory import AgentMemory, MemoryConfig, MemoryStore
from toolctx.memory._base import StoreCore
from toolctx.memory._schema import _SQLITE_STATS, checkpoints, items

# The indexes of the earlier layout, which indexed archived items beside the others (the
# queries are the same): the reference the first flash save is compared with.
CURRENT_INDEXES = ("ix_context_items_active", "ix_context_items_agent")
EARLIER_INDEXES = {
    "ix_context_items_tier": ("(agent_id, archived, tier, id, tokens, content_hash)", "1000000 10000 5000 2000 1 1 1"),
    "ix_context_items_revision": ("(agent_id, revision)", "1000000 10000 10"),
}

DAY = 86_400.0
TYPES = ["TASK", "CODE", "ERROR", "TEST_RESULT", "PRD_SECTION"]
WORDS = [
    "retry",
    "upload",
    "timeout",
    "parser",
    "config",
    "schema",
    "cache",
    "index",
    "query",
    "token",
    "budget",
    "agent",
    "tool",
    "error",
    "fix",
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(15, 300)))[: rng.randint(100, 2000)]


def populate(store: MemoryStore, clock: Clock, count: int, others: int, days: float = 30.0) -> AgentMemory:
    rng = random.Random(7)
    start = clock.now
    for n in range(9):
        other = store.agent(f"other-{n}")
        for _ in range(others // 5000):
            other.save_many([(rng.choice(TYPES), text(rng)) for _ in range(5000)], loaded=False)
    agent = store.agent("measured")
    batches = 200
    for batch in range(batches):
        clock.now = start + batch * days * DAY / batches
        agent.save_many([(rng.choice(TYPES), text(rng)) for _ in range(count // batches)], loaded=False)
        if batch % 10 == 9:  # a task done: its items are unpinned, and tiers updated
            agent.load("HOT", limit=200)
            agent.complete_task()
            agent.update_tiers()
    clock.now = start + days * DAY
    agent.update_tiers()
    for n in range(9):
        store.agent(f"other-{n}").update_tiers()
    if store.dialect == "postgresql":
        with store.write() as conn:  # what autovacuum does within a minute of a bulk load
            conn.exec_driver_sql("ANALYZE")
    return agent


def set_working_set(agent: AgentMemory, size: int) -> None:
    """Untimed setup: make the newest ``size`` items the working set, bringing archived ones back as a restore would."""
    with agent.store.write() as conn:
        conn.execute(update(items).where(items.c.agent_id == agent.agent_id).values(loaded=False))
        newest = select(items.c.id).where(items.c.agent_id == agent.agent_id).order_by(items.c.id.desc()).limit(size)
        conn.execute(update(items).where(items.c.id.in_(newest.scalar_subquery())).values(loaded=True, archived=False))


def median_ms(fn: Callable[[], Any], runs: int, before: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def raw_reader(store: MemoryStore, sql: str) -> Callable[[], list[Any]]:
    """The reference: the same SELECT through the bare DBAPI driver, rows as tuples."""
    raw = store.engine.raw_connection()
    placeholder = "?" if store.dialect == "sqlite" else "%s"
    statement = sql.replace("?", placeholder)

    def read() -> list[Any]:
        cursor = raw.cursor()
        cursor.execute(statement, ("measured",))
        rows = cursor.fetchall()
        cursor.close()
        raw.commit()
        return list(rows)

    return read


def measure(url: str, label: str, args: argparse.Namespace, server_pid: int | None = None) -> dict[str, Any]:
    clock = Clock()
    store = MemoryStore(url, config=MemoryConfig(clock=clock))
    started = time.perf_counter()
    agent = populate(store, clock, args.items, args.others, args.days)
    setup_s = time.perf_counter() - started
    stats = agent.stats()
    runs = args.runs
    out: dict[str, Any] = {"label": label, "setup_s": setup_s, "stats": stats, "load": os.getloadavg()}

    false, true = ("0", "1") if store.dialect == "sqlite" else ("false", "true")
    hot_sql = (
        "SELECT i.id, i.agent_id, i.item_type, c.content, i.importance_score, i.tier, i.access_count, "
        "i.created_at, i.last_accessed, i.content_hash, i.tokens, i.loaded, i.archived "
        "FROM context_items i JOIN context_contents c ON c.item_id = i.id AND c.content_hash = i.content_hash "
        f"WHERE agent_id = ? AND archived = {false} AND tier = 'HOT' ORDER BY importance_score DESC, id DESC"
    )
    out["hot_ref"] = median_ms(raw_reader(store, hot_sql), runs * 3)
    out["hot_items"] = median_ms(lambda: agent.items("HOT"), runs * 3)
    out["hot_load"] = median_ms(lambda: agent.load("HOT"), runs * 3)
    out["hot_count"] = len(agent.items("HOT"))

    def an_hour_later() -> None:
        clock.now += 3600

    out["update_tiers"] = median_ms(agent.update_tiers, runs, before=an_hour_later)
    out["active"] = agent.stats().total_items - agent.stats().archived_count

    set_working_set(agent, 10_000)
    snapshot = agent.snapshot(None)
    working_sql = f"SELECT id, content_hash FROM context_items WHERE agent_id = ? AND loaded IS {true}"
    working_ref = raw_reader(store, working_sql)
    rng = random.Random(3)
    ids = list(snapshot.items)

    snapshots = [snapshot]

    def change_100() -> None:
        snapshots.append(agent.snapshot(None))
        for item_id in rng.sample(ids, 100):
            agent.update(item_id, text(rng))

    out["diff_ref"] = median_ms(working_ref, runs * 3)
    diffs: list[int] = []
    out["diff"] = median_ms(lambda: diffs.append(len(agent.diff(snapshots[-1]).modified)), runs, before=change_100)
    out["diff_modified"] = diffs[-1]

    out.update(measure_flash(agent, clock, rng, runs, server_pid))
    out["load_end"] = os.getloadavg()
    store.close()
    return out


def unarchive_all(agent: AgentMemory, working: list[int]) -> None:
    """Untimed: undo a flash save (nothing archived, ``working`` loaded, checkpoints gone), so it can run again."""
    with agent.store.write() as conn:
        conn.execute(
            update(items)
            .where(items.c.agent_id == agent.agent_id, items.c.archived.is_(True))
            .values(archived=False, loaded=False)
        )
        conn.execute(update(items).where(items.c.agent_id == agent.agent_id).values(loaded=False))
        for start in range(0, len(working), 5000):
            chunk = working[start : start + 5000]
            conn.execute(update(items).where(items.c.id.in_(chunk)).values(loaded=True))
        conn.execute(delete(checkpoints).where(checkpoints.c.agent_id == agent.agent_id))
    if agent.store.dialect == "postgresql":  # what autovacuum does after a write this size
        with agent.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE context_items")


def use_layout(store: StoreCore, earlier: bool) -> None:
    """Untimed: build the item indexes of the earlier layout or of the current one afresh, dropping the others."""
    with store.write() as conn:
        for name in (*CURRENT_INDEXES, *EARLIER_INDEXES):
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
        if earlier:
            for name, (columns, _stat) in EARLIER_INDEXES.items():
                conn.exec_driver_sql(f"CREATE INDEX {name} ON context_items {columns}")
        else:
            for index in items.indexes:
                index.create(conn, checkfirst=True)
        if store.dialect == "sqlite":  # the planner statistics the store writes for its own indexes
            stats = [(name, stat) for _table, name, stat in _SQLITE_STATS]
            stats += [(name, stat) for name, (_columns, stat) in EARLIER_INDEXES.items()]
            for name, stat in stats:
                conn.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE idx = ?", (name,))
                conn.exec_driver_sql(
                    "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('context_items', ?, ?)", (name, stat)
                )
            conn.exec_driver_sql("ANALYZE sqlite_schema")


def cpu_seconds(server_pid: int | None) -> float:
    """CPU seconds used so far by this process and, on Linux, by the database server's processes."""
    used = time.process_time()
    if server_pid is None or not Path("/proc").is_dir():
        return used
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == server_pid or int(fields[1]) == server_pid:
            used += (int(fields[11]) + int(fields[12])) / ticks
    return used


def measure_flash(
    agent: AgentMemory, clock: Clock, rng: random.Random, runs: int, server_pid: int | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # The first flash save archives the whole backlog of COLD items. Undone (untimed)
    # between runs, so it is measured ``runs`` times on the same store, alternating with
    # the earlier index layout; each run's indexes are built afresh (untimed).
    first_working = [item.id for item in agent.working_set()]
    timed: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
    for _ in range(runs):
        for earlier in (False, True):
            use_layout(agent.store, earlier)
            unarchive_all(agent, first_working)
            cpu = cpu_seconds(server_pid)
            start = time.perf_counter()
            archived = agent.flash_save().items_archived
            wall = time.perf_counter() - start
            timed[earlier].append((wall * 1000, (cpu_seconds(server_pid) - cpu) * 1000, archived))
    use_layout(agent.store, False)
    for earlier, key in ((False, "flash_first"), (True, "flash_first_earlier")):
        out[key] = statistics.median(wall for wall, _cpu, _n in timed[earlier])
        out[f"{key}_cpu"] = statistics.median(cpu for _wall, cpu, _n in timed[earlier])
        out[f"{key}_all"] = sorted(round(wall) for wall, _cpu, _n in timed[earlier])
    out["flash_first_archived"] = timed[False][-1][2]
    assert timed[True][-1][2] == timed[False][-1][2], "both layouts archive the same items"
    results = []
    working: list[int] = []

    def flash() -> None:
        results.append(agent.flash_save())

    def prepare() -> None:
        clock.now += 3600
        agent.save_many([(rng.choice(TYPES), text(rng)) for _ in range(500)])
        agent.update_tiers()
        set_working_set(agent, 10_000)
        working.append(agent.stats().working_items)

    out["flash"] = median_ms(flash, runs, before=prepare)
    out["flash_checkpointed"] = statistics.median(r.items_checkpointed for r in results)
    out["flash_archived"] = statistics.median(r.items_archived for r in results)
    out["flash_working"] = statistics.median(working)
    return out


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(
        f"items: {args.items:,} for the measured agent over {args.days:g} days, "
        f"{args.others:,} for each of 9 others; runs: {args.runs}"
    )
    for r in results:
        s = r["stats"]
        print(f"\n## {r['label']} (setup {r['setup_s']:.0f} s)")
        print(
            "load average (1, 5, 15 min) after setup: {:.2f} {:.2f} {:.2f}; at the end: {:.2f} {:.2f} {:.2f}".format(
                *r["load"], *r["load_end"]
            )
        )
        print(
            f"tiers after setup: HOT {s.hot_count:,} ({s.hot_tokens:,} tokens), "
            f"WARM {s.warm_count:,}, COLD {s.cold_count:,}"
        )
        rows = [
            ("tier lookup, items('HOT')", r["hot_items"], "< 10 ms",
             f"{r['hot_items'] / r['hot_ref']:.2f}x driver, {r['hot_items'] * 1000 / r['hot_count']:.1f} µs/item"),
            ("tier lookup, load('HOT')", r["hot_load"], "< 10 ms",
             f"{r['hot_load'] / r['hot_ref']:.2f}x driver, {r['hot_load'] * 1000 / r['hot_count']:.1f} µs/item"),
            ("  reference: bare driver SELECT", r["hot_ref"], "", f"{r['hot_count']:,} HOT items"),
            ("update_tiers()", r["update_tiers"], "< 1000 ms", f"{r['active']:,} active items"),
            (f"flash save, {r['flash_working']:,.0f} working items", r["flash"], "< 200 ms",
             f"{r['flash_checkpointed']:,.0f} checkpointed, {r['flash_archived']:,.0f} archived"),
            ("  first flash save (archives backlog)", r["flash_first"], "< 2000 ms",
             f"{r['flash_first_archived']:,} archived, CPU {r['flash_first_cpu']:,.0f} ms, "
             f"runs {r['flash_first_all']}"),
            ("  same, earlier index layout", r["flash_first_earlier"], "",
             f"{r['flash_first_earlier'] / r['flash_first']:.2f}x, CPU {r['flash_first_earlier_cpu']:,.0f} ms "
             f"({r['flash_first_earlier_cpu'] / r['flash_first_cpu']:.2f}x), runs {r['flash_first_earlier_all']}"),
            ("diff, 10,000 items, 100 changed", r["diff"], "< 20 ms", f"{r['diff'] / r['diff_ref']:.2f}x driver"),
            ("  reference: bare driver id+hash read", r["diff_ref"], "", ""),
        ]  # fmt: skip
        print(f"| {'operation':40} | {'median ms':>10} | {'target':>9} | note |")
        print(f"|{'-' * 42}|{'-' * 12}|{'-' * 11}|------|")
        for name, ms, target, note in rows:
            print(f"| {name:40} | {ms:10.1f} | {target:>9} | {note} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    args = parser.parse_args()
    results = []
    if not args.postgres_only:
        with TemporaryDirectory(prefix="toolctx-bench-") as tmp:
            results.append(measure(f"sqlite:///{tmp}/memory.db", "SQLite (file, WAL)", args))
    if not args.sqlite_only:
        with PostgresServer(fsync=True) as server:
            server_pid = int((server.data / "postmaster.pid").read_text().split()[0])
            results.append(measure(server.url, "PostgreSQL 15 (loopback, fsync on)", args, server_pid))
    report(results, args)


if __name__ == "__main__":
    main()

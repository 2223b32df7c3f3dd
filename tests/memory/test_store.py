"""The store conformance suite: every test runs on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import math
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy
from sqlalchemy import insert, select

import toolctx.memory._checkpoints as checkpoints_module
from tests.memory.conftest import FakeClock
from toolctx.errors import ConfigError, UnknownAgentError, UnknownCheckpointError, UnknownItemError
from toolctx.memory import (
    DEFAULT_TYPE_WEIGHTS,
    AgentMemory,
    ContextDiff,
    ContextSnapshot,
    ImportanceScorer,
    MemoryConfig,
    MemoryStore,
    ScoreState,
    Tier,
    content_hash,
)
from toolctx.memory._schema import checkpoints, items


class ScoredInPython(ImportanceScorer):
    """The default formula under another type, which update_tiers scores in Python instead of SQL."""


BOTH_SCORERS = pytest.mark.parametrize("scorer", [ImportanceScorer(), ScoredInPython()], ids=["sql", "python"])


def test_a_new_item_takes_its_type_weight_as_score_and_the_tier_that_follows(store: MemoryStore) -> None:
    agent = store.agent("worker")
    task = agent.save("TASK", "Add retries to the uploader")
    error = agent.save("ERROR", "TimeoutError: upload took 31 s")
    assert (task.importance_score, task.tier) == (1.0, Tier.HOT)
    assert (error.importance_score, error.tier) == (DEFAULT_TYPE_WEIGHTS["ERROR"], Tier.WARM)
    assert task.id != error.id
    assert task.content_hash == content_hash("Add retries to the uploader")
    assert task.tokens > 0
    assert task.loaded
    assert not task.archived
    assert agent.get(task.id) == task


def test_an_explicit_score_sets_the_tier_and_is_validated(store: MemoryStore) -> None:
    agent = store.agent("worker")
    assert agent.save("TASK", "a minor chore", importance_score=0.2).tier is Tier.COLD
    for bad in (1.5, -0.1, math.nan, math.inf, True, "0.5"):
        with pytest.raises(ConfigError, match="importance_score"):
            agent.save("TASK", "x", importance_score=bad)  # type: ignore[arg-type]
    assert agent.stats().total_items == 1


def test_bad_items_are_refused_with_the_value_and_nothing_is_stored(store: MemoryStore) -> None:
    agent = store.agent("worker")
    with pytest.raises(ConfigError, match=r"unknown item_type 'NOTE'.*CODE.*type_weights"):
        agent.save("NOTE", "hello")
    with pytest.raises(ConfigError, match="empty"):
        agent.save("TASK", "   \n")
    with pytest.raises(ConfigError, match="NUL"):
        agent.save("TASK", "a\x00b")
    with pytest.raises(ConfigError, match="not valid Unicode"):
        agent.save("TASK", "half a pair \ud800")
    with pytest.raises(ConfigError, match="must be a string"):
        agent.save("TASK", b"bytes")  # type: ignore[arg-type]
    big = "x" * (store.config.max_content_bytes + 1)
    with pytest.raises(ConfigError, match=r"over the limit.*max_content_bytes"):
        agent.save("CODE", big)
    with pytest.raises(ConfigError, match="entry 1"):
        agent.save_many([("TASK", "fine"), ("TASK",)])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="unknown item_type"):
        agent.save_many([("TASK", "fine"), ("BOGUS", "not fine")])
    assert agent.stats().total_items == 0


def test_the_database_itself_refuses_scores_outside_0_and_1(store: MemoryStore) -> None:
    store.agent("worker")
    row = {
        "agent_id": "worker",
        "item_type": "TASK",
        "content_hash": "0" * 32,
        "tokens": 1,
        "importance_score": 1.5,
        "tier": "HOT",
        "access_count": 0,
        "created_at": 0.0,
        "last_accessed": 0.0,
        "loaded": False,
        "archived": False,
    }
    with pytest.raises(sqlalchemy.exc.IntegrityError), store.write() as conn:
        conn.execute(insert(items).values(**row))


def test_extra_item_types_come_from_the_config(db_url: str) -> None:
    config = MemoryConfig(type_weights={"NOTE": 0.5, **DEFAULT_TYPE_WEIGHTS})
    with MemoryStore(db_url, config=config) as store:
        note = store.agent("worker").save("NOTE", "the staging DB is read-only on Fridays")
    assert (note.item_type, note.tier) == ("NOTE", Tier.WARM)


def test_save_many_stores_everything_in_order(store: MemoryStore) -> None:
    agent = store.agent("worker")
    ids = agent.save_many([("TASK", f"task {n}") for n in range(50)] + [("CODE", "def f(): ...", 0.1)])
    assert len(ids) == 51
    assert ids == sorted(ids)
    assert agent.get(ids[7]).content == "task 7"
    assert agent.get(ids[-1]).tier is Tier.COLD
    assert agent.save_many([]) == []


def test_load_returns_the_hot_tier_best_first_and_counts_an_access(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    task = agent.save("TASK", "current task", loaded=False)
    code = agent.save("CODE", "def upload(): ...", loaded=False)
    agent.save("ERROR", "an old error", loaded=False)
    assert agent.working_set() == []
    clock.advance(hours=1)
    loaded = agent.load()
    assert [item.id for item in loaded] == [task.id, code.id]
    assert all(item.access_count == 1 and item.loaded for item in loaded)
    assert loaded[0].last_accessed.timestamp() == pytest.approx(clock.now)
    assert [item.id for item in agent.working_set()] == [task.id, code.id]
    assert agent.load("hot", limit=1)[0].access_count == 2
    assert agent.get(code.id).access_count == 1
    # Looking is not loading.
    assert [item.id for item in agent.items(Tier.HOT)] == [task.id, code.id]
    assert agent.get(task.id).access_count == 2
    with pytest.raises(ConfigError, match="unknown tier 'LUKEWARM'"):
        agent.load("LUKEWARM")
    with pytest.raises(ConfigError, match="limit"):
        agent.items(limit=0)


SCORER = ImportanceScorer()


def _steps(agent: AgentMemory, count: int) -> None:
    """``count`` steps of the agent's work that do not touch the items under test."""
    for n in range(count):
        agent.save("TEST_RESULT", f"run {n}: 1 passed", loaded=False)


def test_an_item_left_alone_decays_with_steps_and_days_and_a_use_brings_it_back(
    store: MemoryStore, clock: FakeClock
) -> None:
    agent = store.agent("worker")
    code = agent.save("CODE", "def release(): ...")
    _steps(agent, 10)
    clock.advance(days=0.5)
    result = agent.update_tiers()
    assert (result.demoted, result.promoted) == (1, 0)  # the code leaves HOT; the runs (WARM when saved) stay
    after = agent.get(code.id)
    idle = 10 / SCORER.decay_steps + 0.5 / SCORER.decay_days
    assert after.importance_score == pytest.approx(0.85 * math.exp(-idle))
    assert after.tier is Tier.WARM
    _steps(agent, 60)
    agent.update_tiers()
    gone = agent.get(code.id)
    assert gone.tier is Tier.COLD
    assert not gone.loaded  # a COLD item leaves the working set
    [back] = agent.use([code.id])  # used again: fresh, HOT, loaded, at once
    assert (back.tier, back.loaded, back.access_count) == (Tier.HOT, True, 1)
    assert back.importance_score == pytest.approx(0.85 * (1 + 0.1 * math.log(2)))


def test_the_current_task_stays_hot_until_completed(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    task = agent.save("TASK", "ship the release")
    note = agent.save("TASK", "an aside", pinned=False)
    _steps(agent, 200)
    clock.advance(days=30)
    agent.update_tiers()
    assert agent.get(task.id).tier is Tier.HOT
    assert agent.get(note.id).tier is Tier.COLD
    assert agent.complete_task() == [task.id]
    assert agent.complete_task() == []
    agent.update_tiers()
    assert agent.get(task.id).tier is Tier.HOT  # decays from the completion on
    _steps(agent, 100)
    agent.update_tiers()
    assert agent.get(task.id).tier is Tier.COLD


def test_accessed_items_stay_up_longer(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    unused = agent.save("CODE", "never read", loaded=False)
    used = agent.save("CODE", "used often", loaded=False)
    for _ in range(20):
        agent.load(limit=1)  # the newest of two equal scores comes first: "unused" is never read
    _steps(agent, 4)
    clock.advance(days=0.3)
    agent.update_tiers()
    idle = 4 / SCORER.decay_steps + 0.3 / SCORER.decay_days
    assert agent.get(unused.id).tier is Tier.WARM
    assert agent.get(used.id).tier is Tier.HOT
    assert agent.get(used.id).importance_score == pytest.approx(0.85 * math.exp(-idle) * (1 + 0.1 * math.log(21)))


def test_an_explicit_score_decays_like_a_type_weight(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    item = agent.save("ERROR", "the outage postmortem", importance_score=0.95)
    clock.advance(days=1)
    agent.update_tiers()
    assert agent.get(item.id).importance_score == pytest.approx(0.95 * math.exp(-1 / SCORER.decay_days))


def test_use_refuses_unknown_ids_and_changes_nothing(store: MemoryStore) -> None:
    agent = store.agent("worker")
    mine = agent.save("CODE", "x = 1")
    theirs = store.agent("other").save("CODE", "y = 2")
    before = store.revision()
    with pytest.raises(UnknownItemError, match=f"no item {theirs.id}"):
        agent.use([mine.id, theirs.id])
    with pytest.raises(ConfigError, match="item_ids must be a list"):
        agent.use(mine.id)  # type: ignore[arg-type]
    assert agent.get(mine.id).access_count == 0
    assert store.revision() == before


def test_the_database_scorer_matches_the_python_scorer(db_url: str, clock: FakeClock) -> None:
    """The default scorer runs as SQL; a wrapper forces the Python path: same scores, same tiers."""
    scorer = ImportanceScorer(decay_days=2.0, access_factor=0.3)

    def in_python(state: ScoreState) -> float:
        return scorer(state)

    results = {}
    for name, chosen in (("sql", scorer), ("python", in_python)):
        local = FakeClock()
        with MemoryStore(db_url, config=MemoryConfig(scorer=chosen, clock=local)) as store:
            agent = store.agent(f"agent-{name}")
            for n, item_type in enumerate(["TASK", "CODE", "ERROR", "TEST_RESULT", "PRD_SECTION"] * 8):
                agent.save(item_type, f"{item_type} number {n}", importance_score=0.5 if n % 7 == 0 else None)
                local.advance(hours=3)
                if n % 3 == 0:
                    agent.load(limit=2)
            agent.update_tiers()
            results[name] = [(i.importance_score, i.tier) for i in sorted(agent.items(), key=lambda i: i.content)]
    assert [t for _, t in results["sql"]] == [t for _, t in results["python"]]
    for (sql_score, _), (py_score, _) in zip(results["sql"], results["python"], strict=True):
        assert sql_score == pytest.approx(py_score, rel=1e-9, abs=1e-12)


def test_a_custom_scorer_is_used_and_clamped(db_url: str) -> None:
    def by_length(state: ScoreState) -> float:
        return 2.0 if state.item_type == "CODE" else -1.0

    with MemoryStore(db_url, config=MemoryConfig(scorer=by_length)) as store:
        agent = store.agent("worker")
        code = agent.save("CODE", "def f(): ...")
        task = agent.save("TASK", "a task")
        result = agent.update_tiers()
        assert (result.hot_count, result.cold_count) == (1, 1)
        assert agent.get(code.id).importance_score == 1.0
        assert agent.get(task.id).importance_score == 0.0


@BOTH_SCORERS
def test_update_tiers_names_types_no_longer_configured_and_changes_nothing(
    db_url: str, clock: FakeClock, scorer: ImportanceScorer
) -> None:
    with MemoryStore(db_url, config=MemoryConfig(clock=clock)) as store:
        agent = store.agent("worker")
        agent.save("TASK", "x")
        agent.save("CODE", "def f(): ...")
        agent.save("PRD_SECTION", "own weight", importance_score=0.9)
        before = agent.items()
    clock.advance(days=3)
    narrower = MemoryStore(db_url, config=MemoryConfig(type_weights={"CODE": 1.0}, scorer=scorer, clock=clock))
    with narrower:
        with pytest.raises(ConfigError, match=r"items of type 'TASK' are stored but not in type_weights"):
            narrower.agent("worker").update_tiers()
        assert narrower.agent("worker").items() == before


@BOTH_SCORERS
def test_update_tiers_moves_exactly_the_items_whose_score_left_their_tier(
    db_url: str, clock: FakeClock, scorer: ImportanceScorer
) -> None:
    rng = random.Random(7)
    config = MemoryConfig(clock=clock, scorer=scorer)
    with MemoryStore(db_url, config=config) as store:
        agent = store.agent("worker")
        for n in range(120):
            weight = rng.choice([None, None, round(rng.random(), 3)])
            agent.save(rng.choice(list(DEFAULT_TYPE_WEIGHTS)), f"item {n}", importance_score=weight, loaded=False)
            clock.advance(hours=rng.random() * 4)
            if n % 9 == 0:
                agent.load(Tier.WARM, limit=3)
        agent.update_tiers()
        rank = {Tier.COLD: 0, Tier.WARM: 1, Tier.HOT: 2}
        promoted = demoted = 0
        for hours in (0.01, 6.0, 0.01, 30.0):
            clock.advance(hours=hours)
            for tier in rng.choices(list(Tier), k=4):
                agent.load(tier, limit=5)  # accesses lift some scores over a threshold
            before = {item.id: item.tier for item in agent.items()}
            result = agent.update_tiers()
            after = {item.id: item for item in agent.items()}
            assert all(item.tier is config.thresholds.tier_of(item.importance_score) for item in after.values())
            moves = [(rank[before[i]], rank[after[i].tier]) for i in before]
            assert result.promoted == sum(new > old for old, new in moves)
            assert result.demoted == sum(new < old for old, new in moves)
            assert (result.hot_count, result.warm_count, result.cold_count) == tuple(
                sum(item.tier is wanted for item in after.values()) for wanted in (Tier.HOT, Tier.WARM, Tier.COLD)
            )
            promoted, demoted = promoted + result.promoted, demoted + result.demoted
        assert promoted > 0
        assert demoted > 0


def test_agents_cannot_see_or_touch_each_others_items(store: MemoryStore) -> None:
    alice, bob = store.agent("alice"), store.agent("bob")
    secret = alice.save("TASK", "alice's task")
    bob.save("TASK", "bob's task")
    with pytest.raises(UnknownItemError, match=f"agent 'bob' has no item {secret.id}"):
        bob.get(secret.id)
    with pytest.raises(UnknownItemError):
        bob.update(secret.id, "overwritten")
    assert [item.content for item in bob.load()] == ["bob's task"]
    assert [item.content for item in bob.items()] == ["bob's task"]
    checkpoint = alice.flash_save().checkpoint_id
    with pytest.raises(UnknownCheckpointError, match=f"agent 'bob' has no checkpoint {checkpoint}"):
        bob.restore(checkpoint)
    with pytest.raises(UnknownCheckpointError):
        bob.diff(checkpoint)
    with pytest.raises(ConfigError, match="snapshot is of agent 'alice'"):
        bob.diff(alice.snapshot())
    bob.flash_save()
    assert alice.get(secret.id).content == "alice's task"
    assert alice.stats().total_items == bob.stats().total_items == 1
    assert alice.stats().checkpoints == bob.stats().checkpoints == 1
    assert store.agent_ids() == ["alice", "bob"]


def test_unknown_agents_and_bad_agent_ids(store: MemoryStore) -> None:
    with pytest.raises(UnknownAgentError, match="no agent 'ghost'"):
        store.agent("ghost", create=False)
    for bad in ("", "   ", "x" * 201, None, 7, "nul\x00", "half a pair \ud800"):
        with pytest.raises(ConfigError, match="agent_id"):
            store.agent(bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="agent_id"):
            AgentMemory(store, bad, create_on_write=True)  # type: ignore[arg-type]
    store.agent("real")
    assert store.agent("real", create=False).agent_id == "real"
    assert store.agent_ids() == ["real"]


def test_an_agent_created_on_write_is_registered_by_its_first_write_only(store: MemoryStore) -> None:
    lazy = AgentMemory(store, "lazy", create_on_write=True)
    with pytest.raises(ConfigError, match="unknown item_type"):
        lazy.save("NOTE", "refused")
    with pytest.raises(ConfigError, match="content is empty"):
        lazy.save("TASK", "  ")
    assert store.agent_ids() == []  # a refused save registers nothing
    with pytest.raises(UnknownAgentError, match="no agent 'lazy'"):
        AgentMemory(store, "lazy").save("TASK", "not registered, not created")
    item = lazy.save("TASK", "the first write registers the agent")
    assert store.agent_ids() == ["lazy"]
    assert store.agent("lazy", create=False).get(item.id).content == "the first write registers the agent"
    assert AgentMemory(store, "lazy", create_on_write=True).save("TASK", "and later ones find it").id > item.id


def _register_at_once(store: MemoryStore, agent_id: str, threads: int) -> list[str]:
    barrier = threading.Barrier(threads)

    def register() -> str:
        barrier.wait()
        return store.agent(agent_id).agent_id

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(register) for _ in range(threads)]
        return [future.result() for future in futures]


def test_threads_registering_one_new_agent_at_once_all_get_it(store: MemoryStore) -> None:
    for n in range(10):
        assert _register_at_once(store, f"agent-{n}", 4) == [f"agent-{n}"] * 4
    assert store.agent_ids() == [f"agent-{n}" for n in range(10)]


def test_update_changes_content_hash_and_tokens(store: MemoryStore) -> None:
    agent = store.agent("worker")
    item = agent.save("CODE", "def f(): return 1")
    changed = agent.update(item.id, "def f(): return 2  # and a much longer comment")
    assert changed.content_hash == content_hash(changed.content) != item.content_hash
    assert changed.tokens > item.tokens
    assert (changed.id, changed.created_at) == (item.id, item.created_at)
    with pytest.raises(ConfigError, match=r"item_id must be a whole number from 1 to \d+, got '1'"):
        agent.get("1")  # type: ignore[arg-type]
    with pytest.raises(UnknownItemError):
        agent.update(10_000, "nothing there")


def test_ids_and_limits_the_database_cannot_hold_are_refused_by_name(store: MemoryStore) -> None:
    agent = store.agent("worker")
    agent.save("TASK", "x")
    too_big = 2**63
    calls = {
        "item_id": [lambda: agent.get(too_big), lambda: agent.update(too_big, "y")],
        "checkpoint_id": [lambda: agent.restore(too_big), lambda: agent.diff(too_big)],
        "limit": [lambda: agent.items(limit=too_big), lambda: agent.load(limit=too_big)],
    }
    for name, refused in calls.items():
        message = rf"{name} must be a whole number from 1 to {too_big - 1}, got {too_big}"
        for call in refused:
            with pytest.raises(ConfigError, match=message):
                call()
    with pytest.raises(ConfigError, match="item_id must be a whole number from 1"):
        agent.get(0)
    assert agent.stats().total_items == 1


def test_should_flash_save_at_80_percent(store: MemoryStore) -> None:
    agent = store.agent("worker")
    assert not agent.should_flash_save(79_999, 100_000)
    assert agent.should_flash_save(80_000, 100_000)
    for current, limit in ((-1, 10), (1, -1), (1.5, 10), (1, 0), (True, 10)):
        with pytest.raises(ConfigError, match=r"(current_tokens|token_limit) must be a whole number of tokens"):
            agent.should_flash_save(current, limit)  # type: ignore[arg-type]


def _working_agent(store: MemoryStore, clock: FakeClock) -> tuple[dict[str, int], AgentMemory]:
    """An agent whose working set holds one item of each tier, plus a HOT item not loaded."""
    agent = store.agent("worker")
    ids = {
        "hot": agent.save("TASK", "current task").id,
        "warm": agent.save("ERROR", "a recent error").id,
        "cold": agent.save("TEST_RESULT", "an old test run", importance_score=0.1).id,
        "hot_unloaded": agent.save("PRD_SECTION", "the spec section", loaded=False).id,
        "cold_unloaded": agent.save("CODE", "dead code", importance_score=0.05, loaded=False).id,
    }
    clock.advance(hours=1)
    return ids, agent


def test_flash_save_checkpoints_archives_and_resumes_with_hot_only(store: MemoryStore, clock: FakeClock) -> None:
    ids, agent = _working_agent(store, clock)
    before = agent.working_set()
    result = agent.flash_save()
    assert result.items_checkpointed == 2  # the HOT and WARM items of the working set
    assert result.items_archived == 2  # every COLD item, loaded or not
    assert result.hot_items_retained == 2  # every HOT item, loaded or not
    assert result.tokens_before == sum(item.tokens for item in before)
    working = agent.working_set()
    assert sorted(item.id for item in working) == sorted([ids["hot"], ids["hot_unloaded"]])
    assert result.tokens_after == sum(item.tokens for item in working)
    assert agent.get(ids["cold"]).archived
    assert agent.get(ids["cold_unloaded"]).archived
    assert not agent.get(ids["warm"]).archived
    assert not agent.get(ids["warm"]).loaded
    assert agent.load("COLD") == []  # archived items are not loaded by tier
    assert agent.stats().archived_count == 2
    [info] = agent.checkpoints()
    assert (info.id, info.item_count, info.items_archived) == (result.checkpoint_id, 2, 2)
    assert info.tokens_before == result.tokens_before


def test_restore_puts_the_checkpointed_working_set_back(store: MemoryStore, clock: FakeClock) -> None:
    ids, agent = _working_agent(store, clock)
    checkpoint = agent.flash_save().checkpoint_id
    agent.update(ids["warm"], "the error, with its fix")
    agent.save("TASK", "the next task")
    restored = agent.restore(checkpoint)
    assert sorted(item.id for item in restored.items) == sorted([ids["hot"], ids["warm"]])
    assert {item.id: item.content for item in restored.items}[ids["warm"]] == "a recent error"
    assert sorted(item.id for item in agent.working_set()) == sorted([ids["hot"], ids["warm"]])
    assert restored.tokens == sum(item.tokens for item in restored.items)
    diff = agent.diff(checkpoint)
    assert [item.id for item in diff.modified] == [ids["warm"]]
    assert diff.added == []
    assert diff.removed == []
    assert agent.update(ids["warm"], "a recent error").content == "a recent error"  # back to a content it had
    assert not agent.diff(checkpoint).changed
    with pytest.raises(UnknownCheckpointError, match="no checkpoint 999"):
        agent.restore(999)
    with pytest.raises(ConfigError, match=r"checkpoint_id must be a whole number from 1 to \d+, got '1'"):
        agent.restore("1")  # type: ignore[arg-type]


def test_restore_unarchives_items_archived_by_a_later_flash_save(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    error = agent.save("ERROR", "a recent error")
    first = agent.flash_save().checkpoint_id
    clock.advance(days=60)
    agent.update_tiers()
    agent.flash_save()
    assert agent.get(error.id).archived
    agent.restore(first)
    assert not agent.get(error.id).archived
    assert agent.get(error.id).loaded


def test_a_failing_flash_save_leaves_everything_as_it_was(
    store: MemoryStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ids, agent = _working_agent(store, clock)
    before = sorted(agent.items(archived=True), key=lambda item: item.id)

    def broken(_entries: dict[int, str]) -> str:
        raise OSError("disk full")

    # The hash is computed for the checkpoint row, after every item update of the flash save.
    monkeypatch.setattr(checkpoints_module, "hash_snapshot", broken)
    with pytest.raises(OSError, match="disk full"):
        agent.flash_save()
    assert sorted(agent.items(archived=True), key=lambda item: item.id) == before
    assert agent.checkpoints() == []
    with store.read() as conn:
        assert conn.execute(select(checkpoints.c.id)).first() is None


def test_diff_reports_added_modified_and_removed(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    keep = agent.save("TASK", "still hot")
    edit = agent.save("TASK", "will change")
    drop = agent.save("CODE", "will cool down")
    previous = agent.snapshot()
    assert set(previous.items) == {keep.id, edit.id, drop.id}
    unchanged = agent.diff(previous)
    assert not unchanged.changed
    assert unchanged.unchanged == 3
    assert unchanged.current.snapshot_hash == previous.snapshot_hash

    agent.update(edit.id, "changed")
    new = agent.save("PRD_SECTION", "newly hot")
    clock.advance(hours=2)  # CODE (0.85) falls below 0.8 first; TASK and PRD stay HOT
    agent.update_tiers()
    diff = agent.diff(previous)
    assert [item.id for item in diff.added] == [new.id]
    assert [(item.id, item.content) for item in diff.modified] == [(edit.id, "changed")]
    assert diff.removed == [drop.id]
    assert diff.unchanged == 1
    assert diff.changed
    assert agent.diff(diff.current).changed is False


def _diff_summary(
    diff: ContextDiff,
) -> tuple[list[tuple[int, str]], list[tuple[int, str]], list[int], int, dict[int, str]]:
    return (
        [(item.id, item.content) for item in diff.added],
        [(item.id, item.content) for item in diff.modified],
        diff.removed,
        diff.unchanged,
        diff.current.items,
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_diff_reading_only_newer_rows_agrees_with_a_full_comparison(
    store: MemoryStore, clock: FakeClock, seed: int
) -> None:
    """Every write that moves an item in or out of a snapshot's scope must leave a trace for diff."""
    rng = random.Random(seed)
    agent = store.agent("worker")
    store.agent("neighbour").save("TASK", "another agent's writes never show up")
    agent.save_many([(rng.choice(list(DEFAULT_TYPE_WEIGHTS)), f"item {n}") for n in range(12)])
    recorded = {item.id: item.content_hash for item in agent.working_set() if item.tier is not Tier.COLD}
    checkpoint = agent.flash_save().checkpoint_id

    def step() -> None:
        ids = [item.id for item in agent.items(archived=True)]
        match rng.randrange(8):
            case 0:
                agent.save(rng.choice(list(DEFAULT_TYPE_WEIGHTS)), f"new {rng.random()}", loaded=rng.random() < 0.5)
            case 1:
                agent.update(rng.choice(ids), rng.choice(["same text", f"edited {rng.random()}"]))
            case 2:
                clock.advance(hours=rng.choice([1, 3, 12]))
                agent.update_tiers()
            case 3:
                agent.load(rng.choice(list(Tier)), limit=rng.choice([None, 2]))
            case 4:
                agent.flash_save()
            case 5:
                agent.restore(checkpoint)
            case 6:
                agent.items("HOT")  # a read writes nothing
            case _:
                store.agent("neighbour").save("TASK", f"noise {rng.random()}")

    for _ in range(25):
        snapshots = [agent.snapshot(tier) for tier in (None, "HOT", "WARM", "COLD")]
        for _ in range(rng.randint(0, 3)):
            step()
        for previous in snapshots:
            by_revision = agent.diff(previous)
            assert _diff_summary(by_revision) == _diff_summary(
                agent.diff(previous.model_copy(update={"revision": None}))
            )
            assert by_revision.current.items == agent.snapshot(previous.tier).items
            assert by_revision.current.revision == agent.snapshot(previous.tier).revision
            assert not agent.diff(by_revision.current).changed
        by_checkpoint = agent.diff(checkpoint)
        now = agent.snapshot(None).items
        assert by_checkpoint.current.items == now
        assert [item.id for item in by_checkpoint.added] == sorted(now.keys() - recorded.keys())
        assert [item.id for item in by_checkpoint.modified] == sorted(
            i for i in now.keys() & recorded.keys() if now[i] != recorded[i]
        )
        assert by_checkpoint.removed == sorted(recorded.keys() - now.keys())


def test_a_snapshot_from_elsewhere_is_compared_in_full(store: MemoryStore) -> None:
    agent = store.agent("worker")
    kept = agent.save("TASK", "kept")
    stranger = agent.snapshot().model_copy(update={"revision": 10**12, "items": {kept.id: "0" * 32}})
    diff = agent.diff(stranger)
    assert [item.id for item in diff.modified] == [kept.id]
    assert diff.current.items == {kept.id: kept.content_hash}


def test_snapshots_of_the_working_set_and_other_tiers(store: MemoryStore) -> None:
    agent = store.agent("worker")
    hot = agent.save("TASK", "a task")
    warm = agent.save("ERROR", "an error", loaded=False)
    assert set(agent.snapshot(None).items) == {hot.id}
    assert set(agent.snapshot("WARM").items) == {warm.id}
    snap = agent.snapshot()
    assert isinstance(snap, ContextSnapshot)
    assert snap.items == {hot.id: hot.content_hash}
    round_tripped = ContextSnapshot.model_validate_json(snap.model_dump_json())
    assert agent.diff(round_tripped).changed is False


def test_stats_count_items_and_tokens_per_tier(store: MemoryStore) -> None:
    agent = store.agent("worker")
    hot = agent.save("TASK", "t" * 400)
    warm = agent.save("ERROR", "e" * 40, loaded=False)
    cold = agent.save("CODE", "c" * 4, importance_score=0.0)
    stats = agent.stats()
    assert (stats.total_items, stats.hot_count, stats.warm_count, stats.cold_count) == (3, 1, 1, 1)
    assert (stats.hot_tokens, stats.warm_tokens, stats.cold_tokens) == (hot.tokens, warm.tokens, cold.tokens)
    assert stats.total_tokens == hot.tokens + warm.tokens + cold.tokens
    assert (stats.working_items, stats.working_tokens) == (2, hot.tokens + cold.tokens)
    assert (stats.archived_count, stats.checkpoints) == (0, 0)


def test_the_store_refuses_what_it_cannot_use(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match=r"SQLite or PostgreSQL, not 'mysql'"):
        MemoryStore("mysql://root@localhost/db")
    with pytest.raises(ConfigError, match="folder does not exist"):
        MemoryStore("/no/such/folder/memory.db")
    with pytest.raises(TypeError, match="database URL, a path or an Engine"):
        MemoryStore(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MemoryConfig"):
        MemoryStore("sqlite://", config={"decay_days": 2})  # type: ignore[arg-type]
    with MemoryStore("sqlite://") as in_memory:
        assert in_memory.agent("a").save("TASK", "kept in memory").id == 1
        assert repr(in_memory).startswith("MemoryStore(")

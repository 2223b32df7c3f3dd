"""The manager and the agent integration: isolation between agents and tasks, clean-up, stats, async."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolctx.fresh import ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter

PAY = TaskSpec(id="pay", name="Charge cards", files=("pkg/payments.py",))
SHIP = TaskSpec(id="ship", name="Quote shipping", files=("svc/main.go",))


@pytest.fixture
def system(project: Path):
    return create_context_system(project, counter=EstimateCounter())


def test_every_build_is_a_new_context_tracked_until_cleared(system) -> None:
    manager = system.manager
    first = manager.build_fresh_context_sync(PAY, agent_id="a")
    second = manager.build_fresh_context_sync(PAY, agent_id="a")
    assert first.context_id != second.context_id
    assert set(manager.get_active_contexts()) == {first.context_id, second.context_id}
    assert manager.clear_task_context_sync("pay") == 2
    assert manager.get_active_contexts() == {}


def test_clearing_one_agent_or_task_leaves_the_others(system) -> None:
    manager = system.manager
    a_pay = manager.build_fresh_context_sync(PAY, agent_id="a")
    b_pay = manager.build_fresh_context_sync(PAY, agent_id="b")
    b_ship = manager.build_fresh_context_sync(SHIP, agent_id="b")
    assert asyncio.run(manager.clear_agent_context("a")) == 1
    assert set(manager.get_active_contexts()) == {b_pay.context_id, b_ship.context_id}
    assert asyncio.run(manager.clear_task_context("ship")) == 1
    assert set(manager.get_active_contexts()) == {b_pay.context_id}
    assert a_pay.agent_id == "a"
    # The contexts themselves hold only their own task.
    assert b_ship.relevant_files[0].path == "svc/main.go"
    assert "Charge cards" not in b_ship.render()


def test_stats_count_builds_clears_and_tokens(system) -> None:
    manager = system.manager
    contexts = [
        manager.build_fresh_context_sync(PAY, ContextOptions(max_tokens=n), agent_id="a") for n in (20_000, 40_000)
    ]
    manager.clear_agent_context_sync("a")
    manager.build_fresh_context_sync(SHIP, agent_id="b")
    stats = manager.get_context_stats()
    assert stats.total_built == 3
    assert stats.total_cleared == 2
    assert stats.active_contexts == 1
    assert stats.active_agents == 1
    assert stats.peak_tokens >= max(c.token_count for c in contexts)
    assert stats.average_build_seconds > 0


def test_the_async_build_runs_the_same_core(system) -> None:
    async def main():
        return await asyncio.gather(
            system.manager.build_fresh_context(PAY, agent_id="a"),
            system.manager.build_fresh_context(SHIP, agent_id="b"),
        )

    pay, ship = asyncio.run(main())
    sync = system.manager.build_fresh_context_sync(PAY, agent_id="a")
    assert [f.path for f in pay.relevant_files] == [f.path for f in sync.relevant_files]
    assert pay.sections == sync.sections
    assert ship.relevant_files[0].path == "svc/main.go"
    assert system.manager.estimate_token_count("abcd " * 10) == EstimateCounter().count("abcd " * 10) > 0


def test_validation_gives_the_breakdown_and_flags_an_overfull_context(system) -> None:
    context = system.manager.build_fresh_context_sync(PAY, ContextOptions(max_tokens=30_000))
    validation = system.manager.validate_context(context)
    assert validation.valid
    assert validation.token_count == context.token_count
    assert validation.max_tokens == 30_000
    assert validation.breakdown.files == context.breakdown.files > 0
    assert validation.breakdown.total == context.token_count + 7_500
    # A context edited by hand past its budget is caught by the recount.
    stuffed = context.model_copy(update={"sections": {**context.sections, "files": "x " * 60_000}})
    bad = system.manager.validate_context(stuffed)
    assert not bad.valid
    assert any("over its 22,500" in w for w in bad.warnings)
    assert "rebuild it with a larger max_tokens or fewer max_relevant_files" in bad.suggestions


def test_an_agent_holds_one_context_replaced_at_each_task_and_cleared_when_done(system) -> None:
    integration = system.integration
    prepared = asyncio.run(integration.prepare_agent_context("a", PAY))
    assert prepared.success
    assert prepared.context is not None
    assert integration.get_agent_context("a") == prepared.context
    assert integration.active_agents() == {"a": "pay"}
    integration.prepare_agent_context_sync("b", PAY)
    # The next task's context replaces the last one: nothing carries over.
    ship = integration.prepare_agent_context_sync("a", SHIP)
    assert integration.get_agent_context("a") == ship.context
    assert len(system.manager.get_active_contexts()) == 2
    assert asyncio.run(integration.on_task_complete("a", "ship")) == 1
    assert integration.get_agent_context("a") is None
    assert asyncio.run(integration.on_task_failed("b", "pay")) == 1
    assert system.manager.get_active_contexts() == {}
    assert integration.active_agents() == {}
    assert (integration.completed, integration.failed) == (1, 1)


def test_preparing_with_a_bad_task_reports_the_error_instead_of_raising(system) -> None:
    prepared = system.integration.prepare_agent_context_sync("a", {"id": "x"})  # type: ignore[arg-type]
    assert not prepared.success
    assert prepared.context is None
    assert "task must be a TaskSpec, not dict" in (prepared.error or "")

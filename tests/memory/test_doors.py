"""What the store's neighbours and helpers use is public: limits, the snapshot hash, events, registering."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import toolctx
from toolctx.errors import ConfigError
from toolctx.memory import (
    MAX_DATABASE_INTEGER,
    MAX_ITEM_TYPE_LENGTH,
    MemoryConfig,
    MemoryStore,
    hash_snapshot,
)

PACKAGE = Path(toolctx.__file__).parent


def test_the_limits_on_the_face_are_the_ones_the_store_enforces(store: MemoryStore) -> None:
    agent = store.agent("worker")
    agent.save("TASK", "remember me")
    assert agent.items(limit=MAX_DATABASE_INTEGER)
    with pytest.raises(ConfigError, match="limit"):
        agent.items(limit=MAX_DATABASE_INTEGER + 1)
    MemoryConfig(type_weights={"N" * MAX_ITEM_TYPE_LENGTH: 0.5})
    with pytest.raises(ConfigError, match="item type name"):
        MemoryConfig(type_weights={"N" * (MAX_ITEM_TYPE_LENGTH + 1): 0.5})


def test_hash_snapshot_is_the_hash_a_snapshot_and_a_checkpoint_carry(store: MemoryStore) -> None:
    agent = store.agent("worker")
    agent.save("TASK", "first")
    agent.save("CODE", "def second(): ...")
    snapshot = agent.snapshot()
    assert hash_snapshot(snapshot.items) == snapshot.snapshot_hash
    assert hash_snapshot(dict(reversed(snapshot.items.items()))) == snapshot.snapshot_hash
    agent.flash_save()
    [checkpoint] = agent.checkpoints()
    assert checkpoint.snapshot_hash == hash_snapshot(agent.snapshot(None).items)


def test_update_tiers_and_flash_save_add_the_callers_fields_to_their_events(store: MemoryStore) -> None:
    events: list[dict[str, object]] = []
    store.subscribe(events.append)
    agent = store.agent("worker")
    agent.save("TASK", "ship it")
    agent.update_tiers(event={"trigger": "nightly"})
    agent.flash_save(event={"trigger": "nightly", "window": 8_000})
    tiered, flashed = [e for e in events if e["event"] in ("tiers_updated", "flash_saved")]
    assert tiered["trigger"] == "nightly"
    assert (flashed["trigger"], flashed["window"]) == ("nightly", 8_000)
    assert flashed["checkpoint_id"] == agent.checkpoints()[0].id
    with pytest.raises(ConfigError, match="'revision' is set by the store itself"):
        agent.update_tiers(event={"revision": 0})
    with pytest.raises(ConfigError, match="event must be a mapping"):
        agent.flash_save(event=["trigger"])  # type: ignore[arg-type]


def test_a_helper_registers_agents_and_publishes_through_the_store(store: MemoryStore) -> None:
    events: list[dict[str, object]] = []
    store.subscribe(events.append)
    with store.write() as conn:
        assert store.register_agent(conn, "imported") is True
        assert store.register_agent(conn, "imported") is False
    store.publish({"event": "registered", "agent_id": "imported", "revision": store.revision()})
    assert store.agent_ids() == ["imported"]
    assert events[-1]["agent_id"] == "imported"
    assert store.agent("imported", create=False).items() == []


def _private_reads(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self`` or ``cls``: another object's private member."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_memory_reads_no_other_objects_private_members_and_no_one_imports_its_private_modules() -> None:
    memory = PACKAGE / "memory"
    reads = [hit for path in sorted(memory.glob("*.py")) for hit in _private_reads(path)]
    assert reads == []
    importers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(memory):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolctx.memory._"):
                importers.append(f"{path.relative_to(PACKAGE)}: {node.module}")
    assert importers == []

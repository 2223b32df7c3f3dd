"""Tiered memory: items scored by importance, HOT/WARM/COLD tiers, flash save, diffing.

::

    from toolctx.memory import MemoryStore

    store = MemoryStore("sqlite:///memory.db")        # or "postgresql://user@host/db"
    agent = store.agent("worker-1")
    agent.save("TASK", "Add retry to the uploader")
    hot = agent.load()                                # HOT items, counted as accessed
    agent.use([item.id for item in hot])              # the agent used them: they stay HOT
    store.before_model_call("worker-1", prompt_tokens, window)  # flash saves at 80 % of the window
    store.task_completed("worker-1")                  # unpin the task's items, re-tier

Every operation is also awaitable (:class:`AsyncMemoryStore`, :class:`AsyncAgentMemory`),
and a live view follows a store with :meth:`MemoryStore.subscribe`,
:meth:`MemoryStore.revision` and :meth:`MemoryStore.agents`.

Install with ``pip install 'toolctx[memory]'`` (``toolctx[postgres]`` for PostgreSQL).
"""

from __future__ import annotations

try:
    import sqlalchemy  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without SQLAlchemy
    raise ImportError("toolctx.memory needs SQLAlchemy: pip install 'toolctx[memory]'") from exc

from toolctx.errors import UnknownAgentError, UnknownCheckpointError, UnknownItemError
from toolctx.memory._agent import AgentMemory
from toolctx.memory._async import AsyncAgentMemory, AsyncMemoryStore
from toolctx.memory._config import MAX_CONTENT_BYTES, MemoryConfig
from toolctx.memory._items import DEFAULT_TYPE_WEIGHTS, MAX_ITEM_TYPE_LENGTH, ContextItem, Tier, content_hash
from toolctx.memory._results import (
    AgentSummary,
    CheckpointInfo,
    ContextDiff,
    ContextSnapshot,
    FlashSaveResult,
    MemoryStats,
    RestoreResult,
    TierUpdateResult,
    hash_snapshot,
)
from toolctx.memory._schema import MAX_DATABASE_INTEGER
from toolctx.memory._scoring import ImportanceScorer, ScoreBatch, Scorer, ScoreState, TierThresholds
from toolctx.memory._store import MemoryStore
from toolctx.memory._triggers import MemoryTriggers

__all__ = [
    "DEFAULT_TYPE_WEIGHTS",
    "MAX_CONTENT_BYTES",
    "MAX_DATABASE_INTEGER",
    "MAX_ITEM_TYPE_LENGTH",
    "AgentMemory",
    "AgentSummary",
    "AsyncAgentMemory",
    "AsyncMemoryStore",
    "CheckpointInfo",
    "ContextDiff",
    "ContextItem",
    "ContextSnapshot",
    "FlashSaveResult",
    "ImportanceScorer",
    "MemoryConfig",
    "MemoryStats",
    "MemoryStore",
    "MemoryTriggers",
    "RestoreResult",
    "ScoreBatch",
    "ScoreState",
    "Scorer",
    "Tier",
    "TierThresholds",
    "TierUpdateResult",
    "UnknownAgentError",
    "UnknownCheckpointError",
    "UnknownItemError",
    "content_hash",
    "hash_snapshot",
]

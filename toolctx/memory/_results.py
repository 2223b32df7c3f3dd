"""What the memory operations report: tier updates, flash saves, restores, snapshots, diffs, stats."""

from __future__ import annotations

from datetime import datetime

import orjson
import xxhash
from pydantic import BaseModel, ConfigDict, Field

from toolctx.memory._items import ContextItem, Tier

__all__ = [
    "AgentSummary",
    "CheckpointInfo",
    "ContextDiff",
    "ContextSnapshot",
    "FlashSaveResult",
    "MemoryStats",
    "RestoreResult",
    "TierUpdateResult",
    "hash_snapshot",
]


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True)


class TierUpdateResult(_Result):
    """What :meth:`AgentMemory.update_tiers` changed."""

    items_scored: int
    promoted: int
    demoted: int
    hot_count: int
    warm_count: int
    cold_count: int


class FlashSaveResult(_Result):
    """A checkpoint taken, the COLD items archived, and the working set cut back to HOT."""

    checkpoint_id: int
    items_checkpointed: int
    items_archived: int
    hot_items_retained: int
    tokens_before: int
    tokens_after: int


class CheckpointInfo(_Result):
    """A checkpoint without its items."""

    id: int
    agent_id: str
    created_at: datetime
    item_count: int
    items_archived: int
    hot_items_retained: int
    tokens_before: int
    tokens_after: int
    snapshot_hash: str


class RestoreResult(_Result):
    """The working set put back as a checkpoint recorded it."""

    checkpoint_id: int
    items: list[ContextItem]
    tokens: int


def hash_snapshot(entries: dict[int, str]) -> str:
    """One hash for a whole context: equal for equal ``{item id: content hash}`` maps, in any order.

    It is the ``snapshot_hash`` of a :class:`ContextSnapshot` and of a checkpoint, so a
    snapshot sent from elsewhere (the HTTP API) can be checked against its items.
    """
    return xxhash.xxh3_128_hexdigest(orjson.dumps(entries, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS))


class ContextSnapshot(_Result):
    """Which items made up a context (a tier, or the working set when ``tier`` is None), by content hash.

    Keep it (it is small: an id and a hash per item) and pass it, unchanged, to
    :meth:`AgentMemory.diff` at the next task to reload only what changed.
    """

    agent_id: str
    tier: Tier | None
    items: dict[int, str]
    snapshot_hash: str
    taken_at: datetime
    #: The agent's revision when the snapshot was taken: a diff reads only what was written
    #: after it. None (a snapshot built by hand) makes a diff compare the whole context.
    revision: int | None = None


class ContextDiff(_Result):
    """How a context changed since a snapshot: full items for what to (re)load, ids for what to drop."""

    added: list[ContextItem]
    modified: list[ContextItem]
    removed: list[int]
    unchanged: int
    current: ContextSnapshot

    @property
    def changed(self) -> bool:
        return bool(self.added or self.modified or self.removed)


class AgentSummary(_Result):
    """One agent at a glance, as :meth:`MemoryStore.agents` lists it.

    Tier counts and tokens are of unarchived items; archived items are counted apart.
    ``updated_at`` is when a write last changed anything of the agent (None if none has).
    """

    agent_id: str
    hot_count: int
    warm_count: int
    cold_count: int
    hot_tokens: int
    warm_tokens: int
    cold_tokens: int
    archived_count: int
    archived_tokens: int
    created_at: datetime
    updated_at: datetime | None

    @property
    def total_items(self) -> int:
        """Every item of the agent, archived ones included."""
        return self.hot_count + self.warm_count + self.cold_count + self.archived_count


class MemoryStats(_Result):
    """Counts and token totals of one agent's memory; archived items count as COLD."""

    agent_id: str
    total_items: int
    hot_count: int
    warm_count: int
    cold_count: int
    archived_count: int
    hot_tokens: int
    warm_tokens: int
    cold_tokens: int
    total_tokens: int
    working_items: int
    working_tokens: int
    checkpoints: int = Field(ge=0)

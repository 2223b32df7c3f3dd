"""What a tiered memory holds: :class:`ContextItem`, its :class:`Tier`, and content hashing."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import xxhash
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_TYPE_WEIGHTS", "MAX_ITEM_TYPE_LENGTH", "ContextItem", "Tier", "content_hash", "timestamp"]

#: The longest item type name a store takes, in characters.
MAX_ITEM_TYPE_LENGTH = 64


class Tier(StrEnum):
    """Where an item lives: HOT is loaded by default, WARM on demand, COLD is the archive."""

    HOT = "HOT"
    WARM = "WARM"
    COLD = "COLD"


#: Base importance of each built-in item type. A new item's score is its type's
#: weight, so with the default thresholds a new TASK, PRD_SECTION or CODE item is
#: HOT and a new ERROR or TEST_RESULT is WARM. Add types (or change weights)
#: with ``MemoryConfig(type_weights={...})``.
DEFAULT_TYPE_WEIGHTS: dict[str, float] = {
    "TASK": 1.0,
    "PRD_SECTION": 0.9,
    "CODE": 0.85,
    "TEST_RESULT": 0.7,
    "ERROR": 0.6,
}


def content_hash(content: str) -> str:
    """The 128-bit xxh3 hex digest of ``content``: equal contents, equal hashes."""
    return xxhash.xxh3_128_hexdigest(content.encode("utf-8", "surrogatepass"))


def timestamp(seconds: float) -> datetime:
    """UNIX seconds, as stored, to an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


class ContextItem(BaseModel):
    """One piece of an agent's long-lived memory (a task, code, an error, a test result, ...).

    ``importance_score`` and ``tier`` are as of the last :meth:`AgentMemory.update_tiers`
    (or the save). ``loaded`` says whether the item is in the agent's working set, the
    context it currently holds; ``archived`` items were COLD when a flash save put them
    away and are no longer rescored or loaded by tier.
    """

    model_config = ConfigDict(frozen=True)

    id: int
    agent_id: str
    item_type: str
    content: str
    importance_score: float = Field(ge=0.0, le=1.0)
    tier: Tier
    access_count: int = Field(ge=0)
    created_at: datetime
    last_accessed: datetime
    content_hash: str
    tokens: int = Field(ge=0)
    loaded: bool = False
    archived: bool = False

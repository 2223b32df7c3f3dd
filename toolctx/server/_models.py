"""Request and response bodies of the HTTP API (the seed's four endpoints, plus diff, restore and more)."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolctx.memory import ContextItem, Tier
from toolctx.memory._items import MAX_ITEM_TYPE

__all__ = ["DiffRequest", "ItemOut", "ItemsResponse", "LoadRequest", "RestoreRequest", "SaveRequest", "SaveResponse"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SaveRequest(_Body):
    item_type: str = Field(min_length=1, max_length=MAX_ITEM_TYPE, examples=["TASK"])
    content: str = Field(min_length=1, examples=["Add retries to the uploader"])
    importance_score: float | None = Field(default=None, ge=0.0, le=1.0)


class SaveResponse(BaseModel):
    item_id: int
    tier: Tier
    importance_score: float
    tokens: int


class ItemOut(BaseModel):
    """An item as the seed's API names its fields (``type``, ``score``), plus the rest."""

    id: int
    type: str
    content: str
    score: float
    tier: Tier
    tokens: int
    access_count: int
    created_at: datetime
    last_accessed: datetime
    content_hash: str
    loaded: bool
    archived: bool

    @classmethod
    def of(cls, item: ContextItem) -> ItemOut:
        same = item.model_dump(exclude={"agent_id", "item_type", "importance_score"})
        return cls(type=item.item_type, score=item.importance_score, **same)


class ItemsResponse(BaseModel):
    items: list[ItemOut]


class LoadRequest(_Body):
    tier: Tier = Tier.HOT
    limit: int | None = Field(default=None, gt=0)


class RestoreRequest(_Body):
    checkpoint_id: int


class SnapshotIn(_Body):
    tier: Tier | None = Tier.HOT
    items: dict[int, str]
    revision: int | None = None


class DiffRequest(_Body):
    """Either a snapshot returned by an earlier diff or snapshot, or a checkpoint id."""

    snapshot: SnapshotIn | None = None
    checkpoint_id: int | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.snapshot is None) == (self.checkpoint_id is None):
            raise ValueError("give exactly one of 'snapshot' (tier and items) or 'checkpoint_id'")
        return self

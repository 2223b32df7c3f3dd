"""Request and response bodies of the HTTP API (the seed's four endpoints, plus diff, restore and more)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolctx.memory import MAX_DATABASE_INTEGER as MAX_ID
from toolctx.memory import MAX_ITEM_TYPE_LENGTH as MAX_ITEM_TYPE
from toolctx.memory import ContextItem, Tier

# Ids and limits as a 64-bit column holds them; a content hash as the store writes it.
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
Revision = Annotated[int, Field(ge=0, le=MAX_ID)]
ContentHash = Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]

__all__ = ["DiffRequest", "ItemOut", "ItemsResponse", "LoadRequest", "RestoreRequest", "SaveRequest", "SaveResponse"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SaveRequest(_Body):
    item_type: str = Field(min_length=1, max_length=MAX_ITEM_TYPE, examples=["TASK"])
    content: str = Field(min_length=1, examples=["Add retries to the uploader"])
    importance_score: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)


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
    limit: Id | None = None


class RestoreRequest(_Body):
    checkpoint_id: Id


class SnapshotIn(_Body):
    tier: Tier | None = Tier.HOT
    items: dict[Id, ContentHash]
    revision: Revision | None = None


class DiffRequest(_Body):
    """Either a snapshot returned by an earlier diff or snapshot, or a checkpoint id."""

    snapshot: SnapshotIn | None = None
    checkpoint_id: Id | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.snapshot is None) == (self.checkpoint_id is None):
            raise ValueError("give exactly one of 'snapshot' (tier and items) or 'checkpoint_id'")
        return self

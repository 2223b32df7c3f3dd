"""Request and response bodies of the HTTP API (the seed's four endpoints, plus diff, restore and more).

Fields are named as the Python API names them: an item's ``item_type`` and
``importance_score`` in requests and responses alike (the seed's response called
them ``type`` and ``score``; no release served those names).
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolctx.memory import MAX_DATABASE_INTEGER as MAX_ID
from toolctx.memory import MAX_ITEM_TYPE_LENGTH as MAX_ITEM_TYPE
from toolctx.memory import ContextItem, Tier

# Ids and limits as a 64-bit column holds them; a content hash as the store writes it.
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
Revision = Annotated[int, Field(ge=0, le=MAX_ID)]
ContentHash = Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]

__all__ = [
    "DeletedResponse",
    "DiffRequest",
    "HealthResponse",
    "ItemsResponse",
    "LoadRequest",
    "RestoreRequest",
    "SaveRequest",
    "SaveResponse",
]


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


class ItemsResponse(BaseModel):
    """Items with the fields and names of :class:`~toolctx.memory.ContextItem` (``item_type``, ``importance_score``)."""

    items: list[ContextItem]


class DeletedResponse(BaseModel):
    """What a DELETE removed: the agent and the ids of its items that are gone."""

    agent_id: str
    item_ids: list[int]


class HealthResponse(BaseModel):
    """``GET /health``: ``ok`` with the database reachable, ``unavailable`` (HTTP 503) without."""

    status: Literal["ok", "unavailable"]
    database: Literal["reachable", "unreachable"]
    detail: str | None = None


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

"""The FastAPI application over a :class:`~toolctx.memory.MemoryStore`.

Reads (``GET``) never count as accesses, so a dashboard polling the API does not
change what an agent keeps; ``POST .../load`` is the agent's own load. Unknown
agents and checkpoints answer 404, bad values 422 with a message naming them, and a
missing or wrong bearer token 401.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at run time,
# and some name dependencies local to create_app().

import secrets
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from toolctx.errors import ConfigError, NotFoundError
from toolctx.memory import (
    AgentMemory,
    CheckpointInfo,
    ContextDiff,
    ContextSnapshot,
    FlashSaveResult,
    MemoryStats,
    MemoryStore,
    RestoreResult,
    Tier,
    TierUpdateResult,
)
from toolctx.memory._results import snapshot_hash
from toolctx.server._models import (
    DiffRequest,
    ItemOut,
    ItemsResponse,
    LoadRequest,
    RestoreRequest,
    SaveRequest,
    SaveResponse,
)

__all__ = ["create_app"]

AGENT_PATH = "/api/agents/{agent_id}/context"


def create_app(store: MemoryStore, *, token: str | None = None) -> FastAPI:
    """An app serving ``store``; with ``token``, every request needs ``Authorization: Bearer <token>``."""
    bearer = HTTPBearer(auto_error=False)

    def authorised(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        if token is None:
            return
        given = credentials.credentials if credentials is not None else ""
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                headers={"WWW-Authenticate": "Bearer"},
            )

    app = FastAPI(
        title="toolctx memory",
        summary="Tiered agent memory: items, tiers, flash save, diff and restore.",
        dependencies=[Depends(authorised)],
    )

    @app.exception_handler(NotFoundError)
    async def _not_found(_request: Request, exc: NotFoundError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_404_NOT_FOUND)

    @app.exception_handler(ConfigError)
    async def _bad_value(_request: Request, exc: ConfigError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    def existing(agent_id: str) -> AgentMemory:
        return store.agent(agent_id, create=False)

    Agent = Annotated[AgentMemory, Depends(existing)]

    @app.post(f"{AGENT_PATH}/save", status_code=status.HTTP_201_CREATED)
    def save(agent_id: str, body: SaveRequest) -> SaveResponse:
        """Store an item (registering the agent on its first save)."""
        item = store.agent(agent_id).save(body.item_type, body.content, importance_score=body.importance_score)
        return SaveResponse(item_id=item.id, tier=item.tier, importance_score=item.importance_score, tokens=item.tokens)

    @app.get(AGENT_PATH)
    def list_items(
        agent: Agent,
        tier: Tier | None = None,
        limit: Annotated[int | None, Query(gt=0)] = None,
        archived: bool = False,
    ) -> ItemsResponse:
        """Items of a tier (all tiers without ``tier``), best first. Not counted as accesses."""
        return ItemsResponse(items=[ItemOut.of(item) for item in agent.items(tier, archived=archived, limit=limit)])

    @app.post(f"{AGENT_PATH}/load")
    def load(agent: Agent, body: LoadRequest) -> ItemsResponse:
        """Load a tier into the agent's working set, counting an access per item."""
        return ItemsResponse(items=[ItemOut.of(item) for item in agent.load(body.tier, limit=body.limit)])

    @app.get(f"{AGENT_PATH}/working-set")
    def working_set(agent: Agent) -> ItemsResponse:
        return ItemsResponse(items=[ItemOut.of(item) for item in agent.working_set()])

    @app.post(f"{AGENT_PATH}/update-tiers")
    def update_tiers(agent: Agent) -> TierUpdateResult:
        """Rescore every item and move it to its tier (run after each task)."""
        return agent.update_tiers()

    @app.post(f"{AGENT_PATH}/flash-save")
    def flash_save(agent: Agent) -> FlashSaveResult:
        """Checkpoint the working set's HOT and WARM items, archive COLD, keep HOT loaded."""
        return agent.flash_save()

    @app.get(f"{AGENT_PATH}/checkpoints")
    def list_checkpoints(agent: Agent) -> list[CheckpointInfo]:
        return agent.checkpoints()

    @app.post(f"{AGENT_PATH}/restore")
    def restore(agent: Agent, body: RestoreRequest) -> RestoreResult:
        """Make the working set what a checkpoint recorded."""
        return agent.restore(body.checkpoint_id)

    @app.get(f"{AGENT_PATH}/snapshot")
    def snapshot(agent: Agent, tier: Tier | None = Tier.HOT, working_set: bool = False) -> ContextSnapshot:
        """Ids and content hashes of a tier, or of the working set with ``working_set=true``."""
        return agent.snapshot(None if working_set else tier)

    @app.post(f"{AGENT_PATH}/diff")
    def diff(agent: Agent, body: DiffRequest) -> ContextDiff:
        """What changed since a snapshot or a checkpoint: reload ``added`` and ``modified``, drop ``removed``."""
        if body.snapshot is None:
            assert body.checkpoint_id is not None  # the request model guarantees one of the two
            return agent.diff(body.checkpoint_id)
        previous = ContextSnapshot(
            agent_id=agent.agent_id,
            tier=body.snapshot.tier,
            items=body.snapshot.items,
            snapshot_hash=snapshot_hash(body.snapshot.items),
            taken_at=datetime.now(UTC),
            revision=body.snapshot.revision,
        )
        return agent.diff(previous)

    @app.get(f"{AGENT_PATH}/stats")
    def stats(agent: Agent) -> MemoryStats:
        """Totals, per-tier counts and tokens."""
        return agent.stats()

    return app

"""The FastAPI application over a :class:`~toolctx.memory.MemoryStore`.

Reads (``GET``) never count as accesses, so a dashboard polling the API does not
change what an agent keeps; ``POST .../load`` is the agent's own load. ``DELETE``
removes an item or all of an agent's items; ``GET /health`` reports liveness and
whether the database answers, without a token. Unknown agents, items and
checkpoints answer 404, bad values 422 naming the field, a request for
another host 400, a missing or wrong bearer token 401, a body over the limit 413,
and a busy or unreachable database 503.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at run time,
# and some name dependencies local to create_app().

import asyncio
import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, status
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPBearer
from sqlalchemy.exc import SQLAlchemyError

from toolctx._checks import real_number, whole_number
from toolctx._internal import WARNING, log
from toolctx.errors import UnknownItemError
from toolctx.memory import MAX_DATABASE_INTEGER as MAX_ID
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
from toolctx.memory import hash_snapshot as snapshot_hash
from toolctx.server._dashboard import dashboard_router
from toolctx.server._docs import DOCS_HEADERS, render_docs
from toolctx.server._errors import install_error_handlers
from toolctx.server._guard import DEFAULT_MAX_BODY_BYTES, HEALTH_PATH, LOOPBACK_HOSTS, Guard, host_names, token_bytes
from toolctx.server._live import DEFAULT_POLL_INTERVAL, LiveFeed
from toolctx.server._models import (
    DeletedResponse,
    DiffRequest,
    HealthResponse,
    ItemsResponse,
    LoadRequest,
    RestoreRequest,
    SaveRequest,
    SaveResponse,
)

__all__ = ["create_app"]

AGENT_PATH = "/api/agents/{agent_id}/context"
_DELETE_ATTEMPTS = 5


def create_app(
    store: MemoryStore,
    *,
    token: str | None = None,
    allowed_hosts: str | Iterable[str] = LOOPBACK_HOSTS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    context_dir: str | os.PathLike[str] | None = None,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    health_timeout: float = 5.0,
) -> FastAPI:
    """An app serving ``store``, with the dashboard at ``/``.

    With ``token``, every request (``/docs`` and ``/openapi.json`` too) needs
    ``Authorization: Bearer <token>``; the token is compared as UTF-8 bytes, so any
    text works if the client sends it that way. Requests whose Host header names none
    of ``allowed_hosts`` are refused, so a web page cannot reach a loopback server by
    rebinding its own name; add the names your clients use, or ``"*"`` for any.
    A body over ``max_body_bytes`` (32 MiB) is refused before it is read.
    ``/docs`` is a plain HTML reference that loads nothing from elsewhere.

    The dashboard lists the agents and the sessions kept under ``context_dir``
    (default as for ``session()``), and updates live: from writes through ``store``
    at once, and from other processes through PostgreSQL's NOTIFY or, on SQLite, by
    reading the store's revision every ``poll_interval`` seconds. In a browser, a
    server with a token is opened once as ``/?token=<token>``.

    ``GET /health`` answers without a token and to any Host (for load balancers and
    probes): 200 when the database answers within ``health_timeout`` seconds, else 503.
    """
    expected = None if token is None else token_bytes(token)
    hosts = host_names(allowed_hosts)
    whole_number("max_body_bytes", max_body_bytes, minimum=1, unit="bytes")
    real_number("poll_interval", poll_interval, minimum=0.01, unit="seconds")
    real_number("health_timeout", health_timeout, minimum=0.01, unit="seconds")
    feed = LiveFeed(store, poll_interval=poll_interval)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        feed.start()
        try:
            yield
        finally:
            feed.stop()

    # The guard checks the token; the scheme declared here puts it in the OpenAPI description.
    documented = [] if token is None else [Depends(HTTPBearer(auto_error=False, description="The server's token."))]
    app = FastAPI(
        title="toolctx memory",
        summary="Tiered agent memory: items, tiers, flash save, diff and restore.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.add_middleware(Guard, token=expected, allowed_hosts=hosts, max_body_bytes=max_body_bytes)
    install_error_handlers(app)
    app.include_router(dashboard_router(store, feed, context_dir), dependencies=documented)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(render_docs(app.openapi(), token_required=token is not None), headers=DOCS_HEADERS)

    app.include_router(_memory_router(store), dependencies=documented)
    app.include_router(_health_router(store, health_timeout))  # (asks no token: see the Guard)
    return app


def _memory_router(store: MemoryStore) -> APIRouter:
    """The routes over the agents' items: the seed's four, and load, tiers, checkpoints, diff, delete."""
    router = APIRouter()

    def existing(agent_id: str) -> AgentMemory:
        return store.agent(agent_id, create=False)

    Agent = Annotated[AgentMemory, Depends(existing)]

    @router.post(f"{AGENT_PATH}/save", status_code=status.HTTP_201_CREATED)
    def save(agent_id: str, body: SaveRequest) -> SaveResponse:
        """Store an item, registering the agent on its first save (a refused save registers nothing)."""
        agent = AgentMemory(store, agent_id, create_on_write=True)
        item = agent.save(body.item_type, body.content, importance_score=body.importance_score)
        return SaveResponse(item_id=item.id, tier=item.tier, importance_score=item.importance_score, tokens=item.tokens)

    @router.get(AGENT_PATH)
    def list_items(
        agent: Agent,
        tier: Tier | None = None,
        limit: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
        archived: bool = False,
    ) -> ItemsResponse:
        """Items of a tier (all tiers without ``tier``), best first. Not counted as accesses."""
        return ItemsResponse(items=agent.items(tier, archived=archived, limit=limit))

    @router.post(f"{AGENT_PATH}/load")
    def load(agent: Agent, body: LoadRequest) -> ItemsResponse:
        """Load a tier into the agent's working set, counting an access per item."""
        return ItemsResponse(items=agent.load(body.tier, limit=body.limit))

    @router.get(f"{AGENT_PATH}/working-set")
    def working_set(agent: Agent) -> ItemsResponse:
        return ItemsResponse(items=agent.working_set())

    @router.post(f"{AGENT_PATH}/update-tiers")
    def update_tiers(agent: Agent) -> TierUpdateResult:
        """Rescore every item and move it to its tier (run after each task)."""
        return agent.update_tiers()

    @router.post(f"{AGENT_PATH}/flash-save")
    def flash_save(agent: Agent) -> FlashSaveResult:
        """Checkpoint the working set's HOT and WARM items, archive COLD, keep HOT loaded."""
        return agent.flash_save()

    @router.get(f"{AGENT_PATH}/checkpoints")
    def list_checkpoints(agent: Agent) -> list[CheckpointInfo]:
        return agent.checkpoints()

    @router.post(f"{AGENT_PATH}/restore")
    def restore(agent: Agent, body: RestoreRequest) -> RestoreResult:
        """Make the working set what a checkpoint recorded."""
        return agent.restore(body.checkpoint_id)

    @router.get(f"{AGENT_PATH}/snapshot")
    def snapshot(agent: Agent, tier: Tier | None = Tier.HOT, working_set: bool = False) -> ContextSnapshot:
        """Ids and content hashes of a tier, or of the working set with ``working_set=true``."""
        return agent.snapshot(None if working_set else tier)

    @router.post(f"{AGENT_PATH}/diff")
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

    @router.delete(f"{AGENT_PATH}/items/{{item_id}}")
    def delete_item(agent: Agent, item_id: Annotated[int, Path(ge=1, le=MAX_ID)]) -> DeletedResponse:
        """Delete an item and every content it had; 404 if the agent has no such item.

        Checkpoints that recorded it restore without it; a diff against an earlier
        snapshot reports it removed.
        """
        return DeletedResponse(agent_id=agent.agent_id, item_ids=agent.delete([item_id]))

    @router.delete(AGENT_PATH)
    def delete_items(agent: Agent) -> DeletedResponse:
        """Delete every item of the agent, archived ones too; the agent and its checkpoints stay.

        Items saved while the request runs may stay; an item another request deletes
        meanwhile is simply not listed.
        """
        for _attempt in range(_DELETE_ATTEMPTS):
            ids = [item.id for item in agent.items(None, archived=True)]
            try:
                return DeletedResponse(agent_id=agent.agent_id, item_ids=agent.delete(ids))
            except UnknownItemError:  # deleted by someone else between the read and the delete
                continue
        raise HTTPException(status.HTTP_409_CONFLICT, "the agent's items kept changing while they were deleted; retry")

    @router.get(f"{AGENT_PATH}/stats")
    def stats(agent: Agent) -> MemoryStats:
        """Totals, per-tier counts and tokens."""
        return agent.stats()

    return router


def _health_router(store: MemoryStore, health_timeout: float) -> APIRouter:
    router = APIRouter()

    @router.get(
        HEALTH_PATH,
        response_model=HealthResponse,
        responses={503: {"model": HealthResponse, "description": "The database is down."}},
    )
    async def health() -> JSONResponse:
        """Liveness and database reachability; needs no token and answers to any Host.

        200 ``{"status": "ok"}`` once the database answers a read within
        ``health_timeout`` seconds, 503 ``{"status": "unavailable"}`` otherwise.
        """
        try:
            await asyncio.wait_for(asyncio.to_thread(store.revision), timeout=health_timeout)
        except (TimeoutError, SQLAlchemyError, OSError) as exc:
            reason = "no answer in time" if isinstance(exc, TimeoutError) else type(exc).__name__
            log(WARNING, "memory_api_health_unavailable", error=reason)
            down = HealthResponse(status="unavailable", database="unreachable", detail=f"database: {reason}")
            return JSONResponse(down.model_dump(), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
        return JSONResponse(HealthResponse(status="ok", database="reachable").model_dump())

    return router

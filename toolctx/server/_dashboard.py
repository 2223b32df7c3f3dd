"""The dashboard: its page and assets, the agents and kept sessions it lists, and its live feed.

The page and its script, style and icon ship inside the package (``static/``) and
load nothing from elsewhere; their Content-Security-Policy allows only this server,
WebSocket included. Every route here reads; none counts as an agent's access.

The JSON carries stored text as it was stored; the page's script sets it as text (never
as HTML) with control characters and direction overrides shown as escapes. A stored
context is read in bounded parts (``.../excerpt``): the whole-context route refuses one
over :data:`WHOLE_BYTES` instead of reading gigabytes into memory.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at run time.

import asyncio
import contextlib
import os
from importlib import resources
from pathlib import Path
from typing import Annotated

import orjson
from fastapi import APIRouter, HTTPException, Query, WebSocket, WebSocketDisconnect
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel

from toolctx._excerpt import SHOW_BYTES, ContextExcerpt, document_size, excerpt_of, locate
from toolctx.memory import AgentSummary, MemoryStore
from toolctx.models import ContextPointer, StoredContext
from toolctx.server._live import LiveFeed
from toolctx.sessions import SessionSummary, list_sessions, read_session_context, session_pointers

__all__ = ["PAGE_HEADERS", "WHOLE_BYTES", "dashboard_router"]

WHOLE_BYTES = 64 << 20
"""The largest stored context (its document, in bytes) the whole-context route reads; read larger ones in parts."""
MAX_EXCERPT_BYTES = 16 << 20

PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
_ASSETS = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

SessionId = Annotated[str, PathParam(min_length=1, max_length=128)]
ContextId = Annotated[str, PathParam(min_length=1, max_length=64)]


class AgentsResponse(BaseModel):
    """Every agent at a glance, and the store's revision they were read at."""

    revision: int
    agents: list[AgentSummary]


def _asset(name: str) -> bytes:
    return resources.files("toolctx.server").joinpath("static", name).read_bytes()


def dashboard_router(store: MemoryStore, feed: LiveFeed, context_dir: str | os.PathLike[str] | None) -> APIRouter:
    """The routes of the dashboard over ``store``, its kept sessions under ``context_dir``."""
    router = APIRouter()
    page = _asset("index.html")
    assets = {name: _asset(name) for name in _ASSETS}
    sessions_dir = None if context_dir is None else Path(context_dir)

    @router.get("/", include_in_schema=False)
    def index() -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @router.get("/static/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        if name not in assets:
            return Response(
                orjson.dumps({"detail": f"no asset {name[:80]!r}; the dashboard has {sorted(assets)}"}),
                status_code=404,
                media_type="application/json",
            )
        return Response(assets[name], media_type=_ASSETS[name], headers=PAGE_HEADERS)

    @router.get("/api/agents")
    def agents() -> AgentsResponse:
        """Every agent with item counts and tokens per tier, archived apart (what the dashboard lists)."""
        revision = store.revision()
        return AgentsResponse(revision=revision, agents=store.agents())

    @router.get("/api/sessions")
    def sessions() -> list[SessionSummary]:
        """The session folders under the server's context directory: kept, in use or orphaned."""
        return list_sessions(sessions_dir)

    @router.get("/api/sessions/{session_id}/contexts")
    def session_contexts(session_id: SessionId) -> list[ContextPointer]:
        """The contexts a session stored, oldest first (pointers: previews, not results)."""
        return session_pointers(session_id, sessions_dir)

    @router.get("/api/sessions/{session_id}/contexts/{context_id}")
    def session_context(session_id: SessionId, context_id: ContextId) -> StoredContext:
        """One stored context in full; 422 for one over 64 MiB stored (read it in parts with ``.../excerpt``)."""
        found = locate(session_id, context_id, sessions_dir)
        if isinstance(found, StoredContext):
            return found
        size = document_size(found)
        if size > WHOLE_BYTES:
            raise HTTPException(
                422,
                detail=f"context {found.id!r} of session {session_id!r} is {size:,} bytes stored, more than the "
                f"{WHOLE_BYTES:,} read whole; read it in parts: GET /api/sessions/{session_id}/contexts/"
                f"{found.id}/excerpt?offset=0&length={SHOW_BYTES}",
            )
        return read_session_context(session_id, found.id, sessions_dir)

    @router.get("/api/sessions/{session_id}/contexts/{context_id}/excerpt")
    def session_context_excerpt(
        session_id: SessionId,
        context_id: ContextId,
        offset: Annotated[int, Query(ge=0, description="The first byte of the stored document to return.")] = 0,
        length: Annotated[int, Query(ge=1, le=MAX_EXCERPT_BYTES, description="Bytes to return at most.")] = SHOW_BYTES,
    ) -> ContextExcerpt:
        """Bytes ``offset`` to ``offset + length`` of a stored context's JSON document, whatever its size.

        ``next_offset`` is where the next part starts (None at the end); a document that
        fits whole (``offset`` 0, ``next_offset`` None) parses as the stored context.
        """
        return excerpt_of(locate(session_id, context_id, sessions_dir), offset, length)

    @router.websocket("/api/events")
    async def events(socket: WebSocket) -> None:
        """Live changes: ``{"event", "agent_id", "revision"}`` per change, ``hello`` first, ``resync`` if behind."""
        await socket.accept()
        queue = feed.connect()

        async def pump() -> None:
            await socket.send_json({"event": "hello", "agent_id": None, "revision": feed.revision})
            while True:
                await socket.send_json(await queue.get())

        sender = asyncio.create_task(pump())
        try:
            while (await socket.receive())["type"] != "websocket.disconnect":
                pass  # the client sends nothing; reading is how its leaving is noticed
        except WebSocketDisconnect:
            pass
        finally:
            feed.disconnect(queue)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender

    return router

"""The dashboard: its page and assets, the agents and kept sessions it lists, and its live feed.

The page and its script, style and icon ship inside the package (``static/``) and
load nothing from elsewhere; their Content-Security-Policy allows only this server,
WebSocket included. Every route here reads; none counts as an agent's access.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at run time.

import asyncio
import contextlib
import os
from importlib import resources
from pathlib import Path
from typing import Annotated

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel

from toolctx.memory import AgentSummary, MemoryStore
from toolctx.models import ContextPointer, StoredContext
from toolctx.server._live import LiveFeed
from toolctx.sessions import SessionSummary, list_sessions, read_session_context, session_pointers

__all__ = ["PAGE_HEADERS", "dashboard_router"]

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
        """One stored context in full."""
        return read_session_context(session_id, context_id, sessions_dir)

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

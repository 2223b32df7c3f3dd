"""The HTTP API of the tiered memory: ``python -m toolctx.server --db URL``.

Install with ``pip install 'toolctx[server]'``. :func:`create_app` builds the
FastAPI application over a :class:`~toolctx.memory.MemoryStore`, for mounting in an
application of your own; OpenAPI docs are served at ``/docs``.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without FastAPI
    raise ImportError("toolctx.server needs FastAPI and uvicorn: pip install 'toolctx[server]'") from exc

from toolctx.server._app import create_app

__all__ = ["create_app"]

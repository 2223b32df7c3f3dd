"""The HTTP API of the tiered memory and its live dashboard: ``toolctx serve --db URL``.

Install with ``pip install 'toolctx[server]'`` (``toolctx[cli,server]`` for the
``toolctx serve`` command; ``python -m toolctx.server --db URL`` also works).
:func:`create_app` builds the FastAPI application over a
:class:`~toolctx.memory.MemoryStore`, for mounting in an application of your own;
:func:`serve` runs it with uvicorn, with :class:`ServeOptions` checked first.

It answers only to loopback host names unless told others (``--allow-host``), so a
web page cannot reach it by rebinding its own name; with a token (``--token`` or
``$TOOLCTX_API_TOKEN``, required beyond loopback) every request needs it, the docs
too; bodies over 32 MiB (``--max-body-bytes``) are refused before they are read.
``/docs`` is a plain HTML reference built from ``/openapi.json``: FastAPI's
interactive pages would load their scripts from a CDN, so they are not served.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without FastAPI
    raise ImportError("toolctx.server needs FastAPI and uvicorn: pip install 'toolctx[server]'") from exc

from toolctx.server._app import create_app
from toolctx.server._serve import ServeOptions, serve

__all__ = ["ServeOptions", "create_app", "serve"]

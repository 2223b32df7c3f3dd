"""How the API answers what it cannot do: every bad value a 4xx naming it, a busy database a 503.

A refused value is echoed back, but shown safely: a float that JSON cannot hold
(NaN, Infinity) as its name, a lone surrogate as its escape, a long value cut
short, so that the answer to a malformed request is never itself a failure.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException

from toolctx._internal import WARNING, log
from toolctx._scrub import scrubbed
from toolctx.errors import ConfigError, NotFoundError, SessionNotFoundError

__all__ = ["install_error_handlers", "shown"]

_LONGEST = 200  # characters of a refused value shown back
_MOST = 20  # entries of a refused list or object shown back
_BODY_UNREADABLE = "There was an error parsing the body"  # FastAPI's words for a body json.loads refused


def _text(value: str) -> str:
    value = scrubbed(value)  # a refused value may be a secret: shown redacted, as stored text is
    cut = value if len(value) <= _LONGEST else value[:_LONGEST] + "…"
    return cut.encode("utf-8", "backslashreplace").decode("utf-8")


def shown(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON can always carry it: finite numbers, valid text, bounded size."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bytes):
        return _text(value.decode("utf-8", "backslashreplace"))
    if depth >= 4:
        return "…"
    if isinstance(value, dict):
        return {_text(str(k)): shown(v, depth + 1) for k, v in list(value.items())[:_MOST]}
    if isinstance(value, list | tuple):
        return [shown(v, depth + 1) for v in value[:_MOST]]
    return _text(repr(value))


def _detail(exc: Exception, status_code: int, **headers: str) -> JSONResponse:
    return JSONResponse({"detail": _text(str(exc))}, status_code=status_code, headers=headers or None)


async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [
        {key: shown(error[key]) for key in ("type", "loc", "msg", "input", "ctx") if key in error}
        for error in exc.errors()
    ]
    return JSONResponse({"detail": errors}, status_code=422)


async def _bad_value(_request: Request, exc: ConfigError) -> JSONResponse:
    return _detail(exc, 422)


async def _not_found(_request: Request, exc: NotFoundError | SessionNotFoundError) -> JSONResponse:
    # A KeyError's str() is its repr: answer with the message itself.
    return JSONResponse({"detail": _text(str(exc.args[0]) if exc.args else "")}, status_code=404)


async def _http_error(_request: Request, exc: HTTPException) -> JSONResponse:
    detail: Any = exc.detail
    if exc.status_code == 400 and detail == _BODY_UNREADABLE and exc.__cause__ is not None:
        cause = exc.__cause__
        reason = "it is nested too deeply" if isinstance(cause, RecursionError) else str(cause)
        detail = f"the request body is not JSON this server can read: {reason}"
    return JSONResponse({"detail": shown(detail)}, status_code=exc.status_code, headers=exc.headers)


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    log(WARNING, "memory_api_database_unavailable", path=request.url.path, error=type(exc).__name__)
    return JSONResponse(
        {"detail": "the memory database is busy or unreachable; retry shortly"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "1"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(ConfigError, _bad_value)  # type: ignore[arg-type]
    app.add_exception_handler(NotFoundError, _not_found)  # type: ignore[arg-type]
    app.add_exception_handler(SessionNotFoundError, _not_found)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    # A write that waited out SQLite's busy timeout, a PostgreSQL server gone, a pool with no connection free.
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(PoolTimeoutError, _database_unavailable)

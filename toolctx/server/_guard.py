"""What every request passes before the application sees it: its Host, its token, then its size.

A pure ASGI middleware, so each check answers from the request line and headers
alone: a request for a host this server does not answer to gets 400 (a web page
that rebinds its own name to 127.0.0.1 still sends that name), one without the
token gets 401, and one whose ``Content-Length`` is over the limit gets 413, all
before a byte of the body is read. A body sent without a length is counted as it
arrives and refused once it passes the limit.

A browser cannot send a bearer header when it opens a page or a WebSocket, so the
dashboard signs in once: ``GET /?token=<token>`` answers with an HttpOnly,
SameSite=Strict cookie holding a digest of the token (never the token) and a
redirect to ``/``. A request signed in by that cookie that writes, and any
WebSocket handshake, must come from this server's own origin (its ``Origin``
header naming the very host and port the request was sent to), so another site
cannot act with the cookie, nor read the live feed.

``GET /health`` alone passes without a token and for any Host: load balancers and
probes know neither, and it reveals only whether the server and its database are up.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from urllib.parse import parse_qs, urlsplit

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolctx._defaults import DEFAULT_MAX_BODY_BYTES
from toolctx.errors import ConfigError

__all__ = [
    "ANY_HOST",
    "COOKIE_NAME",
    "DEFAULT_MAX_BODY_BYTES",
    "HEALTH_PATH",
    "LOOPBACK_HOSTS",
    "Guard",
    "host_names",
    "token_bytes",
]

#: The names a server on loopback answers to unless told otherwise.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: In ``allowed_hosts``: answer to any Host (a server reachable under names it cannot know).
ANY_HOST = "*"
#: The dashboard's sign-in cookie: a digest of the token, set by ``GET /?token=<token>``.
COOKIE_NAME = "toolctx_token"
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
#: Liveness and database reachability: answered without a token and to any Host (probes
#: know neither), and it tells nothing but whether the server and its database are up.
HEALTH_PATH = "/health"


def host_names(hosts: str | Iterable[str]) -> frozenset[str]:
    """Host names as a request's Host header is compared with them: lower case, no brackets or final dot."""
    names = [hosts] if isinstance(hosts, str) else list(hosts)
    normalised = set()
    for name in names:
        if not isinstance(name, str) or not name.strip() or any(c in name for c in " /\\@?#\t\r\n"):
            raise ConfigError(
                f"allowed host {name!r:.80} is not a host name or address; "
                f"use names like 'localhost', '127.0.0.1', '::1' or 'memory.example', or {ANY_HOST!r} for any"
            )
        normalised.add(_normalise(name))
    if not normalised:
        raise ConfigError(f"allowed_hosts is empty; give at least one name, or {ANY_HOST!r} for any host")
    return frozenset(normalised)


def token_bytes(token: str) -> bytes:
    """The bytes a client sends for ``token`` (UTF-8), or a clear error if no header can carry it."""
    if not isinstance(token, str) or not token:
        raise ConfigError(f"token must be a non-empty string, got {token!r:.20}")
    if token != token.strip(" \t") or any(ord(c) < 32 or ord(c) == 127 for c in token):
        # HTTP drops a header value's outer spaces and cannot carry control characters.
        raise ConfigError("token cannot be sent in an HTTP header: remove spaces at its ends and control characters")
    try:
        # surrogateescape gives back the very bytes of a token read from a non-UTF-8 command line.
        return token.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ConfigError("token is not valid Unicode text (it holds a lone surrogate)") from None


def _normalise(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _host_of(header: bytes) -> str | None:
    """The host part of a Host header (``name``, ``name:port``, ``[v6]:port``), or None if malformed."""
    try:
        value = header.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not value[end + 1 :].startswith(":")):
            return None
        return _normalise(value[: end + 1])
    name, _, port = value.partition(":")
    if not name or ":" in port or (port and not port.isdigit()):
        return None
    return _normalise(name)


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` once a body passes the limit; FastAPI lets HTTP errors of a body read through."""


class Guard:
    """The ASGI middleware: Host check, bearer token (as bytes, in constant time), body size limit."""

    def __init__(
        self, app: ASGIApp, *, token: bytes | None, allowed_hosts: frozenset[str], max_body_bytes: int
    ) -> None:
        self.app = app
        self.token_digest = None if token is None else hashlib.sha256(token).digest()
        # What the sign-in cookie holds: derived from the token, so the cookie never carries it.
        self.cookie_value = None if token is None else hmac.new(token, b"toolctx dashboard", "sha256").hexdigest()
        self.allowed_hosts = allowed_hosts
        self.any_host = ANY_HOST in allowed_hosts
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value)
        if scope["type"] == "http" and scope["path"] == HEALTH_PATH and scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == "/" and b"token=" in scope.get("query_string", b""):
            await self._sign_in(scope, headers, send)
            return
        refusal = self._refusal(headers, scope)
        if scope["type"] == "websocket":
            if refusal is None:
                await self.app(scope, receive, send)
            else:  # refused before the handshake is accepted: 1008, policy violation
                await send({"type": "websocket.close", "code": 1008, "reason": refusal[1][:120]})
            return
        if refusal is not None:
            # A body that was not read leaves the connection unfit for another request.
            unread = headers.get(b"content-length", b"0").strip() not in (b"", b"0") or b"transfer-encoding" in headers
            await _answer(send, *refusal, close=unread)
            return
        await self._limited(scope, receive, send)

    async def _sign_in(self, scope: Scope, headers: dict[bytes, bytes], send: Send) -> None:
        """``GET /?token=<token>``: set the cookie, send the browser on to ``/`` (the token leaves its bar)."""
        refusal = self._host_refusal(headers)
        if refusal is None and (scope["method"] != "GET" or self.cookie_value is None):
            refusal = (400, "sign in with GET /?token=<token>, and only on a server started with a token", [])
        if refusal is None:
            given = parse_qs(scope["query_string"].decode("latin-1")).get("token", [""])[0].encode("latin-1")
            if not hmac.compare_digest(hashlib.sha256(given).digest(), self.token_digest or b""):
                refusal = (401, "wrong token in ?token=: pass the token the server was started with", [])
        if refusal is not None:
            await _answer(send, *refusal, close=False)
            return
        cookie = f"{COOKIE_NAME}={self.cookie_value}; Path=/; HttpOnly; SameSite=Strict"
        await _answer(send, 303, "signed in", [(b"location", b"/"), (b"set-cookie", cookie.encode())], close=False)

    def _host_refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        if self.any_host:
            return None
        host = _host_of(headers.get(b"host", b""))
        if host in self.allowed_hosts:
            return None
        shown = headers.get(b"host", b"").decode("latin-1")
        return (
            400,
            (
                f"this server does not answer to the host {shown[:100]!r}; "
                "allow it with create_app(allowed_hosts=[...]) or --allow-host"
            ),
            [],
        )

    def _signed_in(self, headers: dict[bytes, bytes]) -> bool:
        """Whether the request carries the sign-in cookie (any of its Cookie pairs)."""
        expected = f"{COOKIE_NAME}={self.cookie_value}".encode()
        pairs = headers.get(b"cookie", b"").split(b";")
        return any(hmac.compare_digest(pair.strip(), expected) for pair in pairs)

    def _refusal(self, headers: dict[bytes, bytes], scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        refusal = self._host_refusal(headers)
        if refusal is not None:
            return refusal
        websocket = scope["type"] == "websocket"
        by_cookie = False
        if self.token_digest is not None:
            scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
            given = hashlib.sha256(credentials.strip(b" \t")).digest()
            if not (hmac.compare_digest(given, self.token_digest) and scheme.lower() == b"bearer"):
                by_cookie = self._signed_in(headers)
                if not by_cookie:
                    return (
                        401,
                        "missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                        "(in a browser, open /?token=<token> once)",
                        [(b"www-authenticate", b"Bearer")],
                    )
        if websocket or (by_cookie and scope["method"] not in _SAFE_METHODS) or b"origin" in headers:
            refusal = _origin_refusal(headers, required=by_cookie and not websocket)
            if refusal is not None:
                return refusal
        if websocket:
            return None
        length = headers.get(b"content-length", b"0").strip()
        if not length.isdigit():
            return 400, f"Content-Length {length.decode('latin-1')[:40]!r} is not a number of bytes", []
        if len(length) > 18 or int(length) > self.max_body_bytes:
            return 413, self._too_large(), []
        return None

    def _too_large(self) -> str:
        return (
            f"the request body is over the limit of {self.max_body_bytes:,} bytes; send less, or raise the "
            "server's limit with create_app(max_body_bytes=...) or --max-body-bytes"
        )

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge(413, self._too_large())
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except _BodyTooLarge as exc:  # read outside a route's own body parsing
            if started:
                raise
            await _answer(send, exc.status_code, str(exc.detail), [], close=True)


def _origin_refusal(
    headers: dict[bytes, bytes], *, required: bool
) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
    """403 unless the request's ``Origin`` is this server as the request named it (absent: only if not required)."""
    origin = headers.get(b"origin")
    if origin is None:
        if not required:
            return None  # not a browser: such a client has the token, or none is needed
        return 403, "a request signed in by the dashboard's cookie that writes must send its Origin", []
    try:
        parts = urlsplit(origin.decode("ascii").strip())
        same = parts.scheme in ("http", "https") and parts.netloc.lower() == headers.get(b"host", b"").decode().lower()
    except (UnicodeDecodeError, ValueError):
        same = False
    if same:
        return None
    shown = origin.decode("latin-1")[:100]
    return 403, f"cross-origin request refused: Origin {shown!r} is not this server", []


async def _answer(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]], *, close: bool) -> None:
    body = orjson.dumps({"detail": detail})
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if close:
        start_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})

"""Running the server: options checked once (for ``toolctx serve`` and ``python -m toolctx.server``), then uvicorn."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolctx._checks import fraction, non_empty_text, whole_number
from toolctx.errors import ConfigError
from toolctx.memory import DEFAULT_TYPE_WEIGHTS, MAX_ITEM_TYPE_LENGTH
from toolctx.server._guard import ANY_HOST, DEFAULT_MAX_BODY_BYTES, LOOPBACK_HOSTS, host_names, token_bytes

__all__ = ["TOKEN_ENV", "ServeOptions", "allowed_hosts", "is_loopback", "item_type", "serve", "type_weights"]

TOKEN_ENV = "TOOLCTX_API_TOKEN"
_EVERY_INTERFACE = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, extra: Sequence[str]) -> list[str]:
    """The Host names the server answers to: loopback names, the address it listens on, and ``extra``.

    Listening on every interface (``0.0.0.0``, ``::``) without ``--allow-host`` answers to
    any name: such a server needs a token, which a rebinding web page cannot know.
    """
    if host in _EVERY_INTERFACE and not extra:
        return [ANY_HOST]
    return [*LOOPBACK_HOSTS, *([] if host in _EVERY_INTERFACE else [host]), *extra]


def item_type(spec: str) -> tuple[str, float]:
    """``NAME:WEIGHT`` (``--item-type``) as the name and its base weight in [0, 1]."""
    parts = spec.split(":")
    if len(parts) > 2:
        raise ConfigError(
            f"--item-type {spec!r:.80} has more than NAME:WEIGHT; item types have no time to live: "
            "items leave the working set by decaying (the scorer's decay_steps and decay_days)"
        )
    if len(parts) < 2:
        raise ConfigError(f"--item-type {spec!r:.80} is not NAME:WEIGHT; write it as NOTE:0.5")
    name = non_empty_text("the name in --item-type", parts[0].strip(), max_length=MAX_ITEM_TYPE_LENGTH)
    try:
        weight = float(parts[1])
    except ValueError:
        raise ConfigError(f"the weight in --item-type {spec!r:.80} is not a number; write it as NOTE:0.5") from None
    return name, fraction(f"the weight in --item-type {spec!r:.80}", weight)


def type_weights(specs: Sequence[str]) -> dict[str, float]:
    """The item types a server's store accepts: the built-in ones, then ``specs`` (``NAME:WEIGHT``) added or changed."""
    weights = dict(DEFAULT_TYPE_WEIGHTS)
    for spec in specs:
        name, weight = item_type(spec)
        weights[name] = weight
    return weights


@dataclass(frozen=True)
class ServeOptions:
    """What :func:`serve` (``toolctx serve``) runs with; build it with :meth:`checked`, which checks every value."""

    db: str | None
    host: str
    port: int
    token: str | None
    hosts: list[str]
    context_dir: Path | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: The item types the store accepts and their base weights (``--item-type``); built-in ones by default.
    item_types: tuple[tuple[str, float], ...] = tuple(DEFAULT_TYPE_WEIGHTS.items())

    @classmethod
    def checked(
        cls,
        *,
        db: str | None,
        host: str,
        port: int,
        token: str | None,
        allow_hosts: Sequence[str],
        context_dir: Path | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        item_types: Sequence[str] = (),
    ) -> ServeOptions:
        """The options, or a :class:`~toolctx.ConfigError` naming the first bad one."""
        if token is not None:
            if token == "":
                raise ConfigError(f"--token is empty; pass the token itself, or leave it out (and ${TOKEN_ENV} unset)")
            token_bytes(token)
        if not host.strip():
            raise ConfigError("--host is empty; pass an address such as 127.0.0.1")
        if not is_loopback(host) and not token:
            raise ConfigError(f"refusing to serve {host!r} without a token: pass --token or set ${TOKEN_ENV}")
        whole_number("--port", port, minimum=1, maximum=65535)
        whole_number("--max-body-bytes", max_body_bytes, minimum=1, unit="bytes")
        hosts = allowed_hosts(host, allow_hosts)
        host_names(hosts)
        if db is not None and not db.strip():
            raise ConfigError("--db is empty; pass a database URL such as sqlite:///memory.db, or leave it out")
        if context_dir is not None and context_dir.exists() and not context_dir.is_dir():
            raise ConfigError(f"--context-dir {str(context_dir)!r} is not a folder")
        if isinstance(item_types, str):
            raise ConfigError(f"item_types takes a list of NAME:WEIGHT, not the string {item_types!r:.80}")
        weights = tuple(type_weights(item_types).items())
        return cls(db, host, port, token, hosts, context_dir, max_body_bytes, weights)


def serve(options: ServeOptions, announce: Callable[[str], object] = print) -> int:
    """Serve the API and the dashboard with ``options`` until interrupted (what ``toolctx serve`` runs).

    Returns 0 after a clean stop, 2 if the memory database or the app cannot be set
    up; that failure is told through ``announce`` (``print`` by default) rather than
    raised, so a command can exit with the code. Blocks in uvicorn until stopped.
    """
    import uvicorn

    from toolctx.memory import MemoryConfig, MemoryStore
    from toolctx.server._app import create_app

    try:
        store = MemoryStore(options.db, config=MemoryConfig(type_weights=dict(options.item_types)))
    except (ConfigError, ImportError) as exc:
        announce(f"toolctx serve: {exc}")
        return 2
    try:
        app = create_app(
            store,
            token=options.token,
            allowed_hosts=options.hosts,
            max_body_bytes=options.max_body_bytes,
            context_dir=options.context_dir,
        )
    except ConfigError as exc:
        store.close()
        announce(f"toolctx serve: {exc}")
        return 2
    shown_host = f"[{options.host}]" if ":" in options.host else options.host
    sign_in = "/?token=<your token>" if options.token else "/"
    announce(f"toolctx dashboard on http://{shown_host}:{options.port}{sign_in} ({store!r})")
    try:
        uvicorn.run(app, host=options.host, port=options.port, log_level="warning")
    finally:
        store.close()
    return 0

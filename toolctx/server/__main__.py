"""``python -m toolctx.server --db URL [--host 127.0.0.1] [--port 8765] [--token TOKEN] [--allow-host NAME]``.

Also ``--max-body-bytes N`` and ``--item-type NAME:WEIGHT`` (repeatable), as ``toolctx serve`` takes them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from toolctx._checks import whole_number
from toolctx.errors import ConfigError
from toolctx.server._guard import DEFAULT_MAX_BODY_BYTES
from toolctx.server._serve import TOKEN_ENV, allowed_hosts, is_loopback, type_weights


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m toolctx.server", description="Serve a toolctx memory store.")
    parser.add_argument("--db", help="sqlite:///path.db or postgresql://user@host/db (default: $TOOLCTX_MEMORY_URL "
                        "or ~/.agent/memory.db)")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765)")
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"bearer token required of every request, /docs included (default: ${TOKEN_ENV}); "
        "needed to listen beyond loopback",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients may use besides localhost, 127.0.0.1, ::1 and --host; repeat for more, "
        "'*' for any (default: any when listening on 0.0.0.0 or ::)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
        help=f"refuse request bodies over N bytes before reading them (default: {DEFAULT_MAX_BODY_BYTES:,})",
    )
    parser.add_argument(
        "--item-type",
        action="append",
        default=[],
        metavar="NAME:WEIGHT",
        help="an item type the store accepts besides the built-in ones, with its base weight in [0, 1] "
        "(or a built-in type's new weight); repeat for more",
    )
    args = parser.parse_args(argv)
    if args.token == "":
        parser.error(f"--token is empty; pass the token itself, or leave it out (and ${TOKEN_ENV} unset) for none")
    if not is_loopback(args.host) and not args.token:
        parser.error(f"refusing to serve {args.host!r} without a token: pass --token or set ${TOKEN_ENV}")
    try:
        whole_number("--port", args.port, minimum=1, maximum=65535)
        whole_number("--max-body-bytes", args.max_body_bytes, minimum=1, unit="bytes")
        args.type_weights = type_weights(args.item_type)
    except ConfigError as exc:
        parser.error(str(exc))
    args.allowed_hosts = allowed_hosts(args.host, args.allow_host)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import uvicorn

    from toolctx.memory import MemoryConfig, MemoryStore
    from toolctx.server import create_app

    try:
        store = MemoryStore(args.db, config=MemoryConfig(type_weights=args.type_weights))
    except (ConfigError, ImportError) as exc:
        print(f"toolctx.server: {exc}", file=sys.stderr)
        return 2
    try:
        app = create_app(store, token=args.token, allowed_hosts=args.allowed_hosts, max_body_bytes=args.max_body_bytes)
    except ConfigError as exc:
        store.close()
        print(f"toolctx.server: {exc}", file=sys.stderr)
        return 2
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m toolctx.server --db URL [--host 127.0.0.1] [--port 8765] [--token TOKEN]``."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Sequence

from toolctx._checks import whole_number
from toolctx.errors import ConfigError

TOKEN_ENV = "TOOLCTX_API_TOKEN"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m toolctx.server", description="Serve a toolctx memory store.")
    parser.add_argument("--db", help="sqlite:///path.db or postgresql://user@host/db (default: $TOOLCTX_MEMORY_URL "
                        "or ~/.agent/memory.db)")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765)")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"bearer token required of every request "
                        f"(default: ${TOKEN_ENV}); needed to listen beyond loopback")  # fmt: skip
    args = parser.parse_args(argv)
    if not _loopback(args.host) and not args.token:
        parser.error(f"refusing to serve {args.host!r} without a token: pass --token or set ${TOKEN_ENV}")
    try:
        whole_number("--port", args.port, minimum=1, maximum=65535)
    except ConfigError as exc:
        parser.error(str(exc))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import uvicorn

    from toolctx.memory import MemoryStore
    from toolctx.server import create_app

    try:
        store = MemoryStore(args.db)
    except (ConfigError, ImportError) as exc:
        print(f"toolctx.server: {exc}", file=sys.stderr)
        return 2
    try:
        uvicorn.run(create_app(store, token=args.token), host=args.host, port=args.port, log_level="info")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

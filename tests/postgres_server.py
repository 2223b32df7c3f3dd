"""A throwaway PostgreSQL server for the tests and benchmarks.

It runs the Debian (or any local) PostgreSQL binaries on a temporary data directory,
listening on 127.0.0.1 only, and is removed when stopped. ``make test`` installs the
Debian package when no server binaries are found. PostgreSQL refuses to run as root,
so under root the server runs as the ``postgres`` user that the package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "find_bindir"]


def find_bindir() -> Path | None:
    """The folder holding initdb and pg_ctl: Debian's newest version, or whatever PATH has."""
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return Path(versions[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """``with PostgresServer() as server: server.url`` gives a fresh database on loopback."""

    def __init__(self, bindir: Path | None = None, *, fsync: bool = False):
        found = bindir or find_bindir()
        if found is None:
            raise RuntimeError("no PostgreSQL server binaries found; `make test` installs Debian's postgresql package")
        self.bindir = found
        self.root = Path(tempfile.mkdtemp(prefix="toolctx-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "toolctx"
        self.database = "toolctx_test"
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres", "postgres")
        self.root.chmod(0o700)
        self.fsync = fsync  # off for the tests (a throwaway server); on for benchmarks

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, text=True, cwd=self.root)

    def start(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D", str(self.data),
            "-U", self.user,
            "-A", "trust",
            "-E", "UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip
        self.restart()
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres", autocommit=True) as c:
                    c.execute(f"CREATE DATABASE {self.database}")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        return self

    def restart(self) -> None:
        """Start the server again on its data (after :meth:`pause`), on the same port."""
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root}"
        if not self.fsync:
            options += " -c fsync=off -c full_page_writes=off"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-o", options,
                  "-w", "-t", "60", "start")  # fmt: skip

    def pause(self) -> None:
        """Stop the server, keeping its data (an outage: :meth:`restart` brings it back)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(
                [*self._as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                cwd=self.root,
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_exc: object) -> None:
        self.stop()

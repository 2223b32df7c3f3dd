"""A real S3 endpoint over HTTP on loopback for the tests: moto's server, run as its own process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

ACCESS = {"AWS_ACCESS_KEY_ID": "toolctx-test", "AWS_SECRET_ACCESS_KEY": "toolctx-test", "AWS_REGION": "us-east-1"}


class S3Server:
    """``python -m moto.server`` on a free loopback port; ``endpoint`` once started."""

    def __init__(self) -> None:
        self.endpoint = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> S3Server:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the S3 server exited with {self._process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                self.endpoint = f"http://127.0.0.1:{port}"
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the S3 server did not start within 60 s")

    def bucket(self) -> str:
        """A new, empty bucket."""
        import boto3

        name = f"toolctx-{uuid.uuid4().hex[:12]}"
        client: Any = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=ACCESS["AWS_SECRET_ACCESS_KEY"],
            region_name=ACCESS["AWS_REGION"],
        )
        client.create_bucket(Bucket=name)
        return name

    def environment(self) -> dict[str, str]:
        """What a process needs to reach the server: the standard AWS variables."""
        return {**ACCESS, "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true"}

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def require_moto() -> None:
    """Skip without moto's server installed, except under CI (``make test`` installs it), where fail."""
    import importlib.util
    import os

    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("obstore") is None:
        message = "moto[server] and obstore are not installed; `make test` installs them (the dev extra)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)

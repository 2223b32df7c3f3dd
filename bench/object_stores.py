"""Which library toolctx should reach object storage through: obstore against s3fs, on a real S3 endpoint.

    taskset -c 0 python bench/object_stores.py [--runs 5] [--calls 200]

An S3 API over HTTP on loopback (moto's server, started by this script as its own
process, as the tests start it) with one bucket. For each library, in the same run,
alternating, ``--runs`` times, each timing ``--calls`` requests (median over the
runs of the per-request median, and of the p99):

- put 1 KiB and 100 KiB objects (new names), and a put that must not overwrite
  (obstore ``mode="create"``; s3fs has no conditional put of its own, so it is timed
  as ``exists`` then ``pipe``, which is not atomic);
- get a whole 100 KiB object; a ranged get of 4,000 bytes at an offset of a 1 MiB
  object (what ``read_context(offset, limit)`` needs);
- list a prefix of 200 objects.

Needs ``pip install obstore s3fs 'moto[server]'``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

BUCKET = "toolctx-bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit("the S3 server did not start")


class Obstore:
    name = "obstore"

    def __init__(self, endpoint: str) -> None:
        import obstore
        from obstore.store import S3Store

        self.obstore = obstore
        self.store = S3Store(
            BUCKET,
            endpoint=endpoint,
            region="us-east-1",
            access_key_id="testing",
            secret_access_key="testing",
            client_options={"allow_http": True},
        )

    def put(self, key: str, data: bytes) -> None:
        self.obstore.put(self.store, key, data)

    def create(self, key: str, data: bytes) -> None:
        self.obstore.put(self.store, key, data, mode="create")

    def get(self, key: str) -> bytes:
        return bytes(self.obstore.get(self.store, key).bytes())

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return bytes(self.obstore.get_range(self.store, key, start=start, length=length))

    def list(self, prefix: str) -> list[str]:
        return [o["path"] for batch in self.obstore.list(self.store, prefix=prefix) for o in batch]


class S3fs:
    name = "s3fs"

    def __init__(self, endpoint: str) -> None:
        import s3fs

        self.fs = s3fs.S3FileSystem(
            key="testing", secret="testing", client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"}
        )

    def put(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(f"{BUCKET}/{key}", data)

    def create(self, key: str, data: bytes) -> None:
        if self.fs.exists(f"{BUCKET}/{key}"):
            raise FileExistsError(key)
        self.fs.pipe_file(f"{BUCKET}/{key}", data)

    def get(self, key: str) -> bytes:
        return bytes(self.fs.cat_file(f"{BUCKET}/{key}"))

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return bytes(self.fs.cat_file(f"{BUCKET}/{key}", start=start, end=start + length))

    def list(self, prefix: str) -> list[str]:
        self.fs.invalidate_cache()
        return list(self.fs.ls(f"{BUCKET}/{prefix}", detail=False))


def timed(calls: int, action: Callable[[int], Any]) -> list[float]:
    spent = []
    for i in range(calls):
        started = time.perf_counter()
        action(i)
        spent.append(time.perf_counter() - started)
    return spent


def one_run(client: Any, calls: int) -> dict[str, list[float]]:
    run = uuid.uuid4().hex[:8]
    small, medium, big = os.urandom(1024), os.urandom(100 * 1024), os.urandom(1024 * 1024)
    client.put(f"{run}/big", big)
    client.put(f"{run}/medium", medium)
    for i in range(200):
        client.put(f"{run}/listed/{i}", b"x")
    results = {
        "put 1 KiB": timed(calls, lambda i: client.put(f"{run}/s/{i}", small)),
        "put 100 KiB": timed(calls, lambda i: client.put(f"{run}/m/{i}", medium)),
        "put, never overwriting, 1 KiB": timed(calls, lambda i: client.create(f"{run}/c/{i}", small)),
        "get 100 KiB": timed(calls, lambda i: client.get(f"{run}/medium")),
        "ranged get, 4,000 bytes of 1 MiB": timed(calls, lambda i: client.get_range(f"{run}/big", 500_000, 4000)),
        "list 200 objects": timed(max(1, calls // 10), lambda i: client.list(f"{run}/listed/")),
    }
    assert client.get_range(f"{run}/big", 500_000, 4000) == big[500_000:504_000]
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    server, endpoint = start_server()
    try:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)
        clients = [Obstore(endpoint), S3fs(endpoint)]
        medians: dict[tuple[str, str], list[float]] = {}
        p99s: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.runs):
            for client in clients:  # (alternating: both see the same server state and machine load)
                for what, spent in one_run(client, options.calls).items():
                    medians.setdefault((client.name, what), []).append(statistics.median(spent))
                    p99s.setdefault((client.name, what), []).append(statistics.quantiles(spent, n=100)[98])
        whats = list(dict.fromkeys(what for _, what in medians))
        print(f"S3 on loopback (moto server), {options.runs} runs of {options.calls} requests; ms per request,")
        print("median over the runs of the median (p99); obstore / s3fs in the last column\n")
        print("| request | obstore | s3fs | ratio |")
        print("|---|---:|---:|---:|")
        for what in whats:
            o = statistics.median(medians[("obstore", what)]) * 1000
            f = statistics.median(medians[("s3fs", what)]) * 1000
            op = statistics.median(p99s[("obstore", what)]) * 1000
            fp = statistics.median(p99s[("s3fs", what)]) * 1000
            print(f"| {what} | {o:.2f} ({op:.2f}) | {f:.2f} ({fp:.2f}) | {o / f:.2f} |")
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

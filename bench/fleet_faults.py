"""Workers killed mid-turn (SIGKILL), one after another, on one conversation in S3 + PostgreSQL.

    python bench/fleet_faults.py [--kills 50] [--lease 2] [--seed 7] [--json out.json]

Each round starts a worker process (``tests/integrations/kill_worker.py``) that
first reads back, through the conversation's own scope, every output the killed
workers before it acknowledged (a handle is acknowledged once the tool hook
handed it over: the output is in S3 and listed in the index), then takes the
conversation's turn and stores outputs until it is killed with SIGKILL after a
random number of them (0-12). Reported: outputs acknowledged, read back exactly
by the next worker, lost; how long each worker waited for the dead one's lease
(at most the lease, plus a poll); rounds that failed. The services are real and
started here: moto's S3 server over HTTP on loopback, a PostgreSQL server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    report = drill(options.kills, options.lease, random.Random(options.seed))
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2))
    return 0 if report["lost"] == 0 and not report["failed"] else 1


def drill(kills: int, lease: float, pick: random.Random) -> dict[str, Any]:
    from tests.postgres_server import PostgresServer
    from tests.s3_server import S3Server

    s3 = S3Server().start()
    postgres = PostgresServer().start()
    try:
        env = {
            **os.environ,
            **s3.environment(),
            "TOOLCTX_STORE": f"s3://{s3.bucket()}/conversations",
            "TOOLCTX_INDEX": postgres.url,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations"), *sys.path]),
        }
        with tempfile.TemporaryDirectory() as tmp:
            return rounds(kills, lease, pick, env, tmp)
    finally:
        postgres.stop()
        s3.stop()


def rounds(kills: int, lease: float, pick: random.Random, env: dict[str, str], tmp: str) -> dict[str, Any]:
    acknowledged: list[str] = []  # "handle\tround\tn"
    waits: list[float] = []
    failed: list[str] = []
    read_back = checked = 0
    for round_ in range(kills + 1):
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.integrations.kill_worker", f"{tmp}/w{round_}", "drill", str(round_),
             str(lease)],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert worker.stdin is not None
        assert worker.stdout is not None
        worker.stdin.write("".join(f"{line}\n" for line in acknowledged) + "\n")
        worker.stdin.flush()
        first = worker.stdout.readline().rstrip("\n").split("\t")
        if first[0] != "read":
            worker.kill()
            failed.append(f"round {round_}: {worker.communicate()[1][-500:]}")
            continue
        read_back += int(first[1])
        checked += int(first[2])
        waits.append(float(first[3]))
        if round_ == kills:  # (the last worker only reads back)
            worker.kill()
            worker.communicate()
            break
        for _ in range(pick.randint(0, 12)):
            line = worker.stdout.readline().rstrip("\n")
            if not line.startswith("ack\t"):
                break
            acknowledged.append(line.split("\t", 1)[1])
        worker.send_signal(signal.SIGKILL)  # mid-turn: it holds the lease and may be storing the next output
        worker.communicate()
    middle = sorted(waits)[len(waits) // 2] if waits else None
    return {
        "kills": kills,
        "lease_seconds": lease,
        "acknowledged": len(acknowledged),
        "readings": checked,  # (each worker reads back every output acknowledged before it)
        "read_back_exactly": read_back,
        "lost": checked - read_back,
        "takeover_wait_seconds": {"median": middle, "max": max(waits) if waits else None},
        "failed": failed,
    }


if __name__ == "__main__":
    raise SystemExit(main())

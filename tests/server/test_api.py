"""The HTTP API through an HTTP client, on SQLite and PostgreSQL, and the real command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from tests.memory.conftest import FakeClock
from toolctx.errors import ConfigError
from toolctx.memory import MemoryStore
from toolctx.server import create_app

BASE = "/api/agents/worker/context"
LOCAL = "http://localhost"  # the server answers to loopback names only, unless told otherwise


@pytest.fixture
def client(store: MemoryStore) -> Iterator[TestClient]:
    with TestClient(create_app(store), base_url=LOCAL) as test_client:
        yield test_client


def save(client: TestClient, item_type: str, content: str, **extra: object) -> dict[str, object]:
    response = client.post(f"{BASE}/save", json={"item_type": item_type, "content": content, **extra})
    assert response.status_code == 201, response.text
    body: dict[str, object] = response.json()
    return body


def test_the_seed_endpoints(client: TestClient) -> None:
    task = save(client, "TASK", "Add retries to the uploader")
    assert task["tier"] == "HOT"
    assert isinstance(task["item_id"], int)
    save(client, "ERROR", "TimeoutError after 31 s")
    save(client, "TEST_RESULT", "an old run", importance_score=0.1)

    hot = client.get(BASE, params={"tier": "HOT"}).json()["items"]
    assert [(i["id"], i["item_type"], i["content"], i["importance_score"], i["tier"]) for i in hot] == [
        (task["item_id"], "TASK", "Add retries to the uploader", 1.0, "HOT")
    ]
    assert hot[0]["access_count"] == 0  # looking is not an access
    assert len(client.get(BASE).json()["items"]) == 3

    stats = client.get(f"{BASE}/stats").json()
    assert (stats["total_items"], stats["hot_count"], stats["warm_count"], stats["cold_count"]) == (3, 1, 1, 1)
    assert stats["total_tokens"] == stats["hot_tokens"] + stats["warm_tokens"] + stats["cold_tokens"] > 0

    flash = client.post(f"{BASE}/flash-save", json={}).json()
    assert (flash["items_archived"], flash["hot_items_retained"], flash["items_checkpointed"]) == (1, 1, 2)
    assert flash["tokens_before"] > flash["tokens_after"] > 0
    assert [c["id"] for c in client.get(f"{BASE}/checkpoints").json()] == [flash["checkpoint_id"]]
    working = client.get(f"{BASE}/working-set").json()["items"]
    assert [item["id"] for item in working] == [task["item_id"]]


def test_load_update_tiers_diff_and_restore(client: TestClient, clock: FakeClock) -> None:
    task = save(client, "TASK", "ship it")
    code = save(client, "CODE", "def ship(): ...")
    loaded = client.post(f"{BASE}/load", json={"tier": "HOT", "limit": 5}).json()["items"]
    assert {item["access_count"] for item in loaded} == {1}
    snapshot = client.get(f"{BASE}/snapshot").json()
    assert set(snapshot["items"]) == {str(task["item_id"]), str(code["item_id"])}
    checkpoint = client.post(f"{BASE}/flash-save").json()["checkpoint_id"]

    clock.advance(hours=24 * 7)  # left alone for a week, CODE drops below 0.8; the current TASK stays HOT
    moved = client.post(f"{BASE}/update-tiers").json()
    assert moved["demoted"] == 1
    assert moved["hot_count"] == 1
    new = save(client, "PRD_SECTION", "the spec")
    diff = client.post(f"{BASE}/diff", json={"snapshot": {"tier": "HOT", "items": snapshot["items"]}}).json()
    assert [item["id"] for item in diff["added"]] == [new["item_id"]]
    assert diff["removed"] == [code["item_id"]]
    assert diff["unchanged"] == 1
    by_checkpoint = client.post(f"{BASE}/diff", json={"checkpoint_id": checkpoint}).json()
    assert [item["id"] for item in by_checkpoint["added"]] == [new["item_id"]]

    restored = client.post(f"{BASE}/restore", json={"checkpoint_id": checkpoint}).json()
    assert sorted(item["id"] for item in restored["items"]) == sorted([task["item_id"], code["item_id"]])


def test_bad_input_gets_422_or_404_with_a_clear_message(client: TestClient) -> None:
    save(client, "TASK", "exists")
    cases = [
        (client.post(f"{BASE}/save", json={"item_type": "NOTE", "content": "x"}), 422, "unknown item_type 'NOTE'"),
        (client.post(f"{BASE}/save", json={"item_type": "TASK", "content": "x", "importance_score": 1.5}), 422,
         "less than or equal to 1"),
        (client.post(f"{BASE}/save", json={"item_type": "TASK", "content": ""}), 422, "at least 1 character"),
        (client.post(f"{BASE}/save", json={"item_type": "TASK", "content": "   "}), 422, "content is empty"),
        (client.post(f"{BASE}/save", content=b"{not json", headers={"content-type": "application/json"}), 422,
         "JSON decode error"),
        (client.post(f"{BASE}/save", json={"item_type": "TASK"}), 422, "Field required"),
        (client.get(BASE, params={"tier": "LUKEWARM"}), 422, "'HOT', 'WARM' or 'COLD'"),
        (client.post(f"{BASE}/diff", json={}), 422, "exactly one of"),
        (client.post(f"{BASE}/restore", json={"checkpoint_id": 41}), 404, "no checkpoint 41"),
        (client.post(f"{BASE}/restore", json={"checkpoint_id": 2**63}), 422, "less than or equal to 92233720"),
        (client.get("/api/agents/ghost/context/stats"), 404, "no agent 'ghost'"),
        (client.post("/api/agents/ghost/context/flash-save"), 404, "no agent 'ghost'"),
    ]  # fmt: skip
    for response, code, message in cases:
        assert response.status_code == code, (response.request.url, response.text)
        assert message in response.text, response.text


def test_a_bearer_token_guards_every_endpoint(store: MemoryStore) -> None:
    with TestClient(create_app(store, token="s3cret"), base_url=LOCAL) as guarded:
        assert guarded.get(f"{BASE}/stats").status_code == 401
        wrong = guarded.get(f"{BASE}/stats", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"] == "Bearer"
        ok = guarded.post(
            f"{BASE}/save", json={"item_type": "TASK", "content": "x"}, headers={"Authorization": "Bearer s3cret"}
        )
        assert ok.status_code == 201


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serving(db: str, token: str, *args: str) -> Iterator[str]:
    """``python -m toolctx.server`` on a free loopback port, with $TOOLCTX_API_TOKEN; its URL once it answers."""
    port = _free_port()
    env = {**os.environ, "TOOLCTX_API_TOKEN": token}
    command = [sys.executable, "-m", "toolctx.server", "--db", db, "--port", str(port), *args]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}".encode()}
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/openapi.json", headers=headers, timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_the_server_command_serves_a_database_on_loopback(tmp_path: Path) -> None:
    headers = {"Authorization": "Bearer t0ken"}
    with _serving(f"sqlite:///{tmp_path / 'm.db'}", "t0ken") as url:
        spec = httpx.get(f"{url}/openapi.json", headers=headers).json()
        assert "/api/agents/{agent_id}/context/flash-save" in spec["paths"]
        saved = httpx.post(f"{url}{BASE}/save", json={"item_type": "TASK", "content": "hi"}, headers=headers)
        assert saved.status_code == 201
        assert httpx.get(f"{url}{BASE}/stats", headers=headers).json()["total_items"] == 1
        assert httpx.get(f"{url}{BASE}/stats").status_code == 401
        assert httpx.get(f"{url}/docs").status_code == 401
        assert httpx.get(f"{url}/docs", headers=headers).status_code == 200


def _raw_request(url: str, request: bytes) -> bytes:
    """Send ``request`` as is and read the answer until the server closes the connection."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_the_server_command_on_in_memory_sqlite_under_concurrent_clients() -> None:
    token = "jeton-à-clé-🔑"
    headers = {"Authorization": f"Bearer {token}".encode()}
    with _serving("sqlite://", token) as url:

        def save(n: int) -> list[int]:
            with httpx.Client(base_url=url, headers=headers) as client:
                return [
                    client.post(f"{BASE}/save", json={"item_type": "TASK", "content": f"{n}.{i}"}).json()["item_id"]
                    for i in range(10)
                ]

        with ThreadPoolExecutor(8) as pool:
            ids = [item_id for batch in pool.map(save, range(8)) for item_id in batch]
        assert len(ids) == len(set(ids)) == 80  # every save answered 201, with an id of its own
        assert httpx.get(f"{url}{BASE}/stats", headers=headers).json()["total_items"] == 80
        # 400 MB announced, none sent: the answer comes from the headers alone, and the connection closes.
        huge = f"POST {BASE}/save HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        answer = _raw_request(url, f"{huge}Content-Length: {400 * 2**20}\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 401")
        answer = _raw_request(
            url, f"{huge}Authorization: Bearer {token}\r\nContent-Length: {400 * 2**20}\r\n\r\n".encode()
        )
        assert answer.startswith(b"HTTP/1.1 413")
        rebound = httpx.get(f"{url}{BASE}/stats", headers={**headers, "Host": "evil.example"})
        assert rebound.status_code == 400


def test_the_server_command_refuses_an_open_address_without_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLCTX_API_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "toolctx.server", "--db", f"sqlite:///{tmp_path / 'm.db'}", "--host", "0.0.0.0"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "refusing to serve '0.0.0.0' without a token" in done.stderr
    bad_db = subprocess.run(
        [sys.executable, "-m", "toolctx.server", "--db", "mysql://x@y/z"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad_db.returncode == 2
    assert "SQLite or PostgreSQL" in bad_db.stderr


def test_the_command_line_checks_its_arguments(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.server.__main__ import main, parse_args

    monkeypatch.delenv("TOOLCTX_API_TOKEN", raising=False)
    args = parse_args(["--db", "sqlite://", "--host", "::1", "--port", "9000"])
    assert (args.host, args.port, args.db) == ("::1", 9000, "sqlite://")
    assert parse_args(["--host", "0.0.0.0", "--token", "t"]).token == "t"
    for bad in (["--port", "0"], ["--host", "example.com"]):
        with pytest.raises(SystemExit) as exit_info:
            parse_args(bad)
        assert exit_info.value.code == 2
    assert main(["--db", "oracle://scott@db/x"]) == 2
    assert "SQLite or PostgreSQL, not 'oracle'" in capsys.readouterr().err


def test_the_command_line_sets_the_hosts_the_body_limit_and_the_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.server.__main__ import main, parse_args

    monkeypatch.delenv("TOOLCTX_API_TOKEN", raising=False)
    loopback = parse_args([])
    assert loopback.allowed_hosts == ["localhost", "127.0.0.1", "::1", "127.0.0.1"]
    assert (loopback.max_body_bytes, loopback.token) == (32 * 2**20, None)
    named = parse_args(["--host", "10.1.2.3", "--token", "t", "--allow-host", "memory.internal", "--allow-host", "m"])
    assert named.allowed_hosts == ["localhost", "127.0.0.1", "::1", "10.1.2.3", "memory.internal", "m"]
    # Every interface: any name reaches it, and the token (required there) is what keeps a web page out.
    assert parse_args(["--host", "0.0.0.0", "--token", "t"]).allowed_hosts == ["*"]
    assert parse_args(["--host", "::", "--token", "t", "--allow-host", "m"]).allowed_hosts[-1] == "m"
    assert parse_args(["--max-body-bytes", "1024"]).max_body_bytes == 1024
    monkeypatch.setenv("TOOLCTX_API_TOKEN", "")
    assert parse_args([]).token is None  # an empty variable is an unset one
    for bad, message in (
        (["--max-body-bytes", "0"], "--max-body-bytes must be a whole number of bytes"),
        (["--token", ""], "--token is empty"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            parse_args(bad)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    assert main(["--db", "sqlite://", "--token", " padded"]) == 2
    assert "token cannot be sent in an HTTP header" in capsys.readouterr().err
    assert main(["--db", "sqlite://", "--allow-host", "http://x"]) == 2
    assert "is not a host name" in capsys.readouterr().err


def test_a_database_that_stays_locked_answers_503(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.db") as store:
        store.agent("worker").save("TASK", "x")
        # Wait 50 ms for SQLite's write lock instead of a minute.
        event.listen(store.engine, "connect", lambda conn, _record: conn.execute("PRAGMA busy_timeout=50"))
        store.engine.dispose()
        with (
            TestClient(create_app(store), base_url=LOCAL) as client,
            MemoryStore(tmp_path / "m.db") as other,
            other.write(),  # holds the write lock
        ):
            busy = client.post(f"{BASE}/save", json={"item_type": "TASK", "content": "y"})
            assert client.get(f"{BASE}/stats").json()["total_items"] == 1  # reads still answer
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert "busy or unreachable; retry shortly" in busy.json()["detail"]


def test_serve_options_are_checked_and_a_bad_database_is_announced_not_raised() -> None:
    from toolctx.server import ServeOptions, serve

    options = ServeOptions.checked(db="sqlite://", host="::1", port=9000, token=None, allow_hosts=["m"])
    assert (options.host, options.port, options.hosts) == ("::1", 9000, ["localhost", "127.0.0.1", "::1", "::1", "m"])
    for host, port, token, db, message in (
        ("example.com", 8765, None, "sqlite://", "refusing to serve 'example.com' without a token"),
        ("127.0.0.1", 0, None, "sqlite://", "--port"),
        ("127.0.0.1", 8765, "", "sqlite://", "--token is empty"),
        ("127.0.0.1", 8765, None, " ", "--db is empty"),
    ):
        with pytest.raises(ConfigError, match=message):
            ServeOptions.checked(db=db, host=host, port=port, token=token, allow_hosts=[])
    said: list[str] = []
    bad_db = ServeOptions.checked(db="oracle://scott@db/x", host="127.0.0.1", port=8765, token=None, allow_hosts=[])
    assert serve(bad_db, announce=said.append) == 2
    assert len(said) == 1
    assert "SQLite or PostgreSQL, not 'oracle'" in said[0]

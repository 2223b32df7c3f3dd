"""What a request passes before the API sees it: Host, token, body size; and the docs page behind them."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.testclient import TestClient

from toolctx.errors import ConfigError
from toolctx.memory import AgentMemory, MemoryStore
from toolctx.server import create_app

BASE = "/api/agents/worker/context"
SAVE = {"item_type": "TASK", "content": "x"}


@pytest.fixture
def memory() -> Iterator[MemoryStore]:
    """An in-memory store, for what happens before any database is reached."""
    with MemoryStore("sqlite://") as store:
        yield store


def _asgi(app: FastAPI, headers: list[tuple[bytes, bytes]], chunks: Iterator[bytes] | None = None) -> dict[str, Any]:
    """POST a save straight through ASGI; ``chunks`` is the body as it arrives (None: reading it fails the test)."""
    read: list[int] = []

    async def receive() -> dict[str, Any]:
        if chunks is None:
            raise AssertionError("the body was read")
        chunk = next(chunks, None)
        read.append(len(chunk or b""))
        return {"type": "http.request", "body": chunk or b"", "more_body": chunk is not None}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"{BASE}/save",
        "raw_path": f"{BASE}/save".encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return {"status": start["status"], "headers": dict(start["headers"]), "body": body, "read": read}


def test_a_huge_body_is_refused_from_its_headers_without_reading_it(memory: MemoryStore) -> None:
    app = create_app(memory, token="s3cret")
    huge = [(b"host", b"localhost"), (b"content-length", str(400 * 2**20).encode())]
    unauthenticated = _asgi(app, huge)  # the 401 comes before the body: reading it would fail the test
    assert unauthenticated["status"] == 401
    assert unauthenticated["headers"][b"www-authenticate"] == b"Bearer"
    assert unauthenticated["headers"][b"connection"] == b"close"  # the unread body ends the connection
    too_big = _asgi(app, [*huge, (b"authorization", b"Bearer s3cret")])
    assert too_big["status"] == 413
    assert b"over the limit of 33,554,432 bytes" in too_big["body"]
    assert b"--max-body-bytes" in too_big["body"]
    nonsense = _asgi(app, [(b"host", b"localhost"), (b"authorization", b"Bearer s3cret"), (b"content-length", b"-1")])
    assert nonsense["status"] == 400
    assert b"Content-Length" in nonsense["body"]
    assert memory.agents() == []


def test_a_body_without_a_length_is_refused_once_it_passes_the_limit(memory: MemoryStore) -> None:
    app = create_app(memory, max_body_bytes=1000)
    endless = iter(lambda: b" " * 400, None)  # a body that never ends, sent in chunks
    refused = _asgi(app, [(b"host", b"localhost"), (b"transfer-encoding", b"chunked")], endless)
    assert refused["status"] == 413
    assert b"over the limit of 1,000 bytes" in refused["body"]
    assert sum(refused["read"]) == 1200  # read up to the chunk that passed the limit, and no further
    small = iter([b'{"item_type": "TASK", ', b'"content": "streamed"}'])
    assert _asgi(app, [(b"host", b"localhost"), (b"transfer-encoding", b"chunked")], small)["status"] == 201


def test_the_body_limit_is_configurable_and_checked(memory: MemoryStore) -> None:
    with TestClient(create_app(memory, max_body_bytes=100), base_url="http://localhost") as client:

        def body(size: int) -> bytes:
            frame = b'{"item_type": "TASK", "content": ""}'
            return frame[:-2] + b"y" * (size - len(frame)) + frame[-2:]

        json_type = {"content-type": "application/json"}
        assert client.post(f"{BASE}/save", content=body(100), headers=json_type).status_code == 201
        over = client.post(f"{BASE}/save", content=body(101), headers=json_type)
        assert over.status_code == 413
        assert "over the limit of 100 bytes" in over.json()["detail"]
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ConfigError, match="max_body_bytes must be a whole number of bytes"):
            create_app(memory, max_body_bytes=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("allowed", "host", "answered"),
    [
        (None, "localhost", True),
        (None, "localhost:8765", True),
        (None, "LOCALHOST.", True),
        (None, "127.0.0.1:8765", True),
        (None, "[::1]:8765", True),
        (None, "evil.example", False),  # a page that rebound its own name to 127.0.0.1
        (None, "evil.example:8765", False),
        (None, "127.0.0.1.evil.example", False),
        (None, "localhost:80:80", False),
        (None, "", False),
        (["memory.example"], "memory.example:8765", True),
        (["memory.example"], "localhost", False),
        ("memory.example", "memory.example", True),
        (["*"], "anything.example", True),
    ],
)
def test_only_requests_for_an_allowed_host_are_answered(
    memory: MemoryStore, allowed: list[str] | str | None, host: str, answered: bool
) -> None:
    app = create_app(memory) if allowed is None else create_app(memory, allowed_hosts=allowed)
    with TestClient(app) as client:
        response = client.post(f"{BASE}/save", json=SAVE, headers={"host": host})
    if answered:
        assert response.status_code == 201, response.text
    else:
        assert response.status_code == 400
        assert "does not answer to the host" in response.json()["detail"]
        assert "--allow-host" in response.json()["detail"]
        assert memory.agents() == []


def test_a_request_without_a_host_header_is_refused(memory: MemoryStore) -> None:
    refused = _asgi(create_app(memory), [(b"content-length", b"0")])
    assert refused["status"] == 400
    assert b"does not answer to the host ''" in refused["body"]


def test_allowed_hosts_are_checked(memory: MemoryStore) -> None:
    for bad in ([], [""], ["a b"], ["http://x"], [None]):
        with pytest.raises(ConfigError, match="allowed"):
            create_app(memory, allowed_hosts=bad)  # type: ignore[arg-type]


def test_a_non_ascii_token_works_when_sent_as_utf8(memory: MemoryStore) -> None:
    token = "sécret-ключ-🔑"
    with TestClient(create_app(memory, token=token), base_url="http://localhost") as client:
        right = {"Authorization": f"Bearer {token}".encode()}
        assert client.post(f"{BASE}/save", json=SAVE, headers=right).status_code == 201
        assert client.get(f"{BASE}/stats", headers={"Authorization": f"bearer {token}".encode()}).status_code == 200
        for wrong in (
            f"Bearer {token}".encode()[:-1],
            f"Bearer {token[:-1]}".encode(),
            b"Bearer s\xe9cret",
            f"Basic {token}".encode(),
            b"Bearer",
            b"",
        ):
            refused = client.get(f"{BASE}/stats", headers={"Authorization": wrong})
            assert refused.status_code == 401, wrong
            assert refused.headers["www-authenticate"] == "Bearer"


def test_tokens_no_header_can_carry_are_refused_up_front(memory: MemoryStore) -> None:
    for bad in ("", " padded", "padded ", "two\nlines", "nul\x00", "half a pair \ud800"):
        with pytest.raises(ConfigError, match="token"):
            create_app(memory, token=bad)


def test_docs_need_the_token_and_load_nothing_from_elsewhere(memory: MemoryStore) -> None:
    with TestClient(create_app(memory, token="s3cret"), base_url="http://localhost") as client:
        for path in ("/docs", "/openapi.json"):
            assert client.get(path).status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        docs = client.get("/docs", headers=auth)
        assert docs.status_code == 200
        assert docs.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in docs.headers["content-security-policy"]
        page = docs.text
        assert re.search(r"https?:|//[a-z]", page, re.IGNORECASE) is None  # no external asset, link or script
        assert "<script" not in page
        for path in client.get("/openapi.json", headers=auth).json()["paths"]:
            assert path in page
        assert "Authorization: Bearer &lt;token&gt;" in page
        assert client.get("/redoc", headers=auth).status_code == 404


def test_a_refused_save_registers_no_agent(store: MemoryStore) -> None:
    with TestClient(create_app(store), base_url="http://localhost") as client:
        for body in (
            {"item_type": "NOTE", "content": "unknown type"},
            {"item_type": "TASK", "content": "   "},
            {"item_type": "TASK", "content": "a\x00b"},
            {"item_type": "TASK", "content": "x", "importance_score": 2},
        ):
            assert client.post("/api/agents/newcomer/context/save", json=body).status_code == 422
        assert client.get("/api/agents/newcomer/context/stats").status_code == 404
        assert store.agents() == []
        assert client.post("/api/agents/newcomer/context/save", json=SAVE).status_code == 201
        assert store.agent_ids() == ["newcomer"]


def test_reads_answer_while_another_connection_holds_a_write_transaction(db_url: str) -> None:
    with MemoryStore(db_url) as store, MemoryStore(db_url) as other:
        kept = store.agent("worker").save("TASK", "committed")
        with TestClient(create_app(store), base_url="http://localhost") as client:
            with AgentMemory(other, "worker")._write():  # SQLite's write lock, or the agent's row lock

                def read() -> list[Any]:
                    return [client.get(path).json() for path in (BASE, f"{BASE}/stats", f"{BASE}/snapshot")]

                with ThreadPoolExecutor(1) as pool:
                    # A generous guard so a regression fails instead of hanging; no timing is asserted.
                    listed, stats, snapshot = pool.submit(read).result(timeout=50)
            assert [item["id"] for item in listed["items"]] == [kept.id]
            assert stats["total_items"] == 1
            assert list(snapshot["items"]) == [str(kept.id)]


def test_a_websocket_is_held_to_the_same_host_and_token(memory: MemoryStore) -> None:
    app = create_app(memory, token="s3cret")

    @app.websocket("/ws")
    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_text("in")
        await socket.close()

    with TestClient(app, base_url="http://localhost") as client:
        with client.websocket_connect("ws://localhost/ws", headers={"Authorization": "Bearer s3cret"}) as socket:
            assert socket.receive_text() == "in"
        for headers in ({}, {"Authorization": "Bearer s3cret", "Host": "evil.example"}):
            with (
                pytest.raises(WebSocketDisconnect) as closed,
                client.websocket_connect("ws://localhost/ws", headers=headers),
            ):
                pass
            assert closed.value.code == 1008

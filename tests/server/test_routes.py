"""One field naming across routes, DELETE routes, the health route, and item types from the command line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from toolctx.errors import ConfigError
from toolctx.memory import ContextItem, MemoryStore
from toolctx.server import ServeOptions, create_app

BASE = "/api/agents/worker/context"
LOCAL = "http://localhost"
AUTH = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def client(store: MemoryStore) -> Iterator[TestClient]:
    with TestClient(create_app(store), base_url=LOCAL) as test_client:
        yield test_client


def save(client: TestClient, item_type: str, content: str, **extra: object) -> int:
    response = client.post(f"{BASE}/save", json={"item_type": item_type, "content": content, **extra})
    assert response.status_code == 201, response.text
    item_id: int = response.json()["item_id"]
    return item_id


# -- one naming --------------------------------------------------------------------------------------------


def test_items_carry_the_python_api_s_field_names_on_every_route(client: TestClient) -> None:
    task = save(client, "TASK", "ship it", importance_score=0.95)
    save(client, "ERROR", "it broke")
    python_fields = set(ContextItem.model_fields)
    listed = client.get(BASE).json()["items"]
    loaded = client.post(f"{BASE}/load", json={"tier": "HOT"}).json()["items"]
    working = client.get(f"{BASE}/working-set").json()["items"]
    for items in (listed, loaded, working):
        assert items
        for item in items:
            assert set(item) == python_fields
    [first] = loaded
    assert (first["id"], first["item_type"], first["importance_score"], first["agent_id"]) == (
        task,
        "TASK",
        0.95,
        "worker",
    )
    # The OpenAPI description says so too: the request's names are the response's.
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"item_type", "importance_score"} <= set(schemas["ContextItem"]["properties"])
    assert {"item_type", "importance_score"} <= set(schemas["SaveRequest"]["properties"])
    assert not {"type", "score"} & set(schemas["ContextItem"]["properties"])


# -- DELETE ------------------------------------------------------------------------------------------------


def test_deleting_an_item_removes_it_and_a_diff_reports_it(client: TestClient) -> None:
    keep = save(client, "TASK", "keep me")
    drop = save(client, "CODE", "drop me")
    snapshot = client.get(f"{BASE}/snapshot").json()
    gone = client.delete(f"{BASE}/items/{drop}")
    assert gone.status_code == 200
    assert gone.json() == {"agent_id": "worker", "item_ids": [drop]}
    assert [item["id"] for item in client.get(BASE).json()["items"]] == [keep]
    since = {"tier": "HOT", "items": snapshot["items"], "revision": snapshot["revision"]}
    diff = client.post(f"{BASE}/diff", json={"snapshot": since}).json()
    assert diff["removed"] == [drop]
    again = client.delete(f"{BASE}/items/{drop}")
    assert again.status_code == 404
    assert str(drop) in again.json()["detail"]
    assert client.delete(f"/api/agents/nobody/context/items/{keep}").status_code == 404
    assert client.delete(f"{BASE}/items/0").status_code == 422


def test_deleting_an_agent_s_items_takes_archived_ones_and_leaves_the_agent(client: TestClient) -> None:
    ids = [save(client, "TASK", "task"), save(client, "CODE", "code")]
    ids.append(save(client, "TEST_RESULT", "an old run", importance_score=0.05))
    client.post(f"{BASE}/load", json={"tier": "COLD"})
    assert client.post(f"{BASE}/flash-save").json()["items_archived"] == 1
    gone = client.delete(BASE)
    assert gone.status_code == 200
    assert sorted(gone.json()["item_ids"]) == sorted(ids)
    stats = client.get(f"{BASE}/stats").json()
    assert (stats["total_items"], stats["archived_count"], stats["checkpoints"]) == (0, 0, 1)
    assert client.delete(BASE).json()["item_ids"] == []  # nothing left: nothing to delete
    assert client.delete("/api/agents/nobody/context").status_code == 404


def test_delete_routes_need_the_token_as_the_other_writes_do(store: MemoryStore) -> None:
    store.agent("worker").save("TASK", "guarded")
    [item] = store.agent("worker").items()
    with TestClient(create_app(store, token="s3cret"), base_url=LOCAL) as guarded:
        assert guarded.delete(f"{BASE}/items/{item.id}").status_code == 401
        assert guarded.delete(BASE).status_code == 401
        signed_in = guarded.get("/?token=s3cret", follow_redirects=False)
        assert signed_in.status_code == 303
        # A browser signed in by the cookie may delete only from the server's own page.
        assert guarded.delete(BASE, headers={"Origin": "http://evil.example"}).status_code == 403
        assert store.agent("worker").stats().total_items == 1
        guarded.cookies.clear()
        assert guarded.delete(f"{BASE}/items/{item.id}", headers=AUTH).json()["item_ids"] == [item.id]


# -- health ------------------------------------------------------------------------------------------------


def test_health_answers_without_a_token_and_to_any_host(store: MemoryStore) -> None:
    with TestClient(create_app(store, token="s3cret"), base_url="http://10.1.2.3:8765") as probe:
        answer = probe.get("/health")
        assert answer.status_code == 200
        assert answer.json() == {"status": "ok", "database": "reachable", "detail": None}
        assert probe.get(BASE).status_code == 400  # everything else still checks the Host
    with TestClient(create_app(store, token="s3cret"), base_url=LOCAL) as client:
        assert client.get("/health").status_code == 200
        assert client.post("/health").status_code == 401  # only reading it is open
        spec = client.get("/openapi.json", headers=AUTH).json()
        assert "security" not in spec["paths"]["/health"]["get"]
        assert spec["paths"][BASE.replace("worker", "{agent_id}")]["delete"]["security"] == [{"HTTPBearer": []}]


def test_health_answers_503_while_the_database_does_not_answer(store: MemoryStore) -> None:
    def stuck() -> int:
        time.sleep(2)
        return 0

    app = create_app(store, health_timeout=0.1)
    with TestClient(app, base_url=LOCAL) as client:
        store.revision = stuck  # type: ignore[method-assign]
        answer = client.get("/health")
    assert answer.status_code == 503
    assert answer.json()["status"] == "unavailable"
    assert "no answer in time" in answer.json()["detail"]


def test_health_follows_a_postgresql_server_going_down_and_coming_back() -> None:
    from tests.postgres_server import PostgresServer, find_bindir

    if find_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; `make test` installs it")
        pytest.skip("PostgreSQL is not installed")
    server = PostgresServer().start()
    try:
        with MemoryStore(server.url) as store, TestClient(create_app(store), base_url=LOCAL) as client:
            assert client.get("/health").status_code == 200
            server.pause()
            down = client.get("/health")
            assert down.status_code == 503
            assert down.json()["database"] == "unreachable"
            assert down.headers["content-type"] == "application/json"
            server.restart()
            assert client.get("/health").status_code == 200
    finally:
        server.stop()


def test_create_app_refuses_a_bad_health_timeout(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="health_timeout"):
        create_app(store, health_timeout=0)


# -- item types from the command line ----------------------------------------------------------------------


def options(*item_types: str) -> ServeOptions:
    return ServeOptions.checked(
        db="sqlite://", host="127.0.0.1", port=8765, token=None, allow_hosts=[], item_types=item_types
    )


def test_item_types_are_added_to_the_built_in_ones_or_change_their_weight() -> None:
    weights = dict(options("NOTE:0.5", "TASK:0.95").item_types)
    assert weights["NOTE"] == 0.5
    assert weights["TASK"] == 0.95
    assert weights["CODE"] == 0.85  # the built-in types stay
    assert dict(options().item_types)["TASK"] == 1.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("NOTE", "is not NAME:WEIGHT; write it as NOTE:0.5"),
        ("NOTE:heavy", "is not a number"),
        ("NOTE:1.5", r"must be a number in \[0, 1\]"),
        ("NOTE:nan", r"must be a number in \[0, 1\]"),
        (":0.5", "the name in --item-type must be a non-empty string"),
        ("X" * 65 + ":0.5", "of up to 64 characters"),
        ("NOTE:0.5:3600", "no time to live"),
    ],
)
def test_a_bad_item_type_is_refused_by_name(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        options(spec)


def test_the_python_m_entry_point_takes_item_types(capsys: pytest.CaptureFixture[str]) -> None:
    from toolctx.server.__main__ import parse_args

    assert parse_args(["--item-type", "NOTE:0.4"]).type_weights["NOTE"] == 0.4
    with pytest.raises(SystemExit):
        parse_args(["--item-type", "NOTE"])
    assert "write it as NOTE:0.5" in capsys.readouterr().err


def test_toolctx_serve_refuses_a_bad_item_type_before_serving() -> None:
    from toolctx.cli._app import app

    result = CliRunner().invoke(app, ["serve", "--item-type", "NOTE:2"], env={"COLUMNS": "200"})
    assert result.exit_code != 0
    assert "must be a number in [0, 1]" in result.stderr


def test_toolctx_serve_stores_items_of_a_type_given_on_the_command_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "toolctx.cli", "serve", "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    command += ["--port", str(port), "--item-type", "NOTE:0.5", "--item-type", "DECISION:0.9"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, "toolctx serve exited"
            assert time.monotonic() < deadline, "toolctx serve did not answer"
            time.sleep(0.2)
        note = httpx.post(f"{url}{BASE}/save", json={"item_type": "NOTE", "content": "a note"}).json()
        decision = httpx.post(f"{url}{BASE}/save", json={"item_type": "DECISION", "content": "use SQLite"}).json()
        assert (note["importance_score"], note["tier"]) == (0.5, "WARM")
        assert (decision["importance_score"], decision["tier"]) == (0.9, "HOT")
        unknown = httpx.post(f"{url}{BASE}/save", json={"item_type": "MEMO", "content": "x"})
        assert unknown.status_code == 422
        assert "NOTE" in unknown.json()["detail"]  # the known types are named
    finally:
        server.terminate()
        server.communicate(timeout=30)

"""The dashboard's routes: its page and assets, agents, kept sessions, sign-in, and the live feed."""

from __future__ import annotations

import re
import socket
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.server.live import save_in_another_process, serving
from toolctx import session
from toolctx.memory import MemoryStore
from toolctx.server import create_app


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def memory(sqlite_url: str) -> Iterator[MemoryStore]:
    with MemoryStore(sqlite_url) as store:
        yield store


@pytest.fixture
def kept(context_dir: Path) -> str:
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context("search", {"query": "retry"}, ["uploader.py"])
    return "kept-1"


def test_the_page_and_its_assets_load_nothing_from_elsewhere(memory: MemoryStore) -> None:
    with TestClient(create_app(memory), base_url="http://localhost") as client:
        page = client.get("/")
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "connect-src 'self'" in policy
        texts = [page.text]
        for name in ("dashboard.js", "dashboard.css", "icon.svg"):
            asset = client.get(f"/static/{name}")
            assert asset.status_code == 200, name
            texts.append(asset.text)
        for text in texts:  # only the SVG namespace names another host
            assert re.findall(r"https?://(?!www\.w3\.org/2000/svg)", text) == []
        for component in ("ContextPanel", "ContextTierChart", "ContextItemList"):
            assert f"class {component}" in texts[1]
        missing = client.get("/static/app.py")
        assert missing.status_code == 404
        assert "no asset 'app.py'" in missing.json()["detail"]
        assert client.get("/static/..%2F_app.py").status_code == 404


def test_agents_lists_counts_and_tokens_per_tier(memory: MemoryStore) -> None:
    worker = memory.agent("worker")
    worker.save("TASK", "Add retries to the uploader")
    worker.save("TEST_RESULT", "1 failed", importance_score=0.1)
    worker.flash_save()  # archives the COLD test result
    memory.agent("planner").save("PRD_SECTION", "Uploads resume after a network error")
    with TestClient(create_app(memory), base_url="http://localhost") as client:
        answer = client.get("/api/agents").json()
    assert answer["revision"] == memory.revision()
    by_id = {a["agent_id"]: a for a in answer["agents"]}
    assert sorted(by_id) == ["planner", "worker"]
    stats = worker.stats()
    assert by_id["worker"]["hot_count"] == stats.hot_count
    assert by_id["worker"]["hot_tokens"] == stats.hot_tokens
    assert by_id["worker"]["archived_count"] == 1


def test_kept_sessions_are_listed_and_read(memory: MemoryStore, context_dir: Path, kept: str) -> None:
    with TestClient(create_app(memory, context_dir=context_dir), base_url="http://localhost") as client:
        [listed] = client.get("/api/sessions").json()
        assert (listed["session_id"], listed["state"], listed["contexts"]) == (kept, "kept", 1)
        [pointer] = client.get(f"/api/sessions/{kept}/contexts").json()
        assert pointer["tool_name"] == "search"
        context = client.get(f"/api/sessions/{kept}/contexts/{pointer['id']}").json()
        assert context["result"] == ["uploader.py"]
        unknown = client.get("/api/sessions/nope/contexts")
        assert unknown.status_code == 404
        assert "no toolctx session 'nope'" in unknown.json()["detail"]
        bad = client.get(f"/api/sessions/{kept}/contexts/zz")
        assert bad.status_code == 422
        assert "'zz'" in bad.json()["detail"]
        gone = client.get(f"/api/sessions/{kept}/contexts/abcdef00")
        assert gone.status_code == 404
        assert client.get("/api/sessions/..%2F..%2Fetc/contexts").status_code in (404, 422)


def test_a_browser_signs_in_once_and_its_cookie_cannot_act_from_another_site(memory: MemoryStore) -> None:
    app = create_app(memory, token="s3cret")
    with TestClient(app, base_url="http://localhost", follow_redirects=False) as client:
        assert client.get("/").status_code == 401
        assert client.get("/?token=wrong").status_code == 401
        signed = client.get("/?token=s3cret")
        assert signed.status_code == 303
        assert signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert "s3cret" not in cookie
        assert client.get("/").status_code == 200  # the client kept the cookie
        assert client.get("/api/agents").status_code == 200
        save = {"item_type": "TASK", "content": "x"}
        foreign = client.post("/api/agents/w/context/save", json=save, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert "evil.example" in foreign.json()["detail"]
        unsigned = client.post("/api/agents/w/context/save", json=save)
        assert unsigned.status_code == 403
        assert memory.agent_ids() == []  # refused requests leave no trace
        own = client.post("/api/agents/w/context/save", json=save, headers={"origin": "http://localhost"})
        assert own.status_code == 201


def _next(socket: Any) -> dict[str, Any]:
    message: dict[str, Any] = orjson.loads(socket.recv(timeout=10))
    return message


def test_the_live_feed_tells_of_writes_here_and_in_other_processes(memory: MemoryStore, sqlite_url: str) -> None:
    with (
        serving(create_app(memory, poll_interval=0.05)) as base,
        connect(base.replace("http", "ws") + "/api/events") as ws,
    ):
        hello = _next(ws)
        assert hello == {"event": "hello", "agent_id": None, "revision": memory.revision()}
        memory.agent("here").save("TASK", "in process")
        # Registering the agent is told first; the poller may report either revision as "changed" too.
        before: list[tuple[str, str | None]] = []
        while (event := _next(ws))["event"] != "saved":
            before.append((event["event"], event["agent_id"]))
        assert event["agent_id"] == "here"
        assert ("registered", "here") in before
        assert set(before) <= {("registered", "here"), ("changed", None)}
        save_in_another_process(sqlite_url, "there", "CODE", "from elsewhere")
        final = memory.revision()  # registering "there" and saving its item: two writes, seen together or apart
        while (event := _next(ws))["revision"] != final:
            assert event["event"] == "changed"
        assert event["event"] == "changed"


def test_the_live_feed_hears_postgresql_notifications(postgres_url: str) -> None:
    from tests.memory.conftest import _emptied

    url = _emptied(postgres_url)
    with (
        MemoryStore(url) as store,
        serving(create_app(store)) as base,
        connect(base.replace("http", "ws") + "/api/events") as ws,
    ):
        assert _next(ws)["event"] == "hello"
        save_in_another_process(url, "remote-agent", "TASK", "from elsewhere")
        event = _next(ws)
        assert event == {"event": "changed", "agent_id": "remote-agent", "revision": None}


def test_the_live_feed_checks_token_host_and_origin(memory: MemoryStore) -> None:
    with serving(create_app(memory, token="s3cret")) as base:
        url = base.replace("http", "ws") + "/api/events"
        bearer = {"Authorization": "Bearer s3cret"}
        refusals = [
            {},  # no token
            {"Authorization": "Bearer wrong"},
            {**bearer, "Origin": "http://evil.example"},
        ]
        for headers in refusals:
            with pytest.raises(InvalidStatus) as refused:
                connect(url, additional_headers=headers, origin=None).close()
            assert refused.value.response.status_code == 403, headers
        # A page on a rebound name reaches this server under that name: refused by its Host.
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as rebound, pytest.raises(InvalidStatus) as refused:
            connect(f"ws://evil.example:{port}/api/events", sock=rebound, additional_headers=bearer).close()
        assert refused.value.response.status_code == 403
        with connect(url, additional_headers=bearer, origin=None) as ws:
            assert _next(ws)["event"] == "hello"
        own_origin = base  # a page of this very server
        with connect(url, additional_headers={**bearer, "Origin": own_origin}, origin=None) as ws:
            assert _next(ws)["event"] == "hello"


def test_a_stored_context_is_read_in_bounded_parts(memory: MemoryStore, context_dir: Path, kept: str) -> None:
    with TestClient(create_app(memory, context_dir=context_dir), base_url="http://localhost") as client:
        [pointer] = client.get(f"/api/sessions/{kept}/contexts").json()
        base = f"/api/sessions/{kept}/contexts/{pointer['id']}"
        whole = client.get(f"{base}/excerpt").json()
        assert (whole["offset"], whole["next_offset"]) == (0, None)
        assert orjson.loads(whole["text"])["result"] == ["uploader.py"]  # a small context comes whole
        first = client.get(f"{base}/excerpt", params={"length": 10}).json()
        second = client.get(f"{base}/excerpt", params={"offset": first["next_offset"], "length": 10}).json()
        assert (first["end"], second["offset"], second["end"]) == (10, 10, 20)
        assert first["text"] + second["text"] == whole["text"][:20]
        assert client.get(f"{base}/excerpt", params={"offset": -1}).status_code == 422
        assert client.get(f"{base}/excerpt", params={"length": 1 << 30}).status_code == 422
        assert client.get(f"/api/sessions/{kept}/contexts/abcdef00/excerpt").status_code == 404


def test_a_two_gigabyte_context_is_never_read_whole(memory: MemoryStore, context_dir: Path) -> None:
    with session(context_dir, session_id="big", keep=True, threshold=0) as s:
        s.save_context("dump", {"table": "events"}, "row " * 300_000)
    [stored] = [p for p in (context_dir / "big").iterdir() if p.name.startswith("dump_")]
    with stored.open("r+b") as handle:
        handle.truncate(2 << 30)  # sparse: made at once
    context_id = stored.stem.rpartition("_")[2]
    with TestClient(create_app(memory, context_dir=context_dir), base_url="http://localhost") as client:
        tracemalloc.start()
        try:
            part = client.get(f"/api/sessions/big/contexts/{context_id}/excerpt").json()
            refused = client.get(f"/api/sessions/big/contexts/{context_id}")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (part["offset"], part["end"], part["size"], part["next_offset"]) == (0, 1 << 20, 2 << 30, 1 << 20)
    assert part["text"].startswith('{"format"')
    assert refused.status_code == 422
    assert f"/api/sessions/big/contexts/{context_id}/excerpt?offset=0" in refused.json()["detail"]
    assert peak < 64 << 20  # a 2 GiB read would hold 2 GiB


def test_stored_text_comes_as_stored_and_the_page_sets_it_as_text_only(memory: MemoryStore, context_dir: Path) -> None:
    hostile = '<img src=x onerror="alert(1)">\x1b]0;pwned\x07\u202e'
    with session(context_dir, session_id="hostile", keep=True, threshold=0) as s:
        s.save_context("search", {"query": hostile}, [hostile])
    with TestClient(create_app(memory, context_dir=context_dir), base_url="http://localhost") as client:
        [pointer] = client.get("/api/sessions/hostile/contexts").json()
        assert pointer["args"] == {"query": hostile}  # the API carries the value exactly; the page escapes it
        script = client.get("/static/dashboard.js").text
    assert "innerHTML" not in script
    assert "insertAdjacentHTML" not in script
    assert "document.write" not in script

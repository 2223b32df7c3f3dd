"""Malformed requests get a 4xx naming what was wrong, never a 500: a table of known cases, then hypothesis."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx.memory import MemoryStore
from toolctx.server import create_app

BASE = "/api/agents/worker/context"
SAVE = f"{BASE}/save"
BIG = [2**63, 2**64, 10**30, -(2**63) - 1]


@pytest.fixture
def client(store: MemoryStore) -> Iterator[TestClient]:
    agent = store.agent("worker")
    agent.save_many([("TASK", "a task"), ("ERROR", "an error"), ("TEST_RESULT", "an old run", 0.1)])
    agent.flash_save()
    app = create_app(store)
    with TestClient(app, base_url="http://localhost", raise_server_exceptions=False) as test_client:
        yield test_client


def _raw(client: TestClient, method: str, path: str, body: bytes | None = None) -> Any:
    headers = {"content-type": "application/json"} if body is not None else {}
    return client.request(method, path, content=body, headers=headers)


KNOWN_CASES = [
    # (method, path, raw JSON body, a name the answer must give)
    *[
        (
            "POST",
            f"{BASE}/save",
            b'{"item_type": "TASK", "content": "x", "importance_score": %s}' % v,
            b"importance_score",
        )
        for v in (b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999")
    ],
    ("POST", f"{BASE}/save", b'{"item_type": "TASK", "content": "a\\ud800b"}', b"content"),
    ("POST", f"{BASE}/save", b'{"item_type": "\\udfff", "content": "ab"}', b"item_type"),
    ("POST", f"{BASE}/save", b'{"\\ud800": 1, "item_type": "TASK", "content": "x"}', b"\\\\ud800"),
    ("POST", f"{BASE}/save", b'{"item_type": "TASK", "content": "a\\u0000b"}', b"NUL"),
    *[("POST", f"{BASE}/restore", b'{"checkpoint_id": %d}' % v, b"checkpoint_id") for v in BIG],
    *[("POST", f"{BASE}/diff", b'{"checkpoint_id": %d}' % v, b"checkpoint_id") for v in BIG],
    *[("POST", f"{BASE}/load", b'{"limit": %d}' % v, b"limit") for v in BIG],
    *[("GET", f"{BASE}?limit={v}", None, b"limit") for v in BIG],
    ("POST", f"{BASE}/diff", b'{"snapshot": {"items": {"9223372036854775808": "%s"}}}' % (b"0" * 32), b"items"),
    ("POST", f"{BASE}/diff", b'{"snapshot": {"items": {"1": "\\ud800"}}}', b"items"),
    ("POST", f"{BASE}/diff", b'{"snapshot": {"items": {}, "revision": -5}}', b"revision"),
    ("POST", f"{BASE}/diff", b'{"snapshot": {"items": {}, "revision": 1e999}}', b"revision"),
    ("POST", "/api/agents/nul%00/context/save", b'{"item_type": "TASK", "content": "x"}', b"agent_id"),
    ("GET", "/api/agents/%ED%A0%80/context/stats", None, b"no agent"),
    ("POST", f"{BASE}/save", b'{"item_type": "TASK", "content": "\xff"}', b"not JSON this server can read"),
    ("POST", f"{BASE}/save", b"[" * 100_000 + b"]" * 100_000, b"nested too deeply"),
    (
        "POST",
        f"{BASE}/save",
        b'{"item_type": "TASK", "content": 1' + b"0" * 5000 + b"}",
        b"not JSON this server can read",
    ),
    ("POST", f"{BASE}/save", b"{not json", b"JSON decode error"),
]


def test_each_malformed_value_gets_a_4xx_naming_it(client: TestClient) -> None:
    for method, path, body, named in KNOWN_CASES:
        response = _raw(client, method, path, body)
        case = (method, path, (body or b"")[:100])
        assert 400 <= response.status_code < 500, (case, response.text)
        assert named in response.content, (case, response.text)
        assert "detail" in response.json()


# What a client might send: JSON values of every kind, with the awkward ones common.
AWKWARD: list[Any] = [
    *(math.nan, math.inf, -math.inf, 1e308, -0.0, 1.5),
    *(2**63 - 1, 2**63, 2**64, -(2**63) - 1, -1, 0, True, None),
    *("", " ", "\x00", "\ud800", "a\udfffb", "x" * 300, "HOT", "TASK", "0" * 32),
    *([], {}, [1], {"": None}),
]
awkward_numbers = st.one_of(st.sampled_from(AWKWARD[:14]), st.integers(), st.floats())
awkward_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)  # lone surrogates included
scalars = st.one_of(st.none(), st.booleans(), awkward_numbers, awkward_text)
values = st.one_of(
    st.sampled_from(AWKWARD),
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(awkward_text, inner, max_size=3),
        max_leaves=8,
    ),
)
FIELDS = ["item_type", "content", "importance_score", "tier", "limit", "checkpoint_id", "snapshot", "items", "revision"]
any_body = st.one_of(st.dictionaries(st.sampled_from(FIELDS) | awkward_text, values, max_size=4), values)
# Bodies close to what each endpoint takes, so the values reach its checks; and anything at all.
BODIES = {
    "save": st.fixed_dictionaries(
        {"item_type": st.sampled_from(["TASK", "CODE"]) | values, "content": values, "importance_score": values}
    ),
    "load": st.fixed_dictionaries({"tier": values, "limit": values}),
    "restore": st.fixed_dictionaries({"checkpoint_id": values}),
    "diff": st.one_of(
        st.fixed_dictionaries({"checkpoint_id": values}),
        st.fixed_dictionaries(
            {
                "snapshot": st.fixed_dictionaries(
                    {"items": st.dictionaries(st.sampled_from(["1", "0", str(2**63)]) | awkward_text, values)},
                    optional={"tier": values, "revision": values},
                )
            }
        ),
    ),
}
READS = ["", "stats", "snapshot", "working-set", "checkpoints"]
agent_ids = st.one_of(st.just("worker"), st.just("worker"), awkward_text.filter(lambda t: t not in ("", ".", "..")))
queries = st.dictionaries(
    st.sampled_from(["limit", "tier", "archived", "working_set"]), st.one_of(awkward_text, awkward_numbers), max_size=3
)


def _path(agent_id: str, action: str, query: dict[str, Any]) -> str:
    path = f"/api/agents/{quote(agent_id.encode('utf-8', 'surrogatepass'), safe='')}/context"
    path += f"/{action}" if action else ""
    if query:
        path += "?" + "&".join(f"{k}={quote(str(v).encode('utf-8', 'surrogatepass'))}" for k, v in query.items())
    return path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), agent_id=agent_ids, query=queries)
def test_no_malformed_request_gets_a_500(client: TestClient, data: st.DataObject, agent_id: str, query: Any) -> None:
    action = data.draw(st.sampled_from([*BODIES, *BODIES, "flash-save", "update-tiers", *READS]))
    if action in READS:
        method, content = "GET", None
    else:
        method = "POST"
        body = data.draw(st.one_of(BODIES.get(action, any_body), any_body))
        # json.dumps writes NaN and Infinity, and lone surrogates as \u escapes, as careless clients do;
        # now and then the body is not JSON at all.
        content = data.draw(st.just(json.dumps(body).encode()) | st.just(json.dumps(body).encode()) | st.binary())
    path = _path(agent_id, action, query if method == "GET" else {})
    response = _raw(client, method, path, content)
    assert response.status_code < 500, (method, path, (content or b"")[:200], response.text)
    if response.status_code >= 400:
        detail = response.json()["detail"]
        assert detail, response.text
        if isinstance(detail, list):  # a validation error names the field or body position it is about
            assert all(error["loc"] for error in detail), detail

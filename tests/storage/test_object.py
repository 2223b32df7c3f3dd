"""The object store: the blob-store suite over a real S3 endpoint (HTTP on loopback), a local folder and memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolctx.errors import ConfigError, StorageError
from toolctx.index import SessionIndex
from toolctx.storage import BlobStore, ObjectStore, display_url

from .test_conformance import BlobStoreSuite


class TestObjectStoreOnS3(BlobStoreSuite):
    @pytest.fixture
    def store(self, s3_server: Any, s3_env: dict[str, str]) -> Iterator[BlobStore]:
        store = ObjectStore(f"s3://{s3_server.bucket()}/sessions", "session-1")
        yield store
        store.close(remove=True)

    def test_blobs_of_two_sessions_are_apart(self, s3_server: Any, s3_env: dict[str, str]) -> None:
        bucket = s3_server.bucket()
        one, two = ObjectStore(f"s3://{bucket}/p", "one"), ObjectStore(f"s3://{bucket}/p", "two")
        one.put("a.json", [b"1"])
        assert two.list() == []
        with pytest.raises(FileNotFoundError):
            two.get("a.json")
        one.close(remove=True)
        assert ObjectStore(f"s3://{bucket}/p", "one").list() == []

    def test_workers_appending_at_once_all_land(self, s3_server: Any, s3_env: dict[str, str]) -> None:
        # Object storage has no append: each append writes the object back only if nobody changed it meanwhile.
        url = f"s3://{s3_server.bucket()}/p"
        stores = [ObjectStore(url, "shared") for _ in range(4)]

        def write(store: ObjectStore, n: int) -> None:
            for i in range(10):
                store.append("manifest.jsonl", f"{n}:{i}\n".encode())

        threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        lines = stores[0].get("manifest.jsonl").decode().splitlines()
        assert sorted(lines) == sorted(f"{n}:{i}" for n in range(4) for i in range(10))

    def test_an_unreachable_service_is_a_storage_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # (nothing listens on the discard port)
        monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
        store = ObjectStore("s3://nowhere/p", "s", client_options={"timeout": "2s", "connect_timeout": "1s"})
        store_retry = store  # (obstore retries; its error then comes out as a StorageError, an OSError)
        with pytest.raises(StorageError) as raised:
            store_retry.put("a.json", [b"1"])
        assert isinstance(raised.value, OSError)
        assert "a.json" in str(raised.value)

    def test_an_http_endpoint_not_allowed_says_what_to_set(
        self, s3_server: Any, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("AWS_ALLOW_HTTP")
        store = ObjectStore(f"s3://{s3_server.bucket()}/p", "s")
        with pytest.raises(StorageError) as raised:
            store.put("a.json", [b"1"])
        message = str(raised.value)
        assert "needs AWS_ALLOW_HTTP=true" in message, message
        assert "Debug source" not in message, message  # (the client's dump left out)
        assert len(message) < 1200, message


class TestObjectStoreInMemory(BlobStoreSuite):
    @pytest.fixture
    def store(self) -> Iterator[BlobStore]:
        store = ObjectStore("memory:///", "session-1")  # (one memory per URL in a process: emptied after)
        yield store
        store.close(remove=True)


@pytest.mark.parametrize("url", ["", "bucket/prefix", "/tmp/x", "ftp://host/x", 3])
def test_a_store_that_is_not_a_url_is_refused_by_name(url: Any) -> None:
    with pytest.raises(ConfigError, match="object store URL"):
        ObjectStore(url, "s")


def test_a_local_folder_is_given_as_a_directory() -> None:
    with pytest.raises(ConfigError, match="context_dir"):
        ObjectStore("file:///tmp/x", "s")


def test_a_session_id_that_could_escape_is_refused() -> None:
    with pytest.raises(ConfigError):
        ObjectStore("memory:///", "../other")


def test_a_store_url_is_shown_without_its_credentials_or_query() -> None:
    assert display_url("https://ada:Xk9vQ2rL@blobs.example.com/c/agents?sv=2024&sig=Zm9v") == (
        "https://blobs.example.com/c/agents"
    )
    assert display_url("s3://bucket/agents") == "s3://bucket/agents"
    store = ObjectStore("memory:///p", "session-1")
    assert store.display_location() == "memory:///p/session-1"
    store.close(remove=True)


def test_a_mistyped_index_url_is_refused_without_its_password() -> None:
    with pytest.raises(ConfigError, match="index must be a database URL") as raised:
        SessionIndex("mysql://app:Xk9vQ2rL@db/agents")
    assert "Xk9vQ2rL" not in str(raised.value)

"""One suite every BlobStore passes; subclass it per backend."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolctx.errors import ConfigError, StorageError
from toolctx.storage import BlobStore, DictStore, LocalStore


class BlobStoreSuite:
    @pytest.fixture
    def store(self) -> Iterator[BlobStore]:
        raise AssertionError("subclasses provide the store fixture")

    def test_put_get_round_trip_joins_chunks(self, store: BlobStore) -> None:
        store.put("a.json", [b'{"x":', b"1", b"}"])
        assert store.get("a.json") == b'{"x":1}'

    def test_put_replaces(self, store: BlobStore) -> None:
        store.put("a.json", [b"old"])
        store.put("a.json", [b"new"])
        assert store.get("a.json") == b"new"

    def test_get_missing_raises_file_not_found(self, store: BlobStore) -> None:
        with pytest.raises(FileNotFoundError):
            store.get("missing.json")

    def test_delete(self, store: BlobStore) -> None:
        store.put("a.json", [b"1"])
        assert store.delete("a.json") is True
        assert store.delete("a.json") is False
        assert "a.json" not in store.list()

    def test_list_names_blobs_only(self, store: BlobStore) -> None:
        assert store.list() == []
        store.put("a.json", [b"1"])
        store.put("b.json", [b""])
        assert sorted(store.list()) == ["a.json", "b.json"]

    def test_head_reads_the_start_of_a_blob(self, store: BlobStore) -> None:
        store.put("a.json", [b"0123", b"456789"])
        assert store.head("a.json", 5) == b"01234"
        assert store.head("a.json", 100) == b"0123456789"
        with pytest.raises(FileNotFoundError):
            store.head("missing.json", 5)

    def test_read_range_reads_bytes_of_a_blob(self, store: BlobStore) -> None:
        store.put("a.json", [b"0123", b"456789"])
        assert store.read_range("a.json", 2, 7) == b"23456"
        assert store.read_range("a.json", 8, 100) == b"89"
        assert store.read_range("a.json", 3, 3) == b""
        with pytest.raises(FileNotFoundError):
            store.read_range("missing.json", 0, 5)

    def test_create_writes_once_and_never_replaces(self, store: BlobStore) -> None:
        store.create("a.json", [b"first", b" output"])
        store.create("a.json", [b"first output"])  # (the same bytes: a write retried after it landed)
        with pytest.raises(StorageError, match="never replaced") as raised:
            store.create("a.json", [b"other output"])
        assert raised.value.errno == errno.EEXIST
        assert store.get("a.json") == b"first output"

    def test_append_creates_and_extends(self, store: BlobStore) -> None:
        store.append("log.jsonl", b"one\n")
        store.append("log.jsonl", b"two\n")
        assert store.get("log.jsonl") == b"one\ntwo\n"

    def test_put_after_append_replaces_and_append_continues(self, store: BlobStore) -> None:
        store.append("log.jsonl", b"one\n")
        store.put("log.jsonl", [b"fresh\n"])
        store.append("log.jsonl", b"more\n")
        assert store.get("log.jsonl") == b"fresh\nmore\n"

    def test_delete_then_append_starts_over(self, store: BlobStore) -> None:
        store.append("log.jsonl", b"one\n")
        store.delete("log.jsonl")
        store.append("log.jsonl", b"two\n")
        assert store.get("log.jsonl") == b"two\n"

    @pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/b", ".hidden", "", "a\x00b", "..", "x/../y"])
    def test_unsafe_names_are_refused(self, store: BlobStore, name: str) -> None:
        for call in (
            lambda: store.put(name, [b"x"]),
            lambda: store.get(name),
            lambda: store.delete(name),
            lambda: store.append(name, b"x"),
        ):
            with pytest.raises(ConfigError, match="blob name"):
                call()

    def test_large_blob(self, store: BlobStore) -> None:
        data = bytes(range(256)) * 8192
        store.put("big.json", [data[:1000], data[1000:]])
        assert store.get("big.json") == data

    def test_close_is_idempotent(self, store: BlobStore) -> None:
        store.put("a.json", [b"1"])
        store.close()
        store.close()


class TestMemoryStore(BlobStoreSuite):
    @pytest.fixture
    def store(self) -> BlobStore:
        return DictStore()

    def test_path_is_none(self) -> None:
        assert DictStore().path("a.json") is None


class TestLocalStore(BlobStoreSuite):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[BlobStore]:
        store = LocalStore(tmp_path / "session")
        yield store
        store.close(remove=True)

    def test_durable_store_round_trips(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path / "durable", durable=True)
        store.put("a.json", [b"1"])
        store.append("log.jsonl", b"x\n")
        assert store.get("a.json") == b"1"
        store.close(remove=True)

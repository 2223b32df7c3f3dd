from __future__ import annotations

import dataclasses
import datetime as dt

import pydantic
import pytest

from toolctx._hashing import hash_args, hash_bytes, hash_query


class Query(pydantic.BaseModel):
    text: str
    filters: dict[str, str]


@dataclasses.dataclass
class Window:
    start: dt.datetime
    end: dt.datetime


def test_hash_is_16_hex_digits_of_xxh3() -> None:
    import xxhash

    assert hash_bytes(b"abc") == xxhash.xxh3_64_hexdigest(b"abc")
    assert len(hash_bytes(b"")) == 16


def test_key_order_does_not_change_the_hash() -> None:
    assert hash_args({"a": 1, "b": {"x": 1, "y": 2}})[1] == hash_args({"b": {"y": 2, "x": 1}, "a": 1})[1]


def test_different_values_hash_differently() -> None:
    assert hash_args({"a": 1})[1] != hash_args({"a": 2})[1]
    assert hash_args({"a": "1"})[1] != hash_args({"a": 1})[1]


def test_rich_arguments_hash_stably() -> None:
    def args() -> dict[str, object]:
        return {
            "q": Query(text="t", filters={"b": "2", "a": "1"}),
            "window": Window(dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 2, 1, tzinfo=dt.UTC)),
            "tags": {"zeta", "alpha", "mid"},
            "raw": b"bytes",
            "nested": [{"k": frozenset({3, 1})}],
        }

    first, second = hash_args(args()), hash_args(args())
    assert first == second
    assert first[0][1] == ()


def test_canonical_json_is_kept_with_the_hash() -> None:
    encoded, digest = hash_args({"b": 2, "a": 1})
    assert encoded[0] == b'{"a":1,"b":2}'
    assert digest == hash_bytes(encoded[0])


def test_hash_query_is_deterministic_and_normalises_whitespace() -> None:
    assert hash_query("What was AAPL revenue?") == hash_query("  What was   AAPL\nrevenue? ")
    assert hash_query("a") != hash_query("b")
    assert hash_query("Cafe\u0301") == hash_query("Café")
    assert len(hash_query("x")) == 16


def test_hash_query_accepts_lone_surrogates() -> None:
    assert hash_query("bad\ud800") == hash_query("bad\ud800")


def test_hash_query_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="str"):
        hash_query(42)  # type: ignore[arg-type]


def test_hash_args_with_a_redactor_hashes_the_redacted_form() -> None:
    from toolctx.redaction import default_redactor

    (data, _), digest = hash_args({"api_key": "sk-secret", "q": 1}, default_redactor())
    assert data == b'{"api_key":"[REDACTED]","q":1}'
    assert digest == hash_args({"api_key": "anything else", "q": 1}, default_redactor())[1]

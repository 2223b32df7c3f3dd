from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import sys
import uuid
from decimal import Decimal
from pathlib import PurePosixPath

import orjson
import pydantic
from hypothesis import given
from hypothesis import strategies as st

from toolctx._serialize import MAX_DEPTH, encode


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    tags: set[str]


class Model(pydantic.BaseModel):
    name: str
    when: dt.date


def test_plain_json_takes_the_fast_path_without_notes() -> None:
    value = {"a": [1, 2.5, None, True], "b": "héllo ✓"}
    encoded = encode(value)
    assert orjson.loads(encoded[0]) == value
    assert encoded[1] == ()


def test_common_python_types_encode_natively() -> None:
    value = {
        "model": Model(name="n", when=dt.date(2024, 1, 2)),
        "point": Point(1, {"b", "a"}),
        "color": Color.RED,
        "id": uuid.UUID(int=1),
        "price": Decimal("1.10"),
        "path": PurePosixPath("/x/y"),
        "blob": b"\x00\xff",
        "delta": dt.timedelta(seconds=90),
        1: "int key",
    }
    encoded = encode(value)
    decoded = orjson.loads(encoded[0])
    assert decoded["model"] == {"name": "n", "when": "2024-01-02"}
    assert decoded["point"] == {"x": 1, "tags": ["a", "b"]}
    assert decoded["color"] == "red"
    assert decoded["id"] == "00000000-0000-0000-0000-000000000001"
    assert decoded["price"] == "1.10"
    assert decoded["path"] == "/x/y"
    assert decoded["blob"] == {"$bytes": "AP8="}
    assert decoded["delta"] == 90.0
    assert decoded["1"] == "int key"
    assert encoded[1] == ()


def test_sort_keys_gives_one_form_for_equal_mappings() -> None:
    assert (
        encode({"b": 1, "a": {"d": 2, "c": 3}}, sort_keys=True)[0]
        == encode({"a": {"c": 3, "d": 2}, "b": 1}, sort_keys=True)[0]
    )
    assert encode({3, 1, 2}, sort_keys=True)[0] == b"[1,2,3]"


def test_cycles_become_markers() -> None:
    loop: list[object] = [1]
    loop.append(loop)
    encoded = encode({"loop": loop})
    assert orjson.loads(encoded[0]) == {"loop": [1, {"$cycle": "list"}]}
    assert any("cycle" in n for n in encoded[1])


def test_huge_ints_become_strings() -> None:
    encoded = encode({"n": 2**100, "small": 5})
    assert orjson.loads(encoded[0]) == {"n": str(2**100), "small": 5}
    assert any("64-bit" in n for n in encoded[1])


def test_lone_surrogates_are_escaped() -> None:
    encoded = encode(["ok", "bad\ud800end"])
    assert orjson.loads(encoded[0]) == ["ok", "bad\\ud800end"]
    assert any("surrogate" in n for n in encoded[1])


def test_surrogates_in_keys_are_escaped_too() -> None:
    assert orjson.loads(encode({"k\udfff": 1})[0]) == {"k\\udfff": 1}


def test_nan_and_infinity_become_null() -> None:
    assert orjson.loads(encode([math.nan, math.inf])[0]) == [None, None]


def test_arbitrary_objects_are_stored_as_repr_and_type() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque 7>"

    encoded = encode({"x": Opaque()})
    decoded = orjson.loads(encoded[0])
    assert decoded["x"]["$repr"] == "<opaque 7>"
    assert decoded["x"]["$type"].endswith("Opaque")
    assert encoded[1]


def test_default_repr_leaves_out_the_memory_address() -> None:
    class Plain:
        pass

    first, second = encode(Plain(), sort_keys=True), encode(Plain(), sort_keys=True)
    assert first[0] == second[0]
    assert b"0x" not in first[0]


def test_a_repr_that_raises_is_survived() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    decoded = orjson.loads(encode(Broken())[0])
    assert decoded["$repr"] == "<repr failed: RuntimeError>"


def test_deep_nesting_is_cut_at_max_depth() -> None:
    value: list[object] = []
    cursor = value
    for _ in range(400):  # beyond orjson's own limit of 254
        inner: list[object] = []
        cursor.append(inner)
        cursor = inner
    encoded = encode(value)
    depth, node = 0, orjson.loads(encoded[0])
    while isinstance(node, list) and node:
        node, depth = node[0], depth + 1
    assert node == {"$truncated": "list"}
    assert depth == MAX_DEPTH
    assert any("nested deeper" in n for n in encoded[1])


def test_odd_keys_fall_back_to_str() -> None:
    encoded = encode({(1, 2): "tuple key", dt.date(2024, 5, 1): "date", None: 0, Color.RED: 1, 2**80: "big"})
    decoded = orjson.loads(encoded[0])
    assert decoded["(1, 2)"] == "tuple key"
    assert decoded["2024-05-01"] == "date"
    assert decoded["null"] == 0
    assert decoded["red"] == 1
    assert decoded[str(2**80)] == "big"


def test_objects_with_tolist_are_converted() -> None:
    class Arrayish:
        def tolist(self) -> list[int]:
            return [1, 2]

    assert orjson.loads(encode({"a": Arrayish(), "loop": _cycle()})[0])["a"] == [1, 2]


def _cycle() -> dict[str, object]:
    d: dict[str, object] = {}
    d["self"] = d
    return d


hostile = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats()
    | st.text()
    | st.binary(max_size=20)
    | st.builds(object),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=4)
        | st.tuples(children, children)
        | st.frozensets(st.integers(), max_size=3)
    ),
    max_leaves=30,
)


@given(hostile)
def test_encode_never_raises_and_always_gives_valid_json(value: object) -> None:
    encoded = encode(value)
    orjson.loads(encoded[0])
    assert encode(value, sort_keys=True)[0] == encode(value, sort_keys=True)[0]


class _Interrupt(BaseException):
    pass


def test_a_base_exception_from_a_values_own_code_falls_back_instead_of_escaping() -> None:
    class Model(pydantic.BaseModel):
        name: str

        @pydantic.field_serializer("name")
        def _explode(self, value: str) -> str:
            raise _Interrupt("serialiser")

    class Listing(dict[str, int]):
        def items(self) -> object:  # type: ignore[override]
            raise _Interrupt("items")

    data, notes = encode({"model": Model(name="x"), "listing": Listing(a=1)})
    decoded = orjson.loads(data)
    assert decoded["model"] == {"name": "x"}  # the fallback reads the model's fields itself
    listing_type = f"{__name__}.{Listing.__qualname__}"
    assert decoded["listing"] == {"$repr": "<reading it raised _Interrupt>", "$type": listing_type}
    assert any("could not be read" in note for note in notes)


# 10**5000 + 7 and its digits, written without str() of an integer past the interpreter's 4,300-digit limit.
_PAST_LIMIT = 10**5000 + 7
_PAST_LIMIT_DIGITS = "1" + "0" * 4999 + "7"


def test_integers_past_the_digit_limit_are_stored_as_their_exact_decimal_string() -> None:
    limit = sys.get_int_max_str_digits()
    data, notes = encode({"n": -_PAST_LIMIT, "in": [_PAST_LIMIT], _PAST_LIMIT: "key"})
    assert orjson.loads(data) == {"n": "-" + _PAST_LIMIT_DIGITS, "in": [_PAST_LIMIT_DIGITS], _PAST_LIMIT_DIGITS: "key"}
    assert any("64-bit" in n for n in notes)
    assert orjson.loads(encode(_PAST_LIMIT)[0]) == _PAST_LIMIT_DIGITS
    assert sys.get_int_max_str_digits() == limit  # (the process-wide limit is left alone)


@given(st.integers(min_value=14_000, max_value=70_000).flatmap(lambda bits: st.integers(-(2**bits), 2**bits)))
def test_long_integers_keep_every_digit(number: int) -> None:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # (only to compute the expected digits)
    try:
        expected = str(number)
    finally:
        sys.set_int_max_str_digits(limit)
    assert orjson.loads(encode([number])[0]) == [number if -(2**63) <= number < 2**64 else expected]

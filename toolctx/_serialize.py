"""JSON encoding of arguments and results, with a fallback that never fails.

The fast path is one ``orjson.dumps`` call. orjson handles str, int, float, bool,
None, dict, list, tuple, dataclasses, datetimes, enums, UUIDs and numpy arrays
itself; :func:`_default` adds pydantic models, sets (sorted, so equal sets encode
equally), bytes, decimals and paths.

Only when that fails does the slow path walk the value in Python and store what
JSON cannot hold in the documented fallback form (listed in
:class:`toolctx.StoredContext`'s docstring), adding a note for each kind.

NaN and infinities become ``null`` (JSON has no such numbers); this happens on the
fast path too and adds no note.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import io
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any

import orjson
from pydantic import BaseModel

from toolctx._bigint import decimal_digits

__all__ = ["MAX_DEPTH", "Encoded", "clean_text", "encode"]

MAX_DEPTH = 200
"""Deepest nesting the fallback keeps (orjson itself stops at 254 levels)."""

_REPR_LIMIT = 2000
# OPT_NON_STR_KEYS makes orjson ~45% slower on every dict, so it is only tried after a
# plain attempt fails (a dict with int keys, say).
_OPTIONS = orjson.OPT_SERIALIZE_NUMPY
_SORTED = _OPTIONS | orjson.OPT_SORT_KEYS
_NON_STR = orjson.OPT_NON_STR_KEYS
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_ORJSON_NATIVE = (dt.datetime, dt.date, dt.time, uuid.UUID)
# orjson reserves about ten bytes per character of a string it encodes (and keeps them): a
# string this long is encoded a slice at a time, so its JSON is held once, near its size.
_LONG_TEXT = 1 << 20
_SLICE = 1 << 18


Encoded = tuple[bytes, tuple[str, ...]]
"""JSON bytes plus the notes that explain any fallback used (empty on the fast path)."""


def clean_text(text: str) -> str:
    """``text`` if it is valid UTF-8, else with its lone surrogates escaped as ``\\udXXX``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _sort_key(item: Any) -> bytes:
    return orjson.dumps(item, default=_default, option=_SORTED | _NON_STR)


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=_sort_key)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, (Decimal, PurePath)):
        return str(obj)
    if isinstance(obj, dt.timedelta):
        return obj.total_seconds()
    raise TypeError(f"{type(obj).__qualname__} is not JSON serialisable")


def encode(obj: Any, *, sort_keys: bool = False) -> Encoded:
    """Encode ``obj`` as JSON bytes; never raises for any value.

    ``sort_keys=True`` gives the canonical form used for hashing arguments. The
    bytes come straight from orjson, whose buffers are over-allocated: copy them
    (``memoryview(data).tobytes()``) before keeping them around.
    """
    option = _SORTED if sort_keys else _OPTIONS
    if type(obj) is str and len(obj) >= _LONG_TEXT:
        data = _long_text(obj)
        if data is not None:
            return data, ()
    try:
        return orjson.dumps(obj, default=_default, option=option), ()
    except KeyboardInterrupt:
        raise
    except BaseException:  # not plain JSON, or the value's own code failed (a pydantic serialiser, say)
        pass
    try:
        return orjson.dumps(obj, default=_default, option=option | _NON_STR), ()
    except KeyboardInterrupt:
        raise
    except BaseException:
        pass
    notes: dict[str, None] = {}
    safe = _Fallback(notes).convert(obj, 0, set())
    return orjson.dumps(safe, option=option), tuple(notes)


def _long_text(text: str) -> bytes | None:
    """``orjson.dumps(text)`` built a slice at a time, in one buffer of about its size (None: a lone surrogate).

    Characters are escaped one by one, so the slices' JSON put together is the whole's.
    """
    out = io.BytesIO()
    out.write(b'"')
    for start in range(0, len(text), _SLICE):
        try:
            part = orjson.dumps(text[start : start + _SLICE])
        except orjson.JSONEncodeError:
            return None
        out.write(memoryview(part)[1:-1])
    out.write(b'"')
    return out.getvalue()  # (the buffer itself, trimmed to size: not a copy)


class _Fallback:
    """Walks a value that orjson refused and turns it into plain JSON data."""

    def __init__(self, notes: dict[str, None]) -> None:
        self.notes = notes

    def note(self, text: str) -> None:
        self.notes[text] = None

    def string(self, text: str) -> str:
        cleaned = clean_text(text)
        if cleaned is not text:
            self.note("strings with lone surrogates were stored with the surrogates escaped as \\udXXX")
        return cleaned

    def key(self, key: Any) -> str:
        if isinstance(key, str):
            return self.string(key)
        if isinstance(key, enum.Enum):
            return self.key(key.value)
        if isinstance(key, (bool, float)) or key is None:
            return orjson.dumps(key).decode()
        if isinstance(key, int):
            return decimal_digits(key)
        if isinstance(key, (dt.date, dt.time)):
            return key.isoformat()
        if isinstance(key, uuid.UUID):
            return str(key)
        self.note("dictionary keys that are not strings or numbers were stored as their str()")
        return self.string(_safe_str(key))

    def convert(self, obj: Any, depth: int, active: set[int]) -> Any:
        if obj is None or isinstance(obj, (bool, float)):
            return obj
        if isinstance(obj, str):
            return self.string(obj)
        if isinstance(obj, int):
            if _INT_MIN <= obj <= _INT_MAX:
                return int(obj)
            self.note("integers outside the 64-bit range were stored as decimal strings")
            return decimal_digits(obj)
        if isinstance(obj, enum.Enum):
            return self.convert(obj.value, depth, active)
        if isinstance(obj, _ORJSON_NATIVE):
            return obj
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return {"$bytes": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, (Decimal, PurePath, dt.timedelta)):
            return _default(obj)
        if depth >= MAX_DEPTH:
            self.note(f"values nested deeper than {MAX_DEPTH} levels were cut")
            return {"$truncated": type(obj).__qualname__}
        marker = id(obj)
        if marker in active:
            self.note("reference cycles were replaced by {'$cycle': type} markers")
            return {"$cycle": type(obj).__qualname__}
        active.add(marker)
        try:
            return self.container(obj, depth + 1, active)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the value's own code failed while it was read
            self.note("values that could not be read were stored as {'$repr', '$type'} naming the error")
            return {"$repr": f"<reading it raised {type(exc).__qualname__}>", "$type": _type_name(obj)}
        finally:
            active.discard(marker)

    def container(self, obj: Any, depth: int, active: set[int]) -> Any:
        if isinstance(obj, Mapping):
            return {self.key(k): self.convert(v, depth, active) for k, v in list(obj.items())}
        if isinstance(obj, (list, tuple)):
            return [self.convert(v, depth, active) for v in obj]
        if isinstance(obj, (set, frozenset)):
            items = [self.convert(v, depth, active) for v in obj]
            try:
                return sorted(items, key=lambda item: orjson.dumps(item, option=_SORTED | _NON_STR))
            except (TypeError, orjson.JSONEncodeError):  # pragma: no cover - converted items always encode
                return items
        if isinstance(obj, BaseModel):
            return {name: self.convert(value, depth, active) for name, value in obj}
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = dataclasses.fields(obj)
            return {f.name: self.convert(getattr(obj, f.name, None), depth, active) for f in fields}
        tolist = getattr(type(obj), "tolist", None)
        if callable(tolist):
            try:
                listed = tolist(obj)
            except KeyboardInterrupt:
                raise
            except BaseException:
                pass
            else:
                return self.convert(listed, depth, active)
        self.note("values that are not JSON-serialisable were stored as {'$repr', '$type'}")
        return {"$repr": self.string(_safe_repr(obj)), "$type": _type_name(obj)}


def _type_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _safe_repr(obj: Any) -> str:
    if type(obj).__repr__ is object.__repr__:  # type: ignore[comparison-overlap]
        # The default repr embeds a memory address; leave it out so equal calls hash equally.
        return f"<{type(obj).__module__}.{type(obj).__qualname__} object>"
    try:
        text = repr(obj)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the value's own __repr__; it must not fail the tool call
        return f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "…"


def _safe_str(obj: Any) -> str:
    try:
        return str(obj)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return _safe_repr(obj)

"""The item rows every part of the store reads the same way.

An item is a row of ``context_items`` joined to its current content in
``context_contents``. These helpers select such rows, turn them into
:class:`~toolctx.memory.ContextItem`, look one up, split long id lists into
chunks, and aggregate rows into JSON on each database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import ColumnElement, Float, Select, Text, and_, cast, func, literal_column, select
from sqlalchemy.engine import Connection

from toolctx.errors import ConfigError, UnknownItemError
from toolctx.memory._items import ContextItem, Tier
from toolctx.memory._schema import agents, contents, items

__all__ = [
    "BEST_FIRST",
    "ITEM_COLUMNS",
    "RECORDED_HASH",
    "chunks",
    "json_rows",
    "mine",
    "one_item",
    "parse_tier",
    "revision_of",
    "select_items",
    "to_item",
    "to_items",
]

ITEM_COLUMNS = (
    items.c.id,
    items.c.agent_id,
    items.c.item_type,
    contents.c.content,
    items.c.importance_score,
    items.c.tier,
    items.c.access_count,
    items.c.created_at,
    items.c.last_accessed,
    items.c.content_hash,
    items.c.tokens,
    items.c.loaded,
    items.c.archived,
)
BEST_FIRST = (items.c.importance_score.desc(), items.c.id.desc())
_CHUNK = 5000  # ids per IN (...) list: under every driver's parameter limit

_ITEM_FIELDS = tuple(column.name for column in ITEM_COLUMNS)
_ITEM_LIST = TypeAdapter(list[ContextItem])
_WITH_CONTENT = items.join(
    contents, and_(contents.c.item_id == items.c.id, contents.c.content_hash == items.c.content_hash)
)
# A checkpoint records every item column but the content, whose hash it keeps.
_RECORDED_COLUMNS = tuple(column for column in ITEM_COLUMNS if column is not contents.c.content)
RECORDED_HASH = [column.name for column in _RECORDED_COLUMNS].index("content_hash")


def mine(agent_id: str) -> ColumnElement[bool]:
    """The condition every statement on items carries: an agent never reaches another's."""
    return items.c.agent_id == agent_id


def select_items(*where: ColumnElement[bool]) -> Select[Any]:
    """Whole items (with their content) matching ``where``."""
    return select(*ITEM_COLUMNS).select_from(_WITH_CONTENT).where(*where)


def to_items(rows: Iterable[Sequence[Any]]) -> list[ContextItem]:
    """Rows of the item columns (or checkpoint entries with their content) as items.

    Validating a whole list in pydantic's core is faster than constructing items one
    by one without validation, and turns the stored UNIX seconds into datetimes.
    """
    return _ITEM_LIST.validate_python([dict(zip(_ITEM_FIELDS, row, strict=True)) for row in rows])


def to_item(row: Sequence[Any]) -> ContextItem:
    return to_items((row,))[0]


def one_item(conn: Connection, agent_id: str, item_id: int) -> ContextItem:
    """The agent's item ``item_id``, or :class:`~toolctx.errors.UnknownItemError`."""
    row = conn.execute(select_items(mine(agent_id), items.c.id == item_id)).first()
    if row is None:
        raise UnknownItemError(f"agent {agent_id!r} has no item {item_id!r}")
    return to_item(row)


def parse_tier(value: Tier | str) -> Tier:
    try:
        return Tier(value.upper() if isinstance(value, str) else value)
    except (ValueError, AttributeError):
        raise ConfigError(f"unknown tier {value!r}; use 'HOT', 'WARM' or 'COLD'") from None


def chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def revision_of(conn: Connection, agent_id: str) -> int:
    """The revision of the agent's last write, read first so a snapshot errs on the side of rereading."""
    revision: int = conn.execute(select(agents.c.revision).where(agents.c.agent_id == agent_id)).scalar_one()
    return revision


def json_rows(dialect: str) -> ColumnElement[str]:
    """An aggregate: the recorded columns of every selected item as one JSON array of arrays, as text."""
    if dialect == "sqlite":
        # json_array writes a float with 15 digits; printf's %!.17g keeps every bit of a double.
        columns = [
            func.json(func.printf("%!.17g", column)) if isinstance(column.type, Float) else column
            for column in _RECORDED_COLUMNS
        ]
        return func.json_group_array(func.json_array(*columns))
    rows = func.coalesce(func.json_agg(func.json_build_array(*_RECORDED_COLUMNS)), literal_column("'[]'::json"))
    return cast(rows, Text)

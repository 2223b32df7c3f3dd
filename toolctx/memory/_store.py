"""The memory store: one SQLAlchemy Core implementation for SQLite and PostgreSQL.

Every write of an agent runs in one transaction that first bumps the agent's row,
so writes of one agent are serialised across threads and processes on PostgreSQL
(a row lock) as on SQLite (``BEGIN IMMEDIATE``), and a flash save, a restore or a
tier update is all or nothing. Every statement filters by ``agent_id``: an agent
cannot read or change another agent's items or checkpoints, even by guessing ids.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import orjson
from pydantic import TypeAdapter
from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal,
    literal_column,
    select,
    update,
)
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import IntegrityError

from toolctx._internal import DEBUG, log
from toolctx.errors import ConfigError, UnknownAgentError, UnknownCheckpointError, UnknownItemError
from toolctx.memory._config import MemoryConfig
from toolctx.memory._items import ContextItem, Tier, content_hash, timestamp
from toolctx.memory._results import (
    CheckpointInfo,
    ContextDiff,
    ContextSnapshot,
    FlashSaveResult,
    MemoryStats,
    RestoreResult,
    TierUpdateResult,
    snapshot_hash,
)
from toolctx.memory._schema import agents, checkpoints, contents, create_schema, items, open_engine
from toolctx.memory._scoring import SECONDS_PER_DAY, ImportanceScorer, ScoreBatch, score_batch
from toolctx.tokens import estimate_tokens

__all__ = ["AgentMemory", "MemoryStore"]

_ITEM_COLUMNS = (
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
_TIER_RANK = {"COLD": 0, "WARM": 1, "HOT": 2}
_CHUNK = 5000  # ids per IN (...) list: under every driver's parameter limit
MAX_AGENT_ID = 200


_ITEM_FIELDS = tuple(column.name for column in _ITEM_COLUMNS)
_ITEM_LIST = TypeAdapter(list[ContextItem])
_WITH_CONTENT = items.join(
    contents, and_(contents.c.item_id == items.c.id, contents.c.content_hash == items.c.content_hash)
)
# A checkpoint records every item column but the content, whose hash it keeps.
_RECORDED_COLUMNS = tuple(column for column in _ITEM_COLUMNS if column is not contents.c.content)
_RECORDED_HASH = [column.name for column in _RECORDED_COLUMNS].index("content_hash")
_BEST_FIRST = (items.c.importance_score.desc(), items.c.id.desc())


def _select_items(*where: ColumnElement[bool]) -> Select[Any]:
    """Whole items (with their content) matching ``where``."""
    return select(*_ITEM_COLUMNS).select_from(_WITH_CONTENT).where(*where)


def _items(rows: Iterable[Sequence[Any]]) -> list[ContextItem]:
    """Rows of the item columns (or checkpoint entries) as items.

    Validating a whole list in pydantic's core is faster than constructing items one
    by one without validation, and turns the stored UNIX seconds into datetimes.
    """
    return _ITEM_LIST.validate_python([dict(zip(_ITEM_FIELDS, row, strict=True)) for row in rows])


def _item(row: Sequence[Any]) -> ContextItem:
    return _items((row,))[0]


def _tier(value: Tier | str) -> Tier:
    try:
        return Tier(value.upper() if isinstance(value, str) else value)
    except (ValueError, AttributeError):
        raise ConfigError(f"unknown tier {value!r}; use 'HOT', 'WARM' or 'COLD'") from None


def _check_agent_id(agent_id: object) -> str:
    if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > MAX_AGENT_ID:
        raise ConfigError(f"agent_id must be a non-empty string of up to {MAX_AGENT_ID} characters, not {agent_id!r}")
    return agent_id


def _check_score(value: object, name: str = "importance_score") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a number in [0, 1], not {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be in [0, 1], not {value!r}")
    return float(value)


def _chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


class MemoryStore:
    """Tiered memory for any number of agents, in one SQLite file or PostgreSQL database.

    ``url`` is a path or ``sqlite:///path.db``, a ``postgresql://user:pw@host/db``
    URL, an SQLAlchemy Engine, or None for ``$TOOLCTX_MEMORY_URL`` or else
    ``~/.agent/memory.db``. Missing tables are created. Open one store per process
    (engines do not survive ``fork``) and get each agent with :meth:`agent`.
    """

    def __init__(self, url: str | os.PathLike[str] | URL | Engine | None = None, *, config: MemoryConfig | None = None):
        if config is not None and not isinstance(config, MemoryConfig):
            raise TypeError(f"config must be a MemoryConfig, not {type(config).__name__}")
        self.config = config or MemoryConfig()
        self._owns_engine = not isinstance(url, Engine)
        self.engine = open_engine(url)
        create_schema(self.engine)

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def __repr__(self) -> str:
        return f"MemoryStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def agent(self, agent_id: str, *, create: bool = True) -> AgentMemory:
        """The memory of ``agent_id``, registering the agent unless ``create=False``.

        With ``create=False`` an agent that has never been registered raises
        :class:`~toolctx.errors.UnknownAgentError` (the HTTP API reads this way).
        """
        _check_agent_id(agent_id)
        with self.write() as conn:
            if conn.execute(select(agents.c.agent_id).where(agents.c.agent_id == agent_id)).first() is None:
                if not create:
                    raise UnknownAgentError(f"no agent {agent_id!r} in this memory store; save an item for it first")
                conn.execute(insert(agents).values(agent_id=agent_id, created_at=self.config.clock(), revision=0))
        return AgentMemory(self, agent_id)

    def agents(self) -> list[str]:
        """Every registered agent id, sorted."""
        with self.read() as conn:
            return list(conn.execute(select(agents.c.agent_id).order_by(agents.c.agent_id)).scalars())

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self.engine.connect().execution_options(toolctx_write=True) as conn, conn.begin():
            yield conn

    def close(self) -> None:
        """Release the store's connections (an engine passed in stays usable by its owner)."""
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AgentMemory:
    """One agent's items, tiers, working set and checkpoints. Get it from :meth:`MemoryStore.agent`.

    The working set is what the agent currently holds in its context: items it saved
    and items it loaded, until a flash save cuts it back to HOT. It is recorded in the
    database, so another process (or the HTTP API) sees the same working set.
    """

    def __init__(self, store: MemoryStore, agent_id: str):
        self.store = store
        self.agent_id = agent_id
        self.config = store.config

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, {self.store!r})"

    @contextmanager
    def _write(self) -> Iterator[tuple[Connection, int]]:
        """A write transaction holding this agent's lock (see the module docstring), and its revision.

        Every item row a write changes in a way a snapshot would see records the write's
        revision, so :meth:`diff` needs to read only the rows newer than its snapshot.
        """
        with self.store.write() as conn:
            revision = conn.execute(
                update(agents)
                .where(agents.c.agent_id == self.agent_id)
                .values(revision=agents.c.revision + 1)
                .returning(agents.c.revision)
            ).scalar_one_or_none()
            if revision is None:
                raise UnknownAgentError(f"no agent {self.agent_id!r} in this memory store")
            yield conn, revision

    def _revision(self, conn: Connection) -> int:
        """The revision of this agent's last write, read first so a snapshot errs on the side of rereading."""
        revision: int = conn.execute(select(agents.c.revision).where(agents.c.agent_id == self.agent_id)).scalar_one()
        return revision

    def _mine(self) -> Any:
        return items.c.agent_id == self.agent_id

    # -- saving ------------------------------------------------------------

    def _check_content(self, content: object) -> str:
        if not isinstance(content, str):
            raise ConfigError(f"content must be a string, not {type(content).__name__}; serialise it first")
        if not content.strip():
            raise ConfigError("content is empty; there is nothing to remember")
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ConfigError(f"content is not valid Unicode text ({exc.reason} at position {exc.start})") from None
        if "\x00" in content:
            raise ConfigError("content contains a NUL character, which PostgreSQL text cannot hold; strip it first")
        if size > self.config.max_content_bytes:
            raise ConfigError(
                f"content is {size:,} bytes, over the limit of {self.config.max_content_bytes:,}; "
                "store large outputs in a toolctx session and remember a summary, "
                "or raise MemoryConfig(max_content_bytes=...)"
            )
        return content

    def _row(
        self, item_type: str, content: str, importance_score: float | None, now: float, loaded: bool
    ) -> dict[str, Any]:
        """An item's row, checked; its content is under ``"content"`` and goes to its own table."""
        type_weight = self.config.weight_of(item_type)
        self._check_content(content)
        weight = None if importance_score is None else _check_score(importance_score)
        score = type_weight if weight is None else weight
        return {
            "agent_id": self.agent_id,
            "item_type": item_type,
            "content": content,
            "content_hash": content_hash(content),
            "tokens": estimate_tokens(content),
            "weight": weight,
            "importance_score": score,
            "tier": self.config.thresholds.tier_of(score).value,
            "access_count": 0,
            "created_at": now,
            "last_accessed": now,
            "loaded": loaded,
            "archived": False,
        }

    def save(
        self, item_type: str, content: str, *, importance_score: float | None = None, loaded: bool = True
    ) -> ContextItem:
        """Store one item and return it with its id and tier.

        Without ``importance_score`` the item's base importance is its type's weight;
        with one, that score is the item's own base importance, which then decays with
        age like any other. ``loaded=True`` puts the item in the working set (the agent
        has it in context, since it just produced it).
        """
        row = self._row(item_type, content, importance_score, self.config.clock(), loaded)
        with self._write() as (conn, revision):
            row["revision"] = revision
            item_id = conn.execute(
                insert(items).values({k: v for k, v in row.items() if k != "content"}).returning(items.c.id)
            ).scalar_one()
            conn.execute(insert(contents).values(item_id=item_id, content_hash=row["content_hash"], content=content))
        log(DEBUG, "memory_saved", agent=self.agent_id, id=item_id, item_type=item_type, tier=row["tier"])
        return _item((item_id, *(row[c.name] for c in _ITEM_COLUMNS[1:])))

    def save_many(
        self, entries: Iterable[tuple[str, str] | tuple[str, str, float | None]], *, loaded: bool = True
    ) -> list[int]:
        """Store many ``(item_type, content[, importance_score])`` entries in one transaction; their ids in order.

        Every entry is checked before anything is written: one bad entry stores none.
        """
        now = self.config.clock()
        rows = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) not in (2, 3):
                raise ConfigError(f"entry {index} must be (item_type, content[, importance_score]), not {entry!r:.80}")
            rows.append(self._row(entry[0], entry[1], entry[2] if len(entry) == 3 else None, now, loaded))
        if not rows:
            return []
        texts = [row.pop("content") for row in rows]
        with self._write() as (conn, revision):
            for row in rows:
                row["revision"] = revision
            ids = list(conn.execute(insert(items).returning(items.c.id, sort_by_parameter_order=True), rows).scalars())
            conn.execute(
                insert(contents),
                [
                    {"item_id": i, "content_hash": row["content_hash"], "content": text}
                    for i, row, text in zip(ids, rows, texts, strict=True)
                ],
            )
        log(DEBUG, "memory_saved_many", agent=self.agent_id, count=len(ids))
        return ids

    def update(self, item_id: int, content: str) -> ContextItem:
        """Replace an item's content (its hash and token estimate follow); a diff reports it as modified."""
        self._check_item_id(item_id)
        self._check_content(content)
        digest = content_hash(content)
        with self._write() as (conn, revision):
            changed = conn.execute(
                update(items)
                .where(self._mine(), items.c.id == item_id)
                .values(content_hash=digest, tokens=estimate_tokens(content), revision=revision)
            ).rowcount
            if changed == 0:
                raise UnknownItemError(f"agent {self.agent_id!r} has no item {item_id!r}")
            # Earlier contents stay: checkpoints that recorded them can still restore them.
            known = select(contents.c.item_id).where(contents.c.item_id == item_id, contents.c.content_hash == digest)
            if conn.execute(known).first() is None:
                conn.execute(insert(contents).values(item_id=item_id, content_hash=digest, content=content))
            return _item(conn.execute(_select_items(self._mine(), items.c.id == item_id)).one())

    # -- reading -----------------------------------------------------------

    def get(self, item_id: int) -> ContextItem:
        """One item by id, without counting an access."""
        self._check_item_id(item_id)
        with self.store.read() as conn:
            row = conn.execute(_select_items(self._mine(), items.c.id == item_id)).first()
        if row is None:
            raise UnknownItemError(f"agent {self.agent_id!r} has no item {item_id!r}")
        return _item(row)

    @staticmethod
    def _check_item_id(item_id: object) -> None:
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise ConfigError(f"item ids are integers, not {item_id!r}")

    def items(
        self, tier: Tier | str | None = None, *, archived: bool = False, limit: int | None = None
    ) -> list[ContextItem]:
        """Items of a tier (or all), best first, without counting an access: for looking, not loading."""
        query = _select_items(self._mine())
        if tier is not None:
            query = query.where(items.c.tier == _tier(tier).value)
        if not archived:
            query = query.where(items.c.archived.is_(False))
        query = query.order_by(*_BEST_FIRST)
        if limit is not None:
            query = query.limit(self._check_limit(limit))
        with self.store.read() as conn:
            return _items(conn.execute(query).all())

    @staticmethod
    def _check_limit(limit: object) -> int:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ConfigError(f"limit must be a positive integer, not {limit!r}")
        return limit

    def load(self, tier: Tier | str = Tier.HOT, *, limit: int | None = None) -> list[ContextItem]:
        """Load a tier into the working set, best first; each loaded item counts one access.

        Archived items are not loaded by tier; :meth:`restore` brings them back.
        """
        wanted = _tier(tier).value
        selected = and_(self._mine(), items.c.tier == wanted, items.c.archived.is_(False))
        if limit is not None:
            top = select(items.c.id).where(selected).order_by(*_BEST_FIRST).limit(self._check_limit(limit))
            selected = and_(self._mine(), items.c.id.in_(top.scalar_subquery()))
        with self._write() as (conn, revision):
            conn.execute(
                update(items)
                .where(selected)
                .values(
                    access_count=items.c.access_count + 1,
                    last_accessed=self.config.clock(),
                    loaded=True,
                    revision=revision,
                )
            )
            # The update changes neither tiers nor scores, so ``selected`` picks the same items again.
            loaded = _items(conn.execute(_select_items(selected).order_by(*_BEST_FIRST)).all())
        log(DEBUG, "memory_loaded", agent=self.agent_id, tier=wanted, count=len(loaded))
        return loaded

    def working_set(self) -> list[ContextItem]:
        """The items the agent currently holds in context, best first."""
        query = _select_items(self._mine(), items.c.loaded.is_(True)).order_by(*_BEST_FIRST)
        with self.store.read() as conn:
            return _items(conn.execute(query).all())

    # -- scoring -----------------------------------------------------------

    def update_tiers(self) -> TierUpdateResult:
        """Rescore every unarchived item and move it to its tier; run it after each task.

        The default scorer runs inside the database as one UPDATE of the scores; a custom
        scorer reads the items, scores them in Python (vectorised when it can) and writes
        the scores back. Either way only the items whose score left their tier are then moved.
        """
        try:
            with self._write() as (conn, revision):
                now = self.config.clock()
                scorer = self.config.scorer
                if type(scorer) is ImportanceScorer:
                    self._score_in_database(conn, scorer, now)
                else:
                    self._score_in_python(conn, now)
                result = self._retier(conn, revision)
        except IntegrityError:
            # The database scorer gives a type missing from type_weights no weight, so
            # its score is NULL and the NOT NULL column refuses the whole update.
            with self.store.read() as conn:
                stored = conn.execute(
                    select(items.c.item_type)
                    .distinct()
                    .where(self._mine(), items.c.archived.is_(False), items.c.weight.is_(None))
                ).scalars()
                error = self._unconfigured(stored)
            if error is not None:
                raise error from None
            raise
        log(DEBUG, "memory_tiers_updated", agent=self.agent_id, **result.model_dump())
        return result

    def _unconfigured(self, stored_types: Iterable[str]) -> ConfigError | None:
        """The error for stored item types (of items without their own weight) the config no longer has."""
        unknown = sorted(set(stored_types) - set(self.config.type_weights))
        if not unknown:
            return None
        return ConfigError(
            f"items of type {', '.join(map(repr, unknown))} are stored but not in type_weights; "
            "add the type back to MemoryConfig(type_weights=...)"
        )

    def _score_in_database(self, conn: Connection, scorer: ImportanceScorer, now: float) -> None:
        type_weight = case(  # no ELSE: an unconfigured type scores NULL, which the column refuses
            {name: literal(float(w)) for name, w in self.config.type_weights.items()}, value=items.c.item_type
        )
        age_days = (literal(now) - items.c.created_at) / SECONDS_PER_DAY
        raw = (
            func.coalesce(items.c.weight, type_weight)
            * func.exp(-case((age_days > 0.0, age_days), else_=0.0) / scorer.decay_days)
            * (1.0 + scorer.access_factor * func.ln(1.0 + items.c.access_count))
        )
        # raw >= 0 (weight >= 0, boost >= 1), so only the top needs clamping. A CASE lets a
        # NULL through on both databases; PostgreSQL's LEAST would turn it into 1.0.
        conn.execute(
            update(items)
            .where(self._mine(), items.c.archived.is_(False))
            .values(importance_score=case((raw >= 1.0, 1.0), else_=raw))
        )

    def _score_in_python(self, conn: Connection, now: float) -> None:
        rows = conn.execute(
            select(items.c.id, items.c.item_type, items.c.weight, items.c.created_at, items.c.access_count).where(
                self._mine(), items.c.archived.is_(False)
            )
        ).all()
        if not rows:
            return
        ids, types, weights, created, accesses = zip(*rows, strict=True)
        error = self._unconfigured(t for t, w in zip(types, weights, strict=True) if w is None)
        if error is not None:
            raise error
        known = self.config.type_weights
        batch = ScoreBatch(
            item_types=types,
            weight=np.fromiter((known[t] if w is None else w for t, w in zip(types, weights, strict=True)), float),
            age_days=(now - np.asarray(created, dtype=np.float64)) / SECONDS_PER_DAY,
            access_count=np.asarray(accesses, dtype=np.float64),
        )
        scores = score_batch(self.config.scorer, batch).tolist()
        conn.execute(
            update(items).where(items.c.id == bindparam("b_id")).values(importance_score=bindparam("b_score")),
            [{"b_id": item_id, "b_score": score} for item_id, score in zip(ids, scores, strict=True)],
        )

    def _tier_by_score(self) -> ColumnElement[str]:
        """The tier each item's stored score puts it in."""
        thresholds = self.config.thresholds
        return case(
            (items.c.importance_score >= thresholds.hot, literal("HOT")),
            (items.c.importance_score >= thresholds.warm, literal("WARM")),
            else_=literal("COLD"),
        )

    def _retier(self, conn: Connection, revision: int) -> TierUpdateResult:
        """Move every unarchived item to the tier its stored score says, counting the moves.

        One read finds the few items that move; only their rows (and index entries) are
        rewritten, where an UPDATE of every row's tier would rewrite every index entry.
        """
        new_tier = self._tier_by_score()
        unarchived = and_(self._mine(), items.c.archived.is_(False))
        moves = conn.execute(
            select(items.c.id, items.c.tier, new_tier).where(unarchived, items.c.tier != new_tier)
        ).all()
        moving: dict[str, list[int]] = {}
        promoted = demoted = 0
        for item_id, old, new in moves:
            moving.setdefault(new, []).append(item_id)
            promoted += _TIER_RANK[new] > _TIER_RANK[old]
            demoted += _TIER_RANK[new] < _TIER_RANK[old]
        for new, ids in moving.items():
            for chunk in _chunks(ids):
                conn.execute(update(items).where(items.c.id.in_(chunk)).values(tier=new, revision=revision))
        # Counted after the move, from the tier index alone.
        counts = dict.fromkeys(("HOT", "WARM", "COLD"), 0)
        counts.update(conn.execute(select(items.c.tier, func.count()).where(unarchived).group_by(items.c.tier)).all())
        return TierUpdateResult(
            items_scored=sum(counts.values()),
            promoted=promoted,
            demoted=demoted,
            hot_count=counts["HOT"],
            warm_count=counts["WARM"],
            cold_count=counts["COLD"],
        )

    # -- flash save --------------------------------------------------------

    def should_flash_save(self, current_tokens: int, token_limit: int) -> bool:
        """Whether ``current_tokens`` has reached ``flash_fraction`` (80%) of ``token_limit``."""
        for name, value in (("current_tokens", current_tokens), ("token_limit", token_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be a non-negative integer, not {value!r}")
        if token_limit == 0:
            raise ConfigError("token_limit is 0; give the model's context window in tokens")
        return current_tokens >= self.config.flash_fraction * token_limit

    def flash_save(self) -> FlashSaveResult:
        """Checkpoint the working set's HOT and WARM items, archive COLD items, and resume with HOT only.

        All of it happens in one transaction: a failure leaves no checkpoint and no
        change, and two processes flash-saving one agent take turns. Tiers are those of
        the last :meth:`update_tiers`. Reloading the HOT tier counts as an access.
        """
        now = self.config.clock()
        kept_items = (
            self._mine(),
            items.c.loaded.is_(True),
            items.c.archived.is_(False),
            items.c.tier.in_(("HOT", "WARM")),
        )
        with self._write() as (conn, revision):
            tokens_before = conn.execute(
                select(func.coalesce(func.sum(items.c.tokens), 0)).where(self._mine(), items.c.loaded.is_(True))
            ).scalar_one()
            kept = dict(conn.execute(select(items.c.id, items.c.content_hash).where(*kept_items)).all())
            # The kept items' rows go into the checkpoint as JSON built by the database, so
            # they never travel to Python. The counts are filled in once the items have moved.
            checkpoint_id = conn.execute(
                insert(checkpoints)
                .values(
                    agent_id=self.agent_id,
                    created_at=now,
                    snapshot_hash="",
                    item_count=len(kept),
                    items_archived=0,
                    hot_items_retained=0,
                    tokens_before=int(tokens_before),
                    tokens_after=0,
                    revision=revision - 1,  # the items as they were before this write
                    payload=select(_json_rows(conn.dialect.name)).where(*kept_items).scalar_subquery(),
                )
                .returning(checkpoints.c.id)
            ).scalar_one()
            archived = conn.execute(
                update(items)
                .where(self._mine(), items.c.tier == "COLD", items.c.archived.is_(False))
                .values(archived=True, loaded=False, revision=revision)
            ).rowcount
            conn.execute(
                update(items)
                .where(self._mine(), items.c.loaded.is_(True), items.c.tier != "HOT")
                .values(loaded=False, revision=revision)
            )
            hot = (
                conn.execute(
                    update(items)
                    .where(self._mine(), items.c.tier == "HOT", items.c.archived.is_(False))
                    .values(access_count=items.c.access_count + 1, last_accessed=now, loaded=True, revision=revision)
                    .returning(items.c.tokens)
                )
                .scalars()
                .all()
            )
            result_fields = {
                "items_checkpointed": len(kept),
                "items_archived": archived,
                "hot_items_retained": len(hot),
                "tokens_before": int(tokens_before),
                "tokens_after": int(sum(hot)),
            }
            conn.execute(
                update(checkpoints)
                .where(checkpoints.c.id == checkpoint_id)
                .values(
                    snapshot_hash=snapshot_hash(kept),
                    items_archived=archived,
                    hot_items_retained=len(hot),
                    tokens_after=int(sum(hot)),
                )
            )
        result = FlashSaveResult(checkpoint_id=checkpoint_id, **result_fields)
        log(DEBUG, "memory_flash_saved", agent=self.agent_id, **result.model_dump())
        return result

    def checkpoints(self) -> list[CheckpointInfo]:
        """This agent's checkpoints, newest first."""
        query = (
            select(
                checkpoints.c.id,
                checkpoints.c.created_at,
                checkpoints.c.item_count,
                checkpoints.c.items_archived,
                checkpoints.c.hot_items_retained,
                checkpoints.c.tokens_before,
                checkpoints.c.tokens_after,
                checkpoints.c.snapshot_hash,
            )
            .where(checkpoints.c.agent_id == self.agent_id)
            .order_by(checkpoints.c.id.desc())
        )
        with self.store.read() as conn:
            return [
                CheckpointInfo(
                    id=row[0],
                    agent_id=self.agent_id,
                    created_at=timestamp(row[1]),
                    item_count=row[2],
                    items_archived=row[3],
                    hot_items_retained=row[4],
                    tokens_before=row[5],
                    tokens_after=row[6],
                    snapshot_hash=row[7],
                )
                for row in conn.execute(query)
            ]

    def _checkpoint(self, conn: Connection, checkpoint_id: int) -> tuple[list[list[Any]], int]:
        """A checkpoint's rows of item columns, and the agent revision they are as of."""
        if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
            raise ConfigError(f"checkpoint ids are integers, not {checkpoint_id!r}")
        found = conn.execute(
            select(checkpoints.c.payload, checkpoints.c.revision).where(
                checkpoints.c.agent_id == self.agent_id, checkpoints.c.id == checkpoint_id
            )
        ).first()
        if found is None:
            raise UnknownCheckpointError(f"agent {self.agent_id!r} has no checkpoint {checkpoint_id!r}")
        return orjson.loads(found[0]), found[1]

    def _checkpoint_items(self, conn: Connection, checkpoint_id: int) -> list[ContextItem]:
        """A checkpoint's items as it recorded them, content included, best first."""
        rows, _revision = self._checkpoint(conn, checkpoint_id)
        texts: dict[tuple[int, str], str] = {}
        for chunk in _chunks([row[0] for row in rows]):
            found = conn.execute(
                select(contents.c.item_id, contents.c.content_hash, contents.c.content).where(
                    contents.c.item_id.in_(chunk)
                )
            ).all()
            texts.update(((item_id, digest), text) for item_id, digest, text in found)
        with_content = [(*row[:3], texts[row[0], row[_RECORDED_HASH]], *row[3:]) for row in rows]
        return sorted(_items(with_content), key=lambda item: (-item.importance_score, -item.id))

    def restore(self, checkpoint_id: int) -> RestoreResult:
        """Make the working set the items a checkpoint recorded (unarchiving any archived since).

        The returned items are as the checkpoint recorded them; the store keeps their
        current content, so :meth:`diff` against the checkpoint shows what changed since.
        """
        with self._write() as (conn, revision):
            recorded = self._checkpoint_items(conn, checkpoint_id)
            conn.execute(
                update(items).where(self._mine(), items.c.loaded.is_(True)).values(loaded=False, revision=revision)
            )
            for chunk in _chunks([item.id for item in recorded]):
                conn.execute(
                    update(items)
                    .where(self._mine(), items.c.id.in_(chunk))
                    .values(loaded=True, archived=False, revision=revision)
                )
        log(DEBUG, "memory_restored", agent=self.agent_id, checkpoint=checkpoint_id, count=len(recorded))
        return RestoreResult(checkpoint_id=checkpoint_id, items=recorded, tokens=sum(item.tokens for item in recorded))

    # -- diffing -----------------------------------------------------------

    def _entries(self, conn: Connection, tier: Tier | None) -> dict[int, str]:
        query = select(items.c.id, items.c.content_hash).where(self._mine())
        if tier is None:
            query = query.where(items.c.loaded.is_(True))
        else:
            query = query.where(items.c.archived.is_(False), items.c.tier == tier.value)
        return dict(conn.execute(query).all())

    def snapshot(self, tier: Tier | str | None = Tier.HOT) -> ContextSnapshot:
        """The ids and content hashes of a tier (HOT by default) or, with ``tier=None``, of the working set."""
        wanted = None if tier is None else _tier(tier)
        with self.store.read() as conn:
            revision = self._revision(conn)
            entries = self._entries(conn, wanted)
        return self._snapshot(wanted, entries, revision)

    def _snapshot(self, tier: Tier | None, entries: dict[int, str], revision: int) -> ContextSnapshot:
        return ContextSnapshot.model_construct(
            agent_id=self.agent_id,
            tier=tier,
            items=entries,
            snapshot_hash=snapshot_hash(entries),
            taken_at=timestamp(self.config.clock()),
            revision=revision,
        )

    def diff(self, previous: ContextSnapshot | int) -> ContextDiff:
        """What changed in a context since ``previous``: a snapshot, or a checkpoint id.

        A snapshot is compared with the same tier (or the working set) now; a checkpoint
        with the working set now. Only the items written since ``previous`` are read, and
        only the added and modified ones in full. A snapshot without a revision (built by
        hand) is compared with the whole context instead.
        """
        with self.store.read() as conn:
            if isinstance(previous, ContextSnapshot):
                if previous.agent_id != self.agent_id:
                    raise ConfigError(
                        f"that snapshot is of agent {previous.agent_id!r}, not {self.agent_id!r}; "
                        "diff against a snapshot of the same agent"
                    )
                tier, before, since = previous.tier, previous.items, previous.revision
            else:
                recorded, since = self._checkpoint(conn, previous)
                tier, before = None, {row[0]: row[_RECORDED_HASH] for row in recorded}
            revision = self._revision(conn)
            if since is None or since > revision:  # a hand-made snapshot, or one of another database
                now = self._entries(conn, tier)
                changed = [item_id for item_id, _hash in now.items() - before.items()]
                removed = sorted(before.keys() - now.keys())
            else:
                now, changed, removed = self._changes_since(conn, since, tier, before)
            added_ids = sorted(i for i in changed if i not in before)
            modified_ids = sorted(i for i in changed if i in before)
            fetched: dict[int, ContextItem] = {}
            for chunk in _chunks(changed):
                found = conn.execute(_select_items(self._mine(), items.c.id.in_(chunk))).all()
                fetched.update((item.id, item) for item in _items(found))
        return ContextDiff(
            added=[fetched[i] for i in added_ids],
            modified=[fetched[i] for i in modified_ids],
            removed=removed,
            unchanged=len(now) - len(added_ids) - len(modified_ids),
            current=self._snapshot(tier, now, revision),
        )

    def _changes_since(
        self, conn: Connection, since: int, tier: Tier | None, before: dict[int, str]
    ) -> tuple[dict[int, str], list[int], list[int]]:
        """The context now, and the ids added or modified and removed, from the rows written after ``since``."""
        now = dict(before)
        changed: list[int] = []
        removed: list[int] = []
        written = conn.execute(
            select(items.c.id, items.c.content_hash, items.c.loaded, items.c.archived, items.c.tier).where(
                self._mine(), items.c.revision > since
            )
        ).all()
        for item_id, hash_now, loaded, archived, item_tier in written:
            inside = loaded if tier is None else (not archived and item_tier == tier.value)
            hash_before = before.get(item_id)
            if inside:
                now[item_id] = hash_now
                if hash_before != hash_now:
                    changed.append(item_id)
            elif hash_before is not None:
                del now[item_id]
                removed.append(item_id)
        return now, changed, sorted(removed)

    # -- stats -------------------------------------------------------------

    def stats(self) -> MemoryStats:
        """Totals, per-tier counts and tokens, the working set and the number of checkpoints."""
        with self.store.read() as conn:
            # Two index-only reads: tiers from the tier index, the working set from its own.
            rows = conn.execute(
                select(items.c.tier, items.c.archived, func.count(), func.coalesce(func.sum(items.c.tokens), 0))
                .where(self._mine())
                .group_by(items.c.tier, items.c.archived)
            ).all()
            working_items, working_tokens = conn.execute(
                select(func.count(), func.coalesce(func.sum(items.c.tokens), 0)).where(
                    self._mine(), items.c.loaded.is_(True)
                )
            ).one()
            checkpoint_count = conn.execute(
                select(func.count()).select_from(checkpoints).where(checkpoints.c.agent_id == self.agent_id)
            ).scalar_one()
        counts = dict.fromkeys(("HOT", "WARM", "COLD"), 0)
        tokens = dict.fromkeys(("HOT", "WARM", "COLD"), 0)
        archived = 0
        for tier, is_archived, count, token_sum in rows:
            counts[tier] += count
            tokens[tier] += int(token_sum)
            archived += count if is_archived else 0
        return MemoryStats(
            agent_id=self.agent_id,
            total_items=sum(counts.values()),
            hot_count=counts["HOT"],
            warm_count=counts["WARM"],
            cold_count=counts["COLD"],
            archived_count=archived,
            hot_tokens=tokens["HOT"],
            warm_tokens=tokens["WARM"],
            cold_tokens=tokens["COLD"],
            total_tokens=sum(tokens.values()),
            working_items=working_items,
            working_tokens=int(working_tokens),
            checkpoints=checkpoint_count,
        )


def _json_rows(dialect: str) -> ColumnElement[str]:
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

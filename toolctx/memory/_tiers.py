"""Rescoring an agent's items and moving them between tiers.

The default scorer runs inside the database as one UPDATE of the scores; any other
scorer reads the items, scores them in Python (vectorised when it can) and writes the
scores back. Either way only the items whose score left their tier are then moved.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sqlalchemy import ColumnElement, and_, bindparam, case, func, literal, select, update
from sqlalchemy.engine import Connection

from toolctx.errors import ConfigError
from toolctx.memory._config import MemoryConfig
from toolctx.memory._results import TierUpdateResult
from toolctx.memory._rows import chunks, mine
from toolctx.memory._schema import items
from toolctx.memory._scoring import SECONDS_PER_DAY, ImportanceScorer, ScoreBatch, TierThresholds, score_batch

__all__ = ["unconfigured_types", "update_tiers"]

TIER_RANK = {"COLD": 0, "WARM": 1, "HOT": 2}


def update_tiers(conn: Connection, agent_id: str, config: MemoryConfig, revision: int) -> TierUpdateResult:
    """Rescore every unarchived item of the agent and move it to its tier, writing at ``revision``.

    With the default scorer, an item of a type missing from ``type_weights`` (and without
    a weight of its own) makes the database refuse the update with an IntegrityError; see
    :func:`unconfigured_types` for the message to give instead.
    """
    now = config.clock()
    if type(config.scorer) is ImportanceScorer:
        _score_in_database(conn, agent_id, config, config.scorer, now)
    else:
        _score_in_python(conn, agent_id, config, now)
    return _retier(conn, agent_id, config.thresholds, revision)


def unconfigured_types(conn: Connection, agent_id: str, config: MemoryConfig) -> ConfigError | None:
    """The error naming the stored item types (of items without a weight of their own) ``config`` lacks."""
    stored = conn.execute(
        select(items.c.item_type)
        .distinct()
        .where(mine(agent_id), items.c.archived.is_(False), items.c.weight.is_(None))
    ).scalars()
    return _unconfigured(config, stored)


def _unconfigured(config: MemoryConfig, stored_types: Iterable[str]) -> ConfigError | None:
    unknown = sorted(set(stored_types) - set(config.type_weights))
    if not unknown:
        return None
    return ConfigError(
        f"items of type {', '.join(map(repr, unknown))} are stored but not in type_weights; "
        "add the type back to MemoryConfig(type_weights=...)"
    )


def _score_in_database(
    conn: Connection, agent_id: str, config: MemoryConfig, scorer: ImportanceScorer, now: float
) -> None:
    type_weight = case(  # no ELSE: an unconfigured type scores NULL, which the column refuses
        {name: literal(float(w)) for name, w in config.type_weights.items()}, value=items.c.item_type
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
        .where(mine(agent_id), items.c.archived.is_(False))
        .values(importance_score=case((raw >= 1.0, 1.0), else_=raw))
    )


def _score_in_python(conn: Connection, agent_id: str, config: MemoryConfig, now: float) -> None:
    rows = conn.execute(
        select(items.c.id, items.c.item_type, items.c.weight, items.c.created_at, items.c.access_count).where(
            mine(agent_id), items.c.archived.is_(False)
        )
    ).all()
    if not rows:
        return
    ids, types, weights, created, accesses = zip(*rows, strict=True)
    error = _unconfigured(config, (t for t, w in zip(types, weights, strict=True) if w is None))
    if error is not None:
        raise error
    known = config.type_weights
    batch = ScoreBatch(
        item_types=types,
        weight=np.fromiter((known[t] if w is None else w for t, w in zip(types, weights, strict=True)), float),
        age_days=(now - np.asarray(created, dtype=np.float64)) / SECONDS_PER_DAY,
        access_count=np.asarray(accesses, dtype=np.float64),
    )
    scores = score_batch(config.scorer, batch).tolist()
    conn.execute(
        update(items).where(items.c.id == bindparam("b_id")).values(importance_score=bindparam("b_score")),
        [{"b_id": item_id, "b_score": score} for item_id, score in zip(ids, scores, strict=True)],
    )


def _tier_by_score(thresholds: TierThresholds) -> ColumnElement[str]:
    """The tier each item's stored score puts it in."""
    return case(
        (items.c.importance_score >= thresholds.hot, literal("HOT")),
        (items.c.importance_score >= thresholds.warm, literal("WARM")),
        else_=literal("COLD"),
    )


def _retier(conn: Connection, agent_id: str, thresholds: TierThresholds, revision: int) -> TierUpdateResult:
    """Move every unarchived item to the tier its stored score says, counting the moves.

    One read finds the few items that move; only their rows (and index entries) are
    rewritten, where an UPDATE of every row's tier would rewrite every index entry.
    """
    new_tier = _tier_by_score(thresholds)
    unarchived = and_(mine(agent_id), items.c.archived.is_(False))
    moves = conn.execute(select(items.c.id, items.c.tier, new_tier).where(unarchived, items.c.tier != new_tier)).all()
    moving: dict[str, list[int]] = {}
    promoted = demoted = 0
    for item_id, old, new in moves:
        moving.setdefault(new, []).append(item_id)
        promoted += TIER_RANK[new] > TIER_RANK[old]
        demoted += TIER_RANK[new] < TIER_RANK[old]
    for new, ids in moving.items():
        for chunk in chunks(ids):
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

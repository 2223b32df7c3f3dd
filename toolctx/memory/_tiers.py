"""Rescoring an agent's items and moving them between tiers.

The default scorer runs inside the database as one UPDATE of the scores; any other
scorer reads the items, scores them in Python (vectorised when it can) and writes the
scores back. Either way only the items whose score left their tier are then moved,
and an item that turns COLD leaves the working set: the agent stops holding what it
left alone (it stays stored, and in the tier, until a flash save archives it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from sqlalchemy import ColumnElement, and_, bindparam, case, func, literal, select, update
from sqlalchemy.engine import Connection

from toolctx.errors import ConfigError
from toolctx.memory._config import MemoryConfig
from toolctx.memory._results import TierUpdateResult
from toolctx.memory._rows import chunks, mine
from toolctx.memory._schema import agents, items
from toolctx.memory._scoring import SECONDS_PER_DAY, ImportanceScorer, ScoreBatch, TierThresholds, score_batch

__all__ = ["agent_step", "unconfigured_types", "update_tiers"]

TIER_RANK = {"COLD": 0, "WARM": 1, "HOT": 2}


def agent_step(conn: Connection, agent_id: str) -> int:
    """The agent's step counter now."""
    step: int = conn.execute(select(agents.c.steps).where(agents.c.agent_id == agent_id)).scalar_one()
    return step


def update_tiers(
    conn: Connection, agent_id: str, config: MemoryConfig, revision: int, only: Sequence[int] | None = None
) -> TierUpdateResult:
    """Rescore the agent's unarchived items (or ``only`` these) and move them to their tiers, at ``revision``.

    With the default scorer, an item of a type missing from ``type_weights`` (and without
    a weight of its own) makes the database refuse the update with an IntegrityError; see
    :func:`unconfigured_types` for the message to give instead.
    """
    now = config.clock()
    step = agent_step(conn, agent_id)
    scope = and_(mine(agent_id), items.c.archived.is_(False))
    if only is not None:
        scope = and_(scope, items.c.id.in_(only))
    if type(config.scorer) is ImportanceScorer:
        _score_in_database(conn, scope, config, config.scorer, now, step)
    else:
        _score_in_python(conn, scope, config, now, step)
    return _retier(conn, agent_id, scope, config.thresholds, revision)


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
    conn: Connection, scope: ColumnElement[bool], config: MemoryConfig, scorer: ImportanceScorer, now: float, step: int
) -> None:
    type_weight = case(  # no ELSE: an unconfigured type scores NULL, which the column refuses
        {name: literal(float(w)) for name, w in config.type_weights.items()}, value=items.c.item_type
    )
    idle_days = (literal(now) - items.c.last_accessed) / SECONDS_PER_DAY
    idle_steps = literal(step) - items.c.last_step
    idle = (
        case((idle_steps > 0, idle_steps), else_=0) / scorer.decay_steps
        + case((idle_days > 0.0, idle_days), else_=0.0) / scorer.decay_days
    )
    raw = (
        func.coalesce(items.c.weight, type_weight)
        * case((items.c.pinned.is_(True), 1.0), else_=func.exp(-idle))
        * (1.0 + scorer.access_factor * func.ln(1.0 + items.c.access_count))
    )
    # raw >= 0 (weight >= 0, boost >= 1), so only the top needs clamping. A CASE lets a
    # NULL through on both databases; PostgreSQL's LEAST would turn it into 1.0.
    conn.execute(update(items).where(scope).values(importance_score=case((raw >= 1.0, 1.0), else_=raw)))


def _score_in_python(conn: Connection, scope: ColumnElement[bool], config: MemoryConfig, now: float, step: int) -> None:
    rows = conn.execute(
        select(
            items.c.id,
            items.c.item_type,
            items.c.weight,
            items.c.created_at,
            items.c.access_count,
            items.c.last_accessed,
            items.c.last_step,
            items.c.pinned,
        ).where(scope)
    ).all()
    if not rows:
        return
    ids, types, weights, created, accesses, used, used_step, pinned = zip(*rows, strict=True)
    error = _unconfigured(config, (t for t, w in zip(types, weights, strict=True) if w is None))
    if error is not None:
        raise error
    known = config.type_weights
    batch = ScoreBatch(
        item_types=types,
        weight=np.fromiter((known[t] if w is None else w for t, w in zip(types, weights, strict=True)), float),
        age_days=(now - np.asarray(created, dtype=np.float64)) / SECONDS_PER_DAY,
        access_count=np.asarray(accesses, dtype=np.float64),
        idle_days=(now - np.asarray(used, dtype=np.float64)) / SECONDS_PER_DAY,
        idle_steps=step - np.asarray(used_step, dtype=np.float64),
        pinned=np.asarray(pinned, dtype=bool),
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


def _retier(
    conn: Connection, agent_id: str, scope: ColumnElement[bool], thresholds: TierThresholds, revision: int
) -> TierUpdateResult:
    """Move every item in ``scope`` to the tier its stored score says, counting the moves.

    One read finds the few items that move; only their rows (and index entries) are
    rewritten, where an UPDATE of every row's tier would rewrite every index entry.
    Items moving to COLD leave the working set.
    """
    new_tier = _tier_by_score(thresholds)
    unarchived = and_(mine(agent_id), items.c.archived.is_(False))
    moves = conn.execute(select(items.c.id, items.c.tier, new_tier).where(scope, items.c.tier != new_tier)).all()
    moving: dict[str, list[int]] = {}
    promoted = demoted = 0
    for item_id, old, new in moves:
        moving.setdefault(new, []).append(item_id)
        promoted += TIER_RANK[new] > TIER_RANK[old]
        demoted += TIER_RANK[new] < TIER_RANK[old]
    for new, ids in moving.items():
        for chunk in chunks(ids):
            values: dict[str, object] = {"tier": new, "revision": revision}
            if new == "COLD":
                values["loaded"] = False
            conn.execute(update(items).where(items.c.id.in_(chunk)).values(**values))
    # Counted after the move, from the index of unarchived items alone.
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

"""One agent's view of a memory store: saving, loading, tiers, flash save, checkpoints and diffs.

:class:`AgentMemory` checks what it is given, opens the transaction, logs and
publishes the store's change event; the statements themselves live in one module per
job: saving, reading, tiers, checkpoints and diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from toolctx._checks import non_empty_text, whole_number
from toolctx._internal import DEBUG, log
from toolctx.errors import ConfigError, UnknownAgentError
from toolctx.memory import _checkpoints, _diff, _reading, _saving, _tiers
from toolctx.memory._feed import stamp
from toolctx.memory._items import ContextItem, Tier
from toolctx.memory._results import (
    CheckpointInfo,
    ContextDiff,
    ContextSnapshot,
    FlashSaveResult,
    MemoryStats,
    RestoreResult,
    TierUpdateResult,
)
from toolctx.memory._rows import one_item, parse_tier
from toolctx.memory._schema import MAX_AGENT_ID, MAX_DATABASE_INTEGER, agents

if TYPE_CHECKING:
    from toolctx.memory._base import StoreCore

__all__ = ["AgentMemory", "check_agent_id", "positive"]


def positive(name: str, value: object) -> int:
    """An id or a limit: a whole number from 1 to what the database's 64-bit integers hold."""
    return whole_number(name, value, minimum=1, maximum=MAX_DATABASE_INTEGER)


def check_agent_id(value: object) -> str:
    """An agent id both databases can hold: text of up to 200 characters, without NUL or lone surrogates."""
    agent_id = non_empty_text("agent_id", value, max_length=MAX_AGENT_ID)
    if "\x00" in agent_id or not _encodable(agent_id):
        raise ConfigError(f"agent_id must be text without NUL characters or lone surrogates, got {agent_id!r:.80}")
    return agent_id


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# What a change event of update_tiers or flash_save says by itself; extra fields may not replace it.
_EVENT_OWN_FIELDS = frozenset(
    {"event", "agent_id", "revision", *TierUpdateResult.model_fields, *FlashSaveResult.model_fields}
)


def _event_fields(event: object) -> dict[str, Any]:
    """Extra change-event fields: a mapping of text keys that leaves the event's own fields alone."""
    if event is None:
        return {}
    if not isinstance(event, Mapping) or not all(isinstance(key, str) for key in event):
        raise ConfigError(f"event must be a mapping of field names to values, not {event!r:.80}")
    taken = sorted(set(event) & _EVENT_OWN_FIELDS)
    if taken:
        raise ConfigError(f"event field {taken[0]!r} is set by the store itself; name yours otherwise")
    return dict(event)


def _id_list(item_ids: object) -> list[object]:
    if isinstance(item_ids, str | bytes) or not isinstance(item_ids, Iterable):
        raise ConfigError(f"item_ids must be a list of item ids, not {item_ids!r:.80}")
    return list(item_ids)


@dataclass
class Write:
    """A write transaction of one agent: its connection, the agent revision it writes at, and its event's details."""

    conn: Connection
    revision: int
    step: int
    details: dict[str, Any] = field(default_factory=dict)


class AgentMemory:
    """One agent's items, tiers, working set and checkpoints. Get it from :meth:`MemoryStore.agent`.

    The working set is what the agent currently holds in its context: items it saved
    and items it loaded, until a flash save cuts it back to HOT. It is recorded in the
    database, so another process (or the HTTP API) sees the same working set.
    """

    def __init__(self, store: StoreCore, agent_id: str, *, create_on_write: bool = False):
        """``create_on_write=True`` registers an unknown agent in its first write's transaction.

        So a refused save (an unknown type, empty content) registers nothing; without
        it, writes of an agent that is not registered raise UnknownAgentError.
        """
        self.store = store
        self.agent_id = check_agent_id(agent_id)
        self.config = store.config
        self._create_on_write = create_on_write

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, {self.store!r})"

    @contextmanager
    def _write(self, event: str | None = None, *, step: bool = False) -> Iterator[Write]:
        """A write transaction holding this agent's lock (see the module docstring), and its revision.

        Every item row a write changes in a way a snapshot would see records the write's
        revision, so :meth:`diff` needs to read only the rows newer than its snapshot. The
        store's revision is bumped last, and once the transaction has committed ``event``
        (unless None) is published with the details the body put in :attr:`Write.details`.
        ``step=True`` counts the write as one of the agent's steps (it saves or uses items).
        """
        with self.store.write() as conn:
            bumped = self._bump(conn, step)
            if bumped is None and self._create_on_write:
                self.store.register_agent(conn, self.agent_id)
                bumped = self._bump(conn, step)
            if bumped is None:
                raise UnknownAgentError(f"no agent {self.agent_id!r} in this memory store")
            write = Write(conn, *bumped)
            yield write
            store_revision = stamp(conn, self.agent_id)
        if event is not None:
            self.store.publish({"event": event, "agent_id": self.agent_id, "revision": store_revision, **write.details})

    def _bump(self, conn: Connection, step: bool) -> tuple[int, int] | None:
        """Lock the agent's row and bump its revision (and its step counter if ``step``); both, or None."""
        row = conn.execute(
            update(agents)
            .where(agents.c.agent_id == self.agent_id)
            .values(
                revision=agents.c.revision + 1,
                steps=agents.c.steps + (1 if step else 0),
                updated_at=self.config.clock(),
            )
            .returning(agents.c.revision, agents.c.steps)
        ).first()
        return None if row is None else (row[0], row[1])

    # -- saving ------------------------------------------------------------

    def save(
        self,
        item_type: str,
        content: str,
        *,
        importance_score: float | None = None,
        loaded: bool = True,
        pinned: bool | None = None,
    ) -> ContextItem:
        """Store one item and return it with its id and tier; one step of the agent.

        Without ``importance_score`` the item's base importance is its type's weight;
        with one, that score is the item's own base importance, which then decays with
        disuse like any other. ``loaded=True`` puts the item in the working set (the agent
        has it in context, since it just produced it). ``pinned`` (by default: whether
        the type is one of ``MemoryConfig.pinned_types``) keeps it from decaying until
        :meth:`complete_task`.
        """
        row = _saving.item_row(
            self.config, self.agent_id, item_type, content, importance_score, self.config.clock(), loaded, pinned
        )
        with self._write("saved", step=True) as write:
            [item_id] = _saving.insert_items(write.conn, write.revision, [row], write.step)
            write.details["item_ids"] = [item_id]
        log(DEBUG, "memory_saved", agent=self.agent_id, id=item_id, item_type=item_type, tier=row["tier"])
        return _saving.saved_item(item_id, row)

    def save_many(
        self, entries: Iterable[tuple[str, str] | tuple[str, str, float | None]], *, loaded: bool = True
    ) -> list[int]:
        """Store many ``(item_type, content[, importance_score])`` entries in one transaction (and step); their ids.

        Every entry is checked before anything is written: one bad entry stores none.
        """
        now = self.config.clock()
        rows = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) not in (2, 3):
                raise ConfigError(f"entry {index} must be (item_type, content[, importance_score]), not {entry!r:.80}")
            score = entry[2] if len(entry) == 3 else None
            rows.append(_saving.item_row(self.config, self.agent_id, entry[0], entry[1], score, now, loaded))
        if not rows:
            return []
        with self._write("saved", step=True) as write:
            ids = _saving.insert_items(write.conn, write.revision, rows, write.step)
            write.details["item_ids"] = ids
        log(DEBUG, "memory_saved_many", agent=self.agent_id, count=len(ids))
        return ids

    def update(self, item_id: int, content: str) -> ContextItem:
        """Replace an item's content (its hash and token estimate follow); a diff reports it as modified.

        Rewriting an item is a use of it (see :meth:`use`), and one step of the agent.
        """
        positive("item_id", item_id)
        content = self.config.redacted(_saving.check_content(content, self.config.max_content_bytes))
        tokens = self.config.count_tokens(content)
        with self._write("saved", step=True) as write:
            _saving.replace_content(
                write.conn,
                self.agent_id,
                write.revision,
                item_id,
                content,
                tokens=tokens,
                now=self.config.clock(),
                step=write.step,
            )
            _tiers.update_tiers(write.conn, self.agent_id, self.config, write.revision, only=[item_id])
            item = one_item(write.conn, self.agent_id, item_id)
            write.details.update(item_ids=[item_id], modified=True)
        return item

    def use(self, item_ids: Iterable[int]) -> list[ContextItem]:
        """Record that the agent used these items (read them again, acted on them); the items now, best first.

        Each counts an access, its recency starts again (so an item in use stays HOT),
        it is rescored and re-tiered at once, and it is back in the working set (an
        archived item comes back too). One step of the agent.
        """
        wanted = sorted({positive("item_id", item_id) for item_id in _id_list(item_ids)})
        now = self.config.clock()
        with self._write("saved", step=True) as write:
            _reading.use_items(write.conn, self.agent_id, write.revision, wanted, now=now, step=write.step)
            _tiers.update_tiers(write.conn, self.agent_id, self.config, write.revision, only=wanted)
            used = _reading.some_items(write.conn, self.agent_id, wanted)
            write.details.update(item_ids=wanted, used=True)
        return used

    def complete_task(self) -> list[int]:
        """The current task is done: unpin its items (they decay from now on); their ids.

        Call :meth:`update_tiers` next, or let :meth:`MemoryStore.task_completed` do both.
        """
        with self._write(None) as write:
            unpinned = _reading.unpin(write.conn, self.agent_id, now=self.config.clock(), step=write.step)
        log(DEBUG, "memory_task_completed", agent=self.agent_id, unpinned=len(unpinned))
        return unpinned

    def save_context_item(self, item_type: str, content: str, importance_score: float | None = None) -> int:
        """The seed's name: :meth:`save` an item and return its id."""
        return self.save(item_type, content, importance_score=importance_score).id

    # -- reading -----------------------------------------------------------

    def get(self, item_id: int) -> ContextItem:
        """One item by id, without counting an access."""
        positive("item_id", item_id)
        with self.store.read() as conn:
            return one_item(conn, self.agent_id, item_id)

    def items(
        self, tier: Tier | str | None = None, *, archived: bool = False, limit: int | None = None
    ) -> list[ContextItem]:
        """Items of a tier (or all), best first, without counting an access: for looking, not loading."""
        wanted = None if tier is None else parse_tier(tier)
        limit = None if limit is None else positive("limit", limit)
        with self.store.read() as conn:
            return _reading.list_items(conn, self.agent_id, wanted, archived=archived, limit=limit)

    def load(self, tier: Tier | str = Tier.HOT, *, limit: int | None = None) -> list[ContextItem]:
        """Load a tier into the working set, best first; each loaded item counts one access.

        Loading is a use: each loaded item's decay starts again, on both clocks (the
        agent's steps and the days; see :mod:`toolctx.memory`'s scoring). It is not a
        step of the agent itself. Archived items are not loaded by tier;
        :meth:`restore` brings them back.
        """
        wanted = parse_tier(tier)
        limit = None if limit is None else positive("limit", limit)
        with self._write(None) as write:
            loaded = _reading.load_tier(
                write.conn, self.agent_id, write.revision, wanted, limit=limit, now=self.config.clock(), step=write.step
            )
        log(DEBUG, "memory_loaded", agent=self.agent_id, tier=wanted.value, count=len(loaded))
        return loaded

    def load_context(self, tier: Tier | str = Tier.HOT) -> list[ContextItem]:
        """The seed's name for :meth:`load`."""
        return self.load(tier)

    def working_set(self) -> list[ContextItem]:
        """The items the agent currently holds in context, best first."""
        with self.store.read() as conn:
            return _reading.working_set(conn, self.agent_id)

    def stats(self) -> MemoryStats:
        """Totals, per-tier counts and tokens, the working set and the number of checkpoints."""
        with self.store.read() as conn:
            return _reading.stats(conn, self.agent_id)

    # -- scoring -----------------------------------------------------------

    def update_tiers(self, *, event: Mapping[str, Any] | None = None) -> TierUpdateResult:
        """Rescore every unarchived item and move it to its tier; run it after each task.

        The default scorer runs inside the database as one UPDATE of the scores; a custom
        scorer reads the items, scores them in Python (vectorised when it can) and writes
        the scores back. Either way only the items whose score left their tier are then moved.
        ``event`` adds fields to the ``"tiers_updated"`` change event (the store's
        triggers say why they ran: ``{"trigger": "task_completed"}``).
        """
        details = _event_fields(event)
        try:
            with self._write("tiers_updated") as write:
                result = _tiers.update_tiers(write.conn, self.agent_id, self.config, write.revision)
                write.details.update(result.model_dump(), **details)
        except IntegrityError:
            # The database scorer gives a type missing from type_weights no weight, so
            # its score is NULL and the NOT NULL column refuses the whole update.
            with self.store.read() as conn:
                error = _tiers.unconfigured_types(conn, self.agent_id, self.config)
            if error is not None:
                raise error from None
            raise
        log(DEBUG, "memory_tiers_updated", agent=self.agent_id, **result.model_dump())
        return result

    # -- flash save and checkpoints ----------------------------------------

    def should_flash_save(self, current_tokens: int, token_limit: int) -> bool:
        """Whether ``current_tokens`` has reached ``flash_fraction`` (80%) of ``token_limit``."""
        whole_number("current_tokens", current_tokens, unit="tokens")
        whole_number("token_limit", token_limit, minimum=1, unit="tokens")
        return current_tokens >= self.config.flash_fraction * token_limit

    def flash_save(self, *, event: Mapping[str, Any] | None = None) -> FlashSaveResult:
        """Checkpoint the working set's HOT and WARM items, archive COLD items, and resume with HOT only.

        All of it happens in one transaction: a failure leaves no checkpoint and no
        change, and two processes flash-saving one agent take turns. Tiers are those of
        the last :meth:`update_tiers`. Reloading the HOT tier counts as an access.
        ``event`` adds fields to the ``"flash_saved"`` change event (as in :meth:`update_tiers`).
        """
        details = _event_fields(event)
        now = self.config.clock()
        with self._write("flash_saved") as write:
            result = _checkpoints.flash_save(write.conn, self.agent_id, write.revision, now, write.step)
            write.details.update(result.model_dump(), **details)
        log(DEBUG, "memory_flash_saved", agent=self.agent_id, **result.model_dump())
        return result

    def archive(self, item_ids: Iterable[int]) -> list[int]:
        """Archive these items now (as a flash save archives COLD ones); the ids that were not archived yet.

        Archived items leave the working set and are no longer rescored or loaded by tier;
        :meth:`restore` of a checkpoint that holds them brings them back. Ids of other
        agents' items, or of no item, raise :class:`~toolctx.errors.UnknownItemError`.
        """
        wanted = sorted({positive("item_id", item_id) for item_id in _id_list(item_ids)})
        with self._write("archived") as write:
            archived = _saving.archive_items(write.conn, self.agent_id, write.revision, wanted)
            write.details["item_ids"] = archived
        log(DEBUG, "memory_archived", agent=self.agent_id, count=len(archived))
        return archived

    def delete(self, item_ids: Iterable[int]) -> list[int]:
        """Delete these items and every content they had; the ids deleted.

        Checkpoints that recorded them restore without them, and a diff against an
        earlier snapshot reports them removed. Ids of other agents' items, or of no
        item, raise :class:`~toolctx.errors.UnknownItemError` and delete nothing.
        """
        wanted = sorted({positive("item_id", item_id) for item_id in _id_list(item_ids)})
        if not wanted:
            return []
        with self._write("deleted") as write:
            _saving.delete_items(write.conn, self.agent_id, write.revision, wanted)
            write.details["item_ids"] = wanted
        log(DEBUG, "memory_deleted", agent=self.agent_id, count=len(wanted))
        return wanted

    def checkpoints(self) -> list[CheckpointInfo]:
        """This agent's checkpoints, newest first."""
        with self.store.read() as conn:
            return _checkpoints.list_checkpoints(conn, self.agent_id)

    def restore(self, checkpoint_id: int) -> RestoreResult:
        """Make the working set the items a checkpoint recorded (unarchiving any archived since).

        The returned items are as the checkpoint recorded them; the store keeps their
        current content, so :meth:`diff` against the checkpoint shows what changed since.
        """
        positive("checkpoint_id", checkpoint_id)
        with self._write("restored") as write:
            recorded = _checkpoints.restore(write.conn, self.agent_id, write.revision, checkpoint_id)
            write.details.update(checkpoint_id=checkpoint_id, item_ids=[item.id for item in recorded])
        log(DEBUG, "memory_restored", agent=self.agent_id, checkpoint=checkpoint_id, count=len(recorded))
        return RestoreResult(checkpoint_id=checkpoint_id, items=recorded, tokens=sum(item.tokens for item in recorded))

    # -- diffing -----------------------------------------------------------

    def snapshot(self, tier: Tier | str | None = Tier.HOT) -> ContextSnapshot:
        """The ids and content hashes of a tier (HOT by default) or, with ``tier=None``, of the working set."""
        wanted = None if tier is None else parse_tier(tier)
        with self.store.read() as conn:
            return _diff.snapshot(conn, self.agent_id, wanted, self.config.clock())

    def diff(self, previous: ContextSnapshot | int) -> ContextDiff:
        """What changed in a context since ``previous``: a snapshot, or a checkpoint id.

        A snapshot is compared with the same tier (or the working set) now; a checkpoint
        with the working set now. Only the items written since ``previous`` are read, and
        only the added and modified ones in full. A snapshot without a revision (built by
        hand) is compared with the whole context instead.
        """
        if not isinstance(previous, ContextSnapshot):
            positive("checkpoint_id", previous)
        with self.store.read() as conn:
            return _diff.diff(conn, self.agent_id, previous, self.config.clock())

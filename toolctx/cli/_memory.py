"""``toolctx memory``: agents, items by tier, checkpoints, flash save, restore and diff from a shell."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from toolctx.cli._output import DbOption, JsonOption, emit_json, guarded, open_memory, out, plain, table, visible
from toolctx.errors import ConfigError

__all__ = ["memory_app"]

memory_app = typer.Typer(
    help="The tiered memory: agents, items by tier, checkpoints, flash save, restore and diff.",
    no_args_is_help=True,
)

AgentArgument = Annotated[str, typer.Argument(help="The agent id (see `toolctx memory agents`).")]
CheckpointArgument = Annotated[int, typer.Argument(help="A checkpoint id (see `toolctx memory checkpoints`).")]
_TIERS = ("HOT", "WARM", "COLD")


def _agent(store: Any, agent_id: str) -> Any:
    return store.agent(agent_id, create=False)  # reading or acting never registers an agent


@memory_app.command("agents")
@guarded
def agents(db: DbOption = None, json: JsonOption = False) -> None:
    """Every agent with its items and tokens per tier (archived items apart)."""
    with open_memory(db) as store:
        summaries = store.agents()
    if json:
        emit_json(summaries)
        return
    if not summaries:
        out.print("no agents in this memory yet")
        return
    rows = [
        [
            s.agent_id,
            s.hot_count,
            s.hot_tokens,
            s.warm_count,
            s.warm_tokens,
            s.cold_count,
            s.cold_tokens,
            s.archived_count,
            s.updated_at or s.created_at,
        ]
        for s in summaries
    ]
    columns = ["agent", "HOT", "tokens", "WARM", "tokens", "COLD", "tokens", "archived", "updated (UTC)"]
    out.print(table(None, columns, rows))


@memory_app.command("items")
@guarded
def items(
    agent_id: AgentArgument,
    tier: Annotated[str | None, typer.Option(help="Only this tier: HOT, WARM or COLD.", show_default=False)] = None,
    archived: Annotated[bool, typer.Option(help="Include archived items.")] = False,
    limit: Annotated[int | None, typer.Option(help="At most this many items, best first.", show_default=False)] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """An agent's items, best first, grouped by tier (looking does not count as an access)."""
    if tier is not None and tier.upper() not in _TIERS:
        raise ConfigError(f"--tier {tier!r:.40} is not a tier; use HOT, WARM or COLD")
    with open_memory(db) as store:
        found = _agent(store, agent_id).items(tier and tier.upper(), archived=archived, limit=limit)
    if json:
        emit_json(found)
        return
    for name in _TIERS:
        group = [i for i in found if i.tier.value == name]
        if not group:
            continue
        rows = [
            [i.id, i.item_type, round(i.importance_score, 3), i.tokens, i.access_count, _flags(i), _line(i.content)]
            for i in group
        ]
        columns = ["id", "type", "score", "tokens", "accesses", "", "content"]
        out.print(table(f"{name} ({len(group)})", columns, rows))
    if not found:
        out.print(plain(f"agent {agent_id!r} has no {'' if tier is None else tier.upper() + ' '}items"))


def _flags(item: Any) -> str:
    return " ".join(name for name, on in (("loaded", item.loaded), ("archived", item.archived)) if on)


def _line(text: str, width: int = 80) -> str:
    first = visible(" ".join(text.split()))
    return first if len(first) <= width else first[: width - 1] + "…"


@memory_app.command("checkpoints")
@guarded
def checkpoints(agent_id: AgentArgument, db: DbOption = None, json: JsonOption = False) -> None:
    """An agent's flash-save checkpoints, oldest first."""
    with open_memory(db) as store:
        found = _agent(store, agent_id).checkpoints()
    if json:
        emit_json(found)
        return
    rows = [[c.id, c.created_at, c.item_count, c.items_archived, c.tokens_before, c.tokens_after] for c in found]
    columns = ["id", "at (UTC)", "items", "archived", "tokens before", "tokens after"]
    out.print(table(f"checkpoints of {agent_id}", columns, rows))


@memory_app.command("flash-save")
@guarded
def flash_save(agent_id: AgentArgument, db: DbOption = None, json: JsonOption = False) -> None:
    """Checkpoint the working set's HOT and WARM items, archive COLD ones, keep HOT loaded."""
    with open_memory(db, write=True) as store:
        result = _agent(store, agent_id).flash_save()
    if json:
        emit_json(result)
        return
    out.print(
        f"checkpoint {result.checkpoint_id}: {result.items_checkpointed} items saved, "
        f"{result.items_archived} archived, {result.tokens_before:,} -> {result.tokens_after:,} tokens",
        markup=False,
    )


@memory_app.command("restore")
@guarded
def restore(
    agent_id: AgentArgument, checkpoint_id: CheckpointArgument, db: DbOption = None, json: JsonOption = False
) -> None:
    """Make the agent's working set what a checkpoint recorded."""
    with open_memory(db, write=True) as store:
        result = _agent(store, agent_id).restore(checkpoint_id)
    if json:
        emit_json(result)
        return
    out.print(
        f"restored checkpoint {result.checkpoint_id}: {len(result.items)} items, "
        f"{result.tokens:,} tokens in the working set",
        markup=False,
    )


@memory_app.command("diff")
@guarded
def diff(
    agent_id: AgentArgument, checkpoint_id: CheckpointArgument, db: DbOption = None, json: JsonOption = False
) -> None:
    """What changed in the agent's HOT tier since a checkpoint: reload added and modified, drop removed."""
    with open_memory(db) as store:
        result = _agent(store, agent_id).diff(checkpoint_id)
    if json:
        emit_json(result)
        return
    for name, ids in (
        ("added", [i.id for i in result.added]),
        ("modified", [i.id for i in result.modified]),
        ("removed", result.removed),
    ):
        out.print(f"{name} ({len(ids)}): {', '.join(map(str, ids)) or '-'}", markup=False)
    out.print(f"unchanged: {result.unchanged}", markup=False)

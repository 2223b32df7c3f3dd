"""The memory store: tiered memory for any number of agents, in one SQLite file or PostgreSQL database."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import URL, Engine

from toolctx.errors import UnknownAgentError
from toolctx.memory._agent import AgentMemory, check_agent_id
from toolctx.memory._base import StoreCore
from toolctx.memory._config import MemoryConfig
from toolctx.memory._feed import stamp
from toolctx.memory._results import FlashSaveResult, TierUpdateResult
from toolctx.memory._schema import agents
from toolctx.memory._triggers import MemoryTriggers

__all__ = ["MemoryStore"]


class MemoryStore(StoreCore):
    """Tiered memory for any number of agents, in one SQLite file or PostgreSQL database.

    ``url`` is a path or ``sqlite:///path.db``, a ``postgresql://user:pw@host/db``
    URL, an SQLAlchemy Engine, or None for ``$TOOLCTX_MEMORY_URL`` or else
    ``~/.agent/memory.db``. Missing tables are created. Open one store per process
    (engines do not survive ``fork``) and get each agent with :meth:`agent`.
    ``triggers`` sets up the automatic flash save and re-tiering (see
    :class:`MemoryTriggers`); by default all of it is on.
    """

    def __init__(
        self,
        url: str | os.PathLike[str] | URL | Engine | None = None,
        *,
        config: MemoryConfig | None = None,
        triggers: Mapping[str, Any] | None = None,
    ):
        super().__init__(url, config=config)
        #: The store's automatic flash save and re-tiering, which :meth:`before_model_call` and
        #: :meth:`task_completed` run.
        self.triggers = MemoryTriggers(self, **dict(triggers or {}))

    def before_model_call(self, agent_id: str, prompt_tokens: int, window: int) -> FlashSaveResult | None:
        """Call before each model call of ``agent_id``: flash saves at 80 % of ``window``, re-tiers as it works.

        ``prompt_tokens`` is the size of the prompt about to be sent, ``window`` the
        model's context window, in tokens. Returns the flash save's result when one ran.
        See :class:`MemoryTriggers` for what runs when, and how to switch parts off.
        """
        return self.triggers.before_model_call(agent_id, prompt_tokens, window)

    def task_completed(self, agent_id: str) -> TierUpdateResult | None:
        """Call when ``agent_id`` completes a task: its items are unpinned and the agent re-tiered."""
        return self.triggers.task_completed(agent_id)

    def agent(self, agent_id: str, *, create: bool = True) -> AgentMemory:
        """The memory of ``agent_id``, registering the agent unless ``create=False``.

        With ``create=False`` an agent that has never been registered raises
        :class:`~toolctx.errors.UnknownAgentError` (the HTTP API reads this way).
        """
        check_agent_id(agent_id)
        with self.read() as conn:
            known = conn.execute(select(agents.c.agent_id).where(agents.c.agent_id == agent_id)).first() is not None
        if not known:
            if not create:
                raise UnknownAgentError(f"no agent {agent_id!r} in this memory store; save an item for it first")
            with self.write() as conn:
                added = self.register_agent(conn, agent_id)
                revision = stamp(conn, agent_id) if added else None
            if revision is not None:  # (told after the commit, as every write is)
                self.publish({"event": "registered", "agent_id": agent_id, "revision": revision})
        return AgentMemory(self, agent_id)

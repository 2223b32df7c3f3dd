"""The memory store: tiered memory for any number of agents, in one SQLite file or PostgreSQL database."""

from __future__ import annotations

from sqlalchemy import select

from toolctx.errors import UnknownAgentError
from toolctx.memory._agent import AgentMemory, check_agent_id
from toolctx.memory._base import StoreCore
from toolctx.memory._feed import stamp
from toolctx.memory._schema import agents

__all__ = ["MemoryStore"]


class MemoryStore(StoreCore):
    """Tiered memory for any number of agents, in one SQLite file or PostgreSQL database.

    ``url`` is a path or ``sqlite:///path.db``, a ``postgresql://user:pw@host/db``
    URL, an SQLAlchemy Engine, or None for ``$TOOLCTX_MEMORY_URL`` or else
    ``~/.agent/memory.db``. Missing tables are created. Open one store per process
    (engines do not survive ``fork``) and get each agent with :meth:`agent`.
    """

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
                self._register(conn, agent_id)
                stamp(conn, agent_id)
        return AgentMemory(self, agent_id)

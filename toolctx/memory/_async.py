"""The memory API for asyncio agents: every operation awaitable, run by the one synchronous core.

Each async method runs the synchronous method of the same name in a worker thread
(:func:`asyncio.to_thread`, which carries the caller's context variables), so the
event loop never waits on the database and there is one implementation of each
operation, not two. The seed's agent methods are here under their names:
``save_context_item``, ``load_context``, ``flash_save``, ``update_tiers``.

::

    store = await AsyncMemoryStore.open("sqlite:///memory.db")
    agent = await store.agent("worker-1")
    item_id = await agent.save_context_item("TASK", "Add retry to the uploader")
    hot = await agent.load_context()
    await store.before_model_call("worker-1", prompt_tokens=90_000, window=128_000)
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.engine import URL, Engine

from toolctx.memory._agent import AgentMemory
from toolctx.memory._config import MemoryConfig
from toolctx.memory._feed import ChangeEvent
from toolctx.memory._store import MemoryStore

__all__ = ["AsyncAgentMemory", "AsyncMemoryStore"]

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """An async method that runs ``method`` of the wrapped object (``self.sync``) in a worker thread."""

    @functools.wraps(method)
    async def run(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self.sync, *args, **kwargs)

    owner = "MemoryStore" if method.__qualname__.startswith("StoreCore.") else method.__qualname__.split(".")[0]
    first_line = (method.__doc__ or "").strip().splitlines()[0]
    run.__doc__ = f"Awaitable :meth:`{owner}.{method.__name__}`: {first_line}"
    return run


class AsyncAgentMemory:
    """One agent's memory for asyncio code: the methods of :class:`AgentMemory`, awaitable.

    Get it from :meth:`AsyncMemoryStore.agent`, or wrap an :class:`AgentMemory`.
    ``sync`` is the wrapped synchronous memory, for code that runs in a thread already.
    """

    def __init__(self, memory: AgentMemory):
        if not isinstance(memory, AgentMemory):
            raise TypeError(f"AsyncAgentMemory wraps an AgentMemory, not {type(memory).__name__}")
        self.sync = memory
        self.agent_id = memory.agent_id

    def __repr__(self) -> str:
        return f"AsyncAgentMemory({self.agent_id!r})"

    save = _in_thread(AgentMemory.save)
    save_many = _in_thread(AgentMemory.save_many)
    save_context_item = _in_thread(AgentMemory.save_context_item)
    update = _in_thread(AgentMemory.update)
    use = _in_thread(AgentMemory.use)
    complete_task = _in_thread(AgentMemory.complete_task)
    get = _in_thread(AgentMemory.get)
    items = _in_thread(AgentMemory.items)
    load = _in_thread(AgentMemory.load)
    load_context = _in_thread(AgentMemory.load_context)
    working_set = _in_thread(AgentMemory.working_set)
    stats = _in_thread(AgentMemory.stats)
    update_tiers = _in_thread(AgentMemory.update_tiers)
    flash_save = _in_thread(AgentMemory.flash_save)
    archive = _in_thread(AgentMemory.archive)
    delete = _in_thread(AgentMemory.delete)
    checkpoints = _in_thread(AgentMemory.checkpoints)
    restore = _in_thread(AgentMemory.restore)
    snapshot = _in_thread(AgentMemory.snapshot)
    diff = _in_thread(AgentMemory.diff)

    def should_flash_save(self, current_tokens: int, token_limit: int) -> bool:
        """Whether ``current_tokens`` has reached the flash fraction of ``token_limit`` (no I/O, so not awaited)."""
        return self.sync.should_flash_save(current_tokens, token_limit)


class AsyncMemoryStore:
    """A :class:`MemoryStore` for asyncio code: open it with :meth:`open`, then await its operations.

    ``sync`` is the wrapped :class:`MemoryStore`; :meth:`subscribe` is the store's own
    (callbacks run in the worker thread that wrote: hand events to the loop with
    ``loop.call_soon_threadsafe``).
    """

    def __init__(self, store: MemoryStore):
        if not isinstance(store, MemoryStore):
            raise TypeError(
                f"AsyncMemoryStore wraps a MemoryStore, not {type(store).__name__}; use AsyncMemoryStore.open"
            )
        self.sync = store

    @classmethod
    async def open(
        cls,
        url: str | os.PathLike[str] | URL | Engine | None = None,
        *,
        config: MemoryConfig | None = None,
        triggers: Mapping[str, Any] | None = None,
    ) -> AsyncMemoryStore:
        """Open a store (as :class:`MemoryStore` does, creating missing tables) without blocking the loop."""
        return cls(await asyncio.to_thread(MemoryStore, url, config=config, triggers=triggers))

    def __repr__(self) -> str:
        return f"AsyncMemoryStore({self.sync!r})"

    async def agent(self, agent_id: str, *, create: bool = True) -> AsyncAgentMemory:
        """The memory of ``agent_id`` (see :meth:`MemoryStore.agent`)."""
        return AsyncAgentMemory(await asyncio.to_thread(self.sync.agent, agent_id, create=create))

    agents = _in_thread(MemoryStore.agents)
    agent_ids = _in_thread(MemoryStore.agent_ids)
    revision = _in_thread(MemoryStore.revision)
    before_model_call = _in_thread(MemoryStore.before_model_call)
    task_completed = _in_thread(MemoryStore.task_completed)
    close = _in_thread(MemoryStore.close)

    def subscribe(self, callback: Callable[[ChangeEvent], object]) -> Callable[[], None]:
        """See :meth:`MemoryStore.subscribe`."""
        return self.sync.subscribe(callback)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

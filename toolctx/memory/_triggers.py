"""Memory work that runs by itself: a flash save before the window overflows, re-tiering as the agent works.

An agent loop (or an adapter) calls :meth:`MemoryTriggers.before_model_call` before
each model call with the prompt's size and the model's window, and
:meth:`MemoryTriggers.task_completed` when a task is done; the triggers decide what
to run. Each thing they run sends the store's usual event, with ``"trigger"`` saying why.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import select

from toolctx._checks import fraction, whole_number
from toolctx._internal import DEBUG, log
from toolctx.memory._agent import AgentMemory, check_agent_id
from toolctx.memory._results import FlashSaveResult, TierUpdateResult
from toolctx.memory._schema import agents

if TYPE_CHECKING:
    from toolctx.memory._base import StoreCore

__all__ = ["MemoryTriggers"]


@dataclass
class _AgentState:
    armed: bool = True  # a flash save may run; set again once the prompt is back under the threshold
    tiered_at_step: int | None = None  # the agent's step count at the last re-tiering these triggers ran
    lock: threading.Lock = field(default_factory=threading.Lock)  # one trigger run per agent at a time


class MemoryTriggers:
    """Automatic flash saves and re-tiering for the agents of one store; each part switched on by option.

    - ``flash_save`` (on): when the prompt reaches ``flash_fraction`` of the window
      (by default the store's ``MemoryConfig.flash_fraction``, 80 %), re-tier and flash
      save: the checkpoint keeps HOT and WARM, COLD is archived, the working set is
      cut back to HOT. It runs once per crossing: the prompt must fall back under the
      threshold before the next one, so a prompt that stays large (its size is the
      caller's, not only the memory's) does not checkpoint at every call.
    - ``retier_before_calls`` (on): before a model call, re-tier the agent if it took
      steps since the last time, so items left alone decay out of the working set as
      the agent works, not only when a task completes.
    - ``retier_on_task_complete`` (on): :meth:`task_completed` unpins the finished
      task's items and re-tiers.

    The state (whether a flash save is armed, the step last re-tiered at) is kept per
    agent in this object, so share one per process: :attr:`MemoryStore.triggers` is one.
    """

    def __init__(
        self,
        store: StoreCore,
        *,
        flash_save: bool = True,
        retier_before_calls: bool = True,
        retier_on_task_complete: bool = True,
        flash_fraction: float | None = None,
    ):
        self.store = store
        self.flash_save = bool(flash_save)
        self.retier_before_calls = bool(retier_before_calls)
        self.retier_on_task_complete = bool(retier_on_task_complete)
        self.flash_fraction = (
            store.config.flash_fraction
            if flash_fraction is None
            else fraction("flash_fraction", flash_fraction, zero=False)
        )
        self._lock = threading.Lock()
        self._agents: dict[str, _AgentState] = {}

    def __repr__(self) -> str:
        return (
            f"MemoryTriggers(flash_save={self.flash_save}, retier_before_calls={self.retier_before_calls}, "
            f"retier_on_task_complete={self.retier_on_task_complete}, flash_fraction={self.flash_fraction})"
        )

    def _state(self, agent_id: str) -> _AgentState:
        with self._lock:
            return self._agents.setdefault(agent_id, _AgentState())

    def before_model_call(self, agent_id: str, prompt_tokens: int, window: int) -> FlashSaveResult | None:
        """Run before each model call of ``agent_id``: the flash save's result if one ran, else None.

        ``prompt_tokens`` is the size of the prompt about to be sent and ``window`` the
        model's context window, both in tokens. Registers the agent if it is new.
        """
        whole_number("prompt_tokens", prompt_tokens, unit="tokens")
        whole_number("window", window, minimum=1, unit="tokens")
        memory = AgentMemory(self.store, check_agent_id(agent_id), create_on_write=True)
        state = self._state(memory.agent_id)
        with state.lock:
            return self._before_call(memory, state, prompt_tokens, window)

    def _before_call(
        self, memory: AgentMemory, state: _AgentState, prompt_tokens: int, window: int
    ) -> FlashSaveResult | None:
        full = prompt_tokens >= self.flash_fraction * window
        if not full:
            state.armed = True
        if self.flash_save and full and state.armed:
            state.armed = False
            reason = {"trigger": "window", "prompt_tokens": prompt_tokens, "window": window}
            memory.update_tiers(event=reason)
            result = memory.flash_save(event=reason)
            state.tiered_at_step = self._steps(memory.agent_id)
            log(DEBUG, "memory_trigger_flash_save", agent=memory.agent_id, prompt_tokens=prompt_tokens, window=window)
            return result
        if self.retier_before_calls:
            steps = self._steps(memory.agent_id)
            if steps != state.tiered_at_step:
                memory.update_tiers(event={"trigger": "model_call"})
                state.tiered_at_step = steps
        return None

    def task_completed(self, agent_id: str) -> TierUpdateResult | None:
        """Run when ``agent_id`` completes a task: unpin its items and re-tier (None if re-tiering is off)."""
        memory = AgentMemory(self.store, check_agent_id(agent_id), create_on_write=True)
        state = self._state(memory.agent_id)
        with state.lock:
            memory.complete_task()
            if not self.retier_on_task_complete:
                return None
            result = memory.update_tiers(event={"trigger": "task_completed"})
            state.tiered_at_step = self._steps(memory.agent_id)
            return result

    def _steps(self, agent_id: str) -> int | None:
        """The agent's step count, None for an agent not registered yet."""
        with self.store.read() as conn:
            steps: int | None = conn.execute(
                select(agents.c.steps).where(agents.c.agent_id == agent_id)
            ).scalar_one_or_none()
        return steps

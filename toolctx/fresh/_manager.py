"""The fresh context manager: builds contexts, keeps track of the live ones, validates and clears them.

Building is one synchronous core (:meth:`FreshContextManager.build_fresh_context_sync`);
the async :meth:`~FreshContextManager.build_fresh_context` runs that same core in a
worker thread, so an event loop is never blocked by reading and counting files.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from toolctx.fresh._allocation import DYNAMIC_COMPONENTS
from toolctx.fresh._budgeter import TokenBudgeter
from toolctx.fresh._builder import ContextBuilder
from toolctx.fresh._models import ContextOptions, ContextStats, ContextValidation, TaskContext, TaskSpec

__all__ = ["FreshContextManager"]


class FreshContextManager:
    """Builds a fresh context per task and tracks the contexts in use, per agent and per task."""

    def __init__(self, builder: ContextBuilder) -> None:
        if not isinstance(builder, ContextBuilder):
            raise TypeError(f"builder must be a ContextBuilder, not {type(builder).__name__}")
        self.builder = builder
        self._lock = threading.Lock()
        self._active: dict[str, TaskContext] = {}
        self._built = 0
        self._cleared = 0
        self._tokens_built = 0
        self._peak = 0
        self._seconds = 0.0

    @property
    def budgeter(self) -> TokenBudgeter:
        return self.builder.budgeter

    def build_fresh_context_sync(
        self, task: TaskSpec, options: ContextOptions | None = None, *, agent_id: str | None = None
    ) -> TaskContext:
        """Build a context for ``task`` from scratch and keep it as active until cleared."""
        started = time.perf_counter()
        context = self.builder.build(task, options, agent_id=agent_id)
        elapsed = time.perf_counter() - started
        with self._lock:
            self._active[context.context_id] = context
            self._built += 1
            self._tokens_built += context.token_count
            self._peak = max(self._peak, context.token_count)
            self._seconds += elapsed
        return context

    async def build_fresh_context(
        self, task: TaskSpec, options: ContextOptions | None = None, *, agent_id: str | None = None
    ) -> TaskContext:
        """:meth:`build_fresh_context_sync` in a worker thread."""
        return await asyncio.to_thread(self.build_fresh_context_sync, task, options, agent_id=agent_id)

    def estimate_token_count(self, text: str) -> int:
        """Tokens ``text`` costs, with the counter the budgets are kept in."""
        return self.builder.counter.count(text)

    def validate_context(self, context: TaskContext) -> ContextValidation:
        """Recount ``context`` and say whether it fits its budget, what it holds, and what to change.

        The warnings include those of the build (missing task files, sources that
        failed, parts cut to fit); suggestions say what would make the next build better.
        """
        counter = self.builder.counter
        budget = self.budgeter.create_budget(context.token_budget)
        system = context.sections.get("system_prompt", "")
        counted = counter.count(system) + counter.count(context.render())
        breakdown = context.breakdown.model_copy(update={"total": counted + budget.reserved})
        warnings = list(context.warnings)
        suggestions: list[str] = []
        limit = budget.context_tokens
        valid = counted <= limit
        if counter.name != context.counter:
            warnings.append(
                f"the context was counted with {context.counter!r}, this manager counts with {counter.name!r}"
            )
        if not valid:
            warnings.append(f"the context holds {counted:,} tokens, over its {limit:,} (budget less the reserve)")
            suggestions.append("rebuild it with a larger max_tokens or fewer max_relevant_files")
        if budget.warnings:
            suggestions.append("raise max_tokens above the fixed allocations, or lower them with custom_budget")
        if any("named by the task" in w for w in context.warnings):
            suggestions.append("check the task's files: paths are relative to the project root")
        if any("did not fit the budget" in w for w in context.warnings) or any(
            f.truncated for f in context.relevant_files
        ):
            suggestions.append("raise max_tokens (or the files' share) to include the files cut or left out")
        if not context.relevant_code and "code_results" in self._components(context.token_budget):
            suggestions.append("pass code_search_query with the functions or terms the task is about")
        if not context.relevant_files:
            warnings.append("the context holds no project files")
        return ContextValidation(
            valid=valid,
            token_count=counted,
            max_tokens=context.token_budget,
            breakdown=breakdown,
            warnings=tuple(warnings),
            suggestions=tuple(dict.fromkeys(suggestions)),
        )

    def _components(self, max_tokens: int) -> list[str]:
        budget = self.budgeter.create_budget(max_tokens)
        return [name for name in DYNAMIC_COMPONENTS if budget[name] > 0]

    def clear_agent_context_sync(self, agent_id: str) -> int:
        """Forget every active context built for ``agent_id``; how many there were."""
        return self._drop(lambda c: c.agent_id == agent_id)

    def clear_task_context_sync(self, task_id: str) -> int:
        """Forget every active context built for the task ``task_id``; how many there were."""
        return self._drop(lambda c: c.task_spec.id == task_id)

    async def clear_agent_context(self, agent_id: str) -> int:
        """:meth:`clear_agent_context_sync`, for async callers."""
        return self.clear_agent_context_sync(agent_id)

    async def clear_task_context(self, task_id: str) -> int:
        """:meth:`clear_task_context_sync`, for async callers."""
        return self.clear_task_context_sync(task_id)

    def _drop(self, matches: Callable[[TaskContext], bool]) -> int:
        with self._lock:
            gone = [cid for cid, context in self._active.items() if matches(context)]
            for cid in gone:
                del self._active[cid]
            self._cleared += len(gone)
        return len(gone)

    def get_active_contexts(self) -> dict[str, TaskContext]:
        """The contexts built and not yet cleared, by context id (a copy)."""
        with self._lock:
            return dict(self._active)

    def get_context_stats(self) -> ContextStats:
        """Counts and token figures over every context this manager has built."""
        with self._lock:
            built = self._built
            return ContextStats(
                active_contexts=len(self._active),
                active_agents=len({c.agent_id for c in self._active.values() if c.agent_id is not None}),
                total_built=built,
                total_cleared=self._cleared,
                average_tokens=self._tokens_built / built if built else 0.0,
                peak_tokens=self._peak,
                average_build_seconds=self._seconds / built if built else 0.0,
            )

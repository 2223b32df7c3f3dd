"""Giving agents their contexts: prepare before a task, clean up after it; and the one-call setup."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from toolctx.errors import ToolctxError
from toolctx.fresh._allocation import DynamicShares, FixedAllocations
from toolctx.fresh._budgeter import TokenBudgeter
from toolctx.fresh._builder import Auto, ContextBuilder
from toolctx.fresh._manager import FreshContextManager
from toolctx.fresh._models import (
    CodebaseDocsSummary,
    ContextBuilderOptions,
    ContextOptions,
    ContextProjectConfig,
    TaskContext,
    TaskSpec,
)
from toolctx.fresh._overview import CodebaseAnalyzer
from toolctx.fresh._providers import CodeSearchProvider, RepoMapProvider
from toolctx.tokens import TokenCounter

__all__ = ["AgentContextIntegration", "AgentContextResult", "ContextSystem", "create_context_system"]


class AgentContextResult(BaseModel):
    """What :meth:`AgentContextIntegration.prepare_agent_context` gives back.

    ``success`` is False only when no context could be built (``error`` says
    why); a context built with warnings is a success, its warnings kept.
    """

    model_config = ConfigDict(frozen=True)

    success: bool
    agent_id: str
    task_id: str
    context: TaskContext | None = None
    error: str | None = None


class AgentContextIntegration:
    """The agent-facing side: one fresh context per agent, replaced at each task, cleared when it ends.

    An agent holds one context at a time: preparing a new task's context first
    clears the one it had, so nothing carries over from task to task.
    """

    def __init__(self, manager: FreshContextManager) -> None:
        self.manager = manager
        self._lock = threading.Lock()
        self._current: dict[str, str] = {}  # agent id -> the task it is working on
        self.completed = 0
        self.failed = 0

    def prepare_agent_context_sync(
        self, agent_id: str, task: TaskSpec, options: ContextOptions | None = None
    ) -> AgentContextResult:
        """Clear what ``agent_id`` held and build a fresh context for ``task``."""
        task_id = getattr(task, "id", "")
        self.manager.clear_agent_context_sync(agent_id)
        try:
            context = self.manager.build_fresh_context_sync(task, options, agent_id=agent_id)
        except (ToolctxError, TypeError, ValueError) as exc:
            return AgentContextResult(success=False, agent_id=agent_id, task_id=str(task_id), error=str(exc))
        with self._lock:
            self._current[agent_id] = task.id
        return AgentContextResult(success=True, agent_id=agent_id, task_id=task.id, context=context)

    async def prepare_agent_context(
        self, agent_id: str, task: TaskSpec, options: ContextOptions | None = None
    ) -> AgentContextResult:
        """:meth:`prepare_agent_context_sync` in a worker thread."""
        return await asyncio.to_thread(self.prepare_agent_context_sync, agent_id, task, options)

    def get_agent_context(self, agent_id: str) -> TaskContext | None:
        """The context ``agent_id`` currently holds, if any."""
        for context in self.manager.get_active_contexts().values():
            if context.agent_id == agent_id:
                return context
        return None

    def active_agents(self) -> dict[str, str]:
        """Agents holding a context, with the id of the task each is working on."""
        with self._lock:
            return dict(self._current)

    def _finish(self, agent_id: str, task_id: str, *, failed: bool) -> int:
        cleared = self.manager.clear_task_context_sync(task_id)
        with self._lock:
            if self._current.get(agent_id) == task_id:
                del self._current[agent_id]
            if failed:
                self.failed += 1
            else:
                self.completed += 1
        return cleared

    def on_task_complete_sync(self, agent_id: str, task_id: str) -> int:
        """The task is done: drop its contexts; how many were dropped."""
        return self._finish(agent_id, task_id, failed=False)

    def on_task_failed_sync(self, agent_id: str, task_id: str) -> int:
        """The task failed: drop its contexts (the next attempt starts fresh); how many were dropped."""
        return self._finish(agent_id, task_id, failed=True)

    async def on_task_complete(self, agent_id: str, task_id: str) -> int:
        """:meth:`on_task_complete_sync`, for async callers."""
        return self.on_task_complete_sync(agent_id, task_id)

    async def on_task_failed(self, agent_id: str, task_id: str) -> int:
        """:meth:`on_task_failed_sync`, for async callers."""
        return self.on_task_failed_sync(agent_id, task_id)


@dataclass(frozen=True)
class ContextSystem:
    """The parts :func:`create_context_system` wires together."""

    manager: FreshContextManager
    integration: AgentContextIntegration
    builder: ContextBuilder
    budgeter: TokenBudgeter


def create_context_system(
    project: ContextProjectConfig | str | os.PathLike[str] | None = None,
    *,
    project_config: ContextProjectConfig | str | os.PathLike[str] | None = None,
    repo_map: RepoMapProvider | Auto | None = "auto",
    code_search: CodeSearchProvider | Auto | None = "auto",
    code_memory: CodeSearchProvider | None = None,
    memory: Any = None,
    codebase_analyzer: CodebaseAnalyzer | Callable[[ContextProjectConfig], CodebaseDocsSummary] | None = None,
    builder_options: ContextBuilderOptions | None = None,
    custom_budget: FixedAllocations | Mapping[str, int] | None = None,
    shares: DynamicShares | None = None,
    counter: TokenCounter | None = None,
) -> ContextSystem:
    """A budgeter, builder, manager and agent integration for one project, ready to use.

    ``project`` is a :class:`ContextProjectConfig` or the project's root folder;
    ``project_config`` is the same option under the seed's name (``projectConfig``):
    pass one or the other, not both. ``custom_budget`` overrides fixed allocations
    (``{"repo_map": 5000}``); ``counter`` is any token counter (default: exact
    o200k_base when installed). The other arguments are :class:`ContextBuilder`'s.
    """
    if project is not None and project_config is not None:
        raise TypeError(
            "create_context_system got the project twice, as project= and as project_config= "
            f"({project!r:.80} and {project_config!r:.80}); project_config is the seed's name for project, pass one"
        )
    project = project if project is not None else project_config
    if project is None:
        raise TypeError(
            "create_context_system needs the project: a ContextProjectConfig or the project's root folder, "
            "as project= (or project_config=)"
        )
    budgeter = TokenBudgeter(custom_budget, shares, counter)
    builder = ContextBuilder(
        project,
        budgeter=budgeter,
        repo_map=repo_map,
        code_search=code_search,
        code_memory=code_memory,
        memory=memory,
        codebase_analyzer=codebase_analyzer,
        options=builder_options,
    )
    manager = FreshContextManager(builder)
    return ContextSystem(manager, AgentContextIntegration(manager), builder, budgeter)

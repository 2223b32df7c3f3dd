"""A fresh, budgeted context for every task: repo map, docs, files, code search and memories, no history.

::

    from toolctx.fresh import ContextOptions, TaskSpec, create_context_system

    system = create_context_system("path/to/project", memory=memory_store)   # memory is optional
    task = TaskSpec(id="t1", name="Add retry to the uploader", files=["src/upload.py"])
    context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=30_000))
    messages = context.to_messages()               # OpenAI chat messages: system prompt, then the context
    system.manager.validate_context(context)       # breakdown, warnings, suggestions

    prepared = await system.integration.prepare_agent_context("worker-1", task)
    await system.integration.on_task_complete("worker-1", task.id)

Every context is built from scratch and fits ``max_tokens`` less the response
reserve, counted with the budgeter's counter (exact o200k_base when installed).
Files, repo map and code search read only inside the project root and never
write to it. A file too large for its share of the budget is shown as an excerpt:
the code the search matched for the task, with the definitions enclosing it, and
the file's outline (see :class:`toolctx.fresh.FileContent`). Without tree-sitter
the repo map lists files by path and code search is plain BM25 over code chunks.
"""

from __future__ import annotations

from toolctx.fresh._builder import ContextBuilder
from toolctx.fresh._codesearch import CodeSearch, CodeSearchHit
from toolctx.fresh._integration import AgentContextIntegration, ContextSystem, PreparedContext, create_context_system
from toolctx.fresh._manager import FreshContextManager
from toolctx.fresh._models import (
    CodebaseDocsSummary,
    CodeSearchResult,
    ContextBuilderOptions,
    ContextOptions,
    ContextProjectConfig,
    ContextStats,
    ContextValidation,
    DocSection,
    FileContent,
    MemoryEntry,
    TaskContext,
    TaskSpec,
    TokenBreakdown,
)
from toolctx.fresh._providers import CodeHit, CodeSearchProvider, PlainSearch, RepoMapProvider
from toolctx.fresh._repomap import RepoMap
from toolctx.fresh._tags import Definition, FileTags

__all__ = [
    "AgentContextIntegration",
    "CodeHit",
    "CodeSearch",
    "CodeSearchHit",
    "CodeSearchProvider",
    "CodeSearchResult",
    "CodebaseDocsSummary",
    "ContextBuilder",
    "ContextBuilderOptions",
    "ContextOptions",
    "ContextProjectConfig",
    "ContextStats",
    "ContextSystem",
    "ContextValidation",
    "Definition",
    "DocSection",
    "FileContent",
    "FileTags",
    "FreshContextManager",
    "MemoryEntry",
    "PlainSearch",
    "PreparedContext",
    "RepoMap",
    "RepoMapProvider",
    "TaskContext",
    "TaskSpec",
    "TokenBreakdown",
    "create_context_system",
]

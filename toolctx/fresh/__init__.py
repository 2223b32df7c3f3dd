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

Reading is bounded and stays in the project: only regular files whose real path
is inside the root are opened (a FIFO, socket or device is reported and left
out, never read; a link leading out of the root is not followed), each read
stops at its size limit, and a ``.gitignore`` is applied up to 4 MiB, in time
that grows linearly with its patterns. Files named like credentials (``.env``,
``.env.*``, ``*.pem``, ``*.key``, ``id_rsa*``, ``.npmrc``, ``.pypirc``,
``.netrc``, ...: :data:`SECRET_FILE_PATTERNS`) never enter a context, even when
no ``.gitignore`` excludes them, unless the builder is made with
``ContextBuilderOptions(include_secret_files=True)``.

The budgets come from :class:`TokenBudgeter`, usable on its own::

    from toolctx.fresh import TokenBudgeter

    budgeter = TokenBudgeter(fixed={"repo_map": 5_000})      # any counter: TokenBudgeter(counter=...)
    budget = budgeter.create_budget(150_000)
    budget["files"]                                           # 75,600 with the default allocations
    budgeter.allocate(budget.dynamic_pool, {"files": 90_000, "code_results": 2_000, "memories": 0})
    cut = budgeter.truncate_to_fit(source_code, 4_000)        # whole lines, then a line saying what was cut

The fixed allocations (system prompt 2,000, repo map 2,000, codebase docs 3,000,
task spec 1,000, response reserve 16,000) come off the top; the rest is shared
by files (60 %), code results (25 %) and memories (15 %). In small budgets the
reserve takes at most a quarter of the total and the other fixed allocations at
most half of what is left, so files, code and memories always keep a part.
"""

from __future__ import annotations

from toolctx.fresh._allocation import (
    DYNAMIC_COMPONENTS,
    FIXED_COMPONENTS,
    DynamicShares,
    FixedAllocations,
    TokenBudget,
    share_out,
)
from toolctx.fresh._budgeter import TokenBudgeter, default_counter
from toolctx.fresh._builder import ContextBuilder
from toolctx.fresh._codesearch import CodeSearch, CodeSearchHit
from toolctx.fresh._integration import AgentContextIntegration, AgentContextResult, ContextSystem, create_context_system
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
from toolctx.fresh._overview import CodebaseAnalyzer
from toolctx.fresh._providers import CodeHit, CodeSearchProvider, PlainSearch, RepoMapProvider
from toolctx.fresh._repomap import RepoMap
from toolctx.fresh._secrets import SECRET_FILE_PATTERNS
from toolctx.fresh._tags import Definition, FileTags
from toolctx.fresh._truncate import FitItems, Truncation, fit_items, truncate_lines

__all__ = [
    "DYNAMIC_COMPONENTS",
    "FIXED_COMPONENTS",
    "SECRET_FILE_PATTERNS",
    "AgentContextIntegration",
    "AgentContextResult",
    "CodeHit",
    "CodeSearch",
    "CodeSearchHit",
    "CodeSearchProvider",
    "CodeSearchResult",
    "CodebaseAnalyzer",
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
    "DynamicShares",
    "FileContent",
    "FileTags",
    "FitItems",
    "FixedAllocations",
    "FreshContextManager",
    "MemoryEntry",
    "PlainSearch",
    "RepoMap",
    "RepoMapProvider",
    "TaskContext",
    "TaskSpec",
    "TokenBreakdown",
    "TokenBudget",
    "TokenBudgeter",
    "Truncation",
    "create_context_system",
    "default_counter",
    "fit_items",
    "share_out",
    "truncate_lines",
]

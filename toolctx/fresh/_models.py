"""What a fresh context is made of: the task, the options, and the built context's parts."""

from __future__ import annotations

import codecs
from datetime import datetime
from typing import Any, Never

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "CodeSearchResult",
    "CodebaseDocsSummary",
    "ContextBuilderOptions",
    "ContextOptions",
    "ContextProjectConfig",
    "ContextStats",
    "ContextValidation",
    "DocSection",
    "FileContent",
    "MemoryEntry",
    "TaskContext",
    "TaskSpec",
    "TokenBreakdown",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class TaskSpec(BaseModel):
    """One task an agent is given: what to do, the files it names, how it is judged.

    ``files`` and ``dependencies`` are paths relative to the project root; the files
    come first in the context, then their dependencies. ``estimated_time`` is in hours.
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    name: str
    description: str = ""
    files: tuple[str, ...] = ()
    test_criteria: str = ""
    acceptance_criteria: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    estimated_time: float | None = None

    def search_text(self) -> str:
        """The words a search for this task starts from: name, description and criteria."""
        return "\n".join([self.name, self.description, self.test_criteria, *self.acceptance_criteria])


class ContextProjectConfig(BaseModel):
    """The project a context is built for: its root ``path`` and what it is written in."""

    model_config = _FROZEN

    name: str
    path: str
    language: str | None = None
    framework: str | None = None
    test_framework: str | None = None


class ContextOptions(BaseModel):
    """Options of one build (the seed's defaults).

    ``max_tokens`` is the whole budget, the response reserve included.
    ``code_search_query`` defaults to the task's own text. ``system_prompt``
    replaces the one written from the project's configuration.
    """

    model_config = _FROZEN

    max_tokens: int = Field(default=150_000, ge=1)
    include_repo_map: bool = True
    include_codebase_docs: bool = True
    max_relevant_files: int = Field(default=10, ge=0)
    max_code_results: int = Field(default=5, ge=0)
    max_memories: int = Field(default=5, ge=0)
    code_search_query: str | None = None
    system_prompt: str | None = None


class ContextBuilderOptions(BaseModel):
    """How the builder reads the project (the seed's defaults).

    Relevance minimums are fractions of the best hit's score. ``encoding`` is how
    files are decoded; a file that does not decode is left out with a warning.
    ``max_scan_files`` bounds how many files a scan of the project indexes.
    No file puts more than ``max_file_size_chars`` characters in a context: a
    longer one (up to ten times as long; beyond that it is left out with a
    warning) is read and searched, and shown only as an excerpt of the code
    matching the task. Files named like credentials (``.env``, ``*.pem``,
    ``id_rsa``, ``.npmrc``, ...: :data:`toolctx.fresh.SECRET_FILE_PATTERNS`) are
    left out even when no ``.gitignore`` excludes them, and a task naming one gets
    a warning instead; ``include_secret_files=True`` lets them in.
    """

    model_config = _FROZEN

    project_path: str | None = None
    min_code_relevance: float = Field(default=0.5, ge=0.0, le=1.0)
    min_memory_relevance: float = Field(default=0.4, ge=0.0, le=1.0)
    max_file_size_chars: int = Field(default=100_000, ge=1)
    encoding: str = "utf-8"
    max_scan_files: int = Field(default=50_000, ge=1)
    include_secret_files: bool = False

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(f"unknown encoding {value!r}; use a codec name Python knows, such as 'utf-8'") from None
        return value


class FileContent(BaseModel):
    """A file of the project as the context holds it: whole, or as an excerpt when it does not fit whole.

    An excerpt (``truncated``) keeps the code the search matched for the task and
    the file's outline, in file order; ``content`` marks each run of lines left out
    with a line holding ``⋮``, and ``shown_lines`` lists the 1-based, inclusive line
    ranges it shows (empty when the file is whole).
    """

    model_config = _FROZEN

    path: str
    content: str
    tokens: int
    truncated: bool = False
    reason: str = "ranked"  # "task", "dependency" or "ranked": why it is in the context
    shown_lines: tuple[tuple[int, int], ...] = ()


class CodeSearchResult(BaseModel):
    """A piece of code found for the task's query: where it is and how well it matched."""

    model_config = _FROZEN

    path: str
    name: str
    start_line: int
    end_line: int
    text: str
    score: float
    tokens: int = 0


class MemoryEntry(BaseModel):
    """A memory item of the agent brought into the context."""

    model_config = _FROZEN

    id: int
    item_type: str
    content: str
    tier: str
    importance_score: float
    tokens: int = 0


class DocSection(BaseModel):
    """One document (README, ARCHITECTURE, a package docstring) in the codebase docs."""

    model_config = _FROZEN

    path: str
    text: str
    truncated: bool = False


class CodebaseDocsSummary(BaseModel):
    """The project's documentation fitted to its allocation: an architecture summary, then documents.

    Read from the project (README, ARCHITECTURE, CONTRIBUTING, package docstrings
    in ``sections``), or given by a codebase analyser. A project without any docs
    gets an ``architecture_summary`` written from its files (name, languages,
    top-level layout), so a built context's docs are never empty.
    """

    model_config = _FROZEN

    architecture_summary: str = ""
    sections: tuple[DocSection, ...] = ()
    tokens: int = 0


class TokenBreakdown(BaseModel):
    """Tokens each component of a context holds, the reserve, and their total."""

    model_config = _FROZEN

    system_prompt: int = 0
    repo_map: int = 0
    codebase_docs: int = 0
    task_spec: int = 0
    files: int = 0
    code_results: int = 0
    memories: int = 0
    reserved: int = 0
    total: int = 0


class TaskContext(BaseModel):
    """A context built from scratch for one task.

    ``token_count`` is what the rendered context costs (counted with the
    counter named by ``counter``, the same one the budget was kept with) and is
    never above ``token_budget`` minus the response reserve. ``sections`` holds
    each component as the model sees it; :meth:`to_messages` puts them in chat
    messages. ``conversation_history`` is always empty: a fresh context carries
    nothing from earlier tasks.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    context_id: str
    agent_id: str | None = None
    task_spec: TaskSpec
    project_config: ContextProjectConfig
    repo_map: str = ""
    codebase_docs: CodebaseDocsSummary = CodebaseDocsSummary()
    relevant_files: tuple[FileContent, ...] = ()
    relevant_code: tuple[CodeSearchResult, ...] = ()
    relevant_memories: tuple[MemoryEntry, ...] = ()
    sections: dict[str, str] = {}  # (pydantic copies a mutable default for each instance)
    breakdown: TokenBreakdown = TokenBreakdown()
    warnings: tuple[str, ...] = ()
    token_count: int
    token_budget: int
    counter: str
    generated_at: datetime

    @property
    def conversation_history(self) -> list[Never]:
        """Always empty: nothing from earlier tasks or conversations is carried over."""
        return []

    def render(self) -> str:
        """Every component but the system prompt, as one text (the first user message)."""
        return "\n\n".join(text for name, text in self.sections.items() if name != "system_prompt" and text)

    def to_messages(self) -> list[dict[str, Any]]:
        """The context as OpenAI chat messages: the system prompt, then one user message with the rest.

        Anthropic's Messages API takes the first message's content as ``system=``
        and the rest as ``messages=``.
        """
        messages: list[dict[str, Any]] = []
        system = self.sections.get("system_prompt", "")
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": self.render()})
        return messages


class ContextValidation(BaseModel):
    """What :meth:`FreshContextManager.validate_context` found."""

    model_config = _FROZEN

    valid: bool
    token_count: int
    max_tokens: int
    breakdown: TokenBreakdown
    warnings: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()


class ContextStats(BaseModel):
    """Counts over the contexts a manager has built, for monitoring."""

    model_config = _FROZEN

    active_contexts: int
    active_agents: int
    total_built: int
    total_cleared: int
    average_tokens: float
    peak_tokens: int
    average_build_seconds: float

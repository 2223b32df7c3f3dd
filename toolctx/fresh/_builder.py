"""Building a fresh context: every component gathered for the task and fitted to its allocation.

The fixed components (system prompt, task, repo map, docs) are built first, each
within its ceiling; what they leave unused joins the dynamic pool. Files, code
results and memories then share the pool by their shares, a part one of them
does not need flowing to the others. A last count of the whole rendered context
checks the budget; if joining the sections cost a few tokens more than their
parts, the last dynamic section is cut to make up for it.

Nothing the builder calls may stop a build: a source that is missing or fails
leaves its part empty (or falls back to the plain search) and adds a warning.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from toolctx._internal import WARNING, describe_error, log
from toolctx.errors import ConfigError
from toolctx.fresh import _render
from toolctx.fresh._allocation import DYNAMIC_COMPONENTS
from toolctx.fresh._budgeter import TokenBudgeter
from toolctx.fresh._deps import local_imports
from toolctx.fresh._fitting import fit_dynamic, settle
from toolctx.fresh._models import (
    CodebaseDocsSummary,
    CodeSearchResult,
    ContextBuilderOptions,
    ContextOptions,
    ContextProjectConfig,
    FileContent,
    MemoryEntry,
    TaskContext,
    TaskSpec,
    TokenBreakdown,
)
from toolctx.fresh._overview import (
    AnalyzerFunction,
    CodebaseAnalyzer,
    analyzer_summary,
    check_analyzer,
    fit_summary,
    project_outline,
)
from toolctx.fresh._project import ProjectFiles
from toolctx.fresh._providers import CodeSearchProvider, PlainSearch, RepoMapProvider, as_result, fuse_rankings
from toolctx.fresh._render import CachedCounter
from toolctx.fresh._sources import MemorySource, codebase_docs, gather_memories
from toolctx.fresh._truncate import truncate_lines

__all__ = ["ContextBuilder"]

T = TypeVar("T")
Auto = Literal["auto"]
_FILE_HITS = 300  # code chunks searched to rank files and choose their excerpts
#: Files up to this many times ``max_file_size_chars`` are read, indexed and shown as excerpts of at most
#: ``max_file_size_chars`` characters; longer ones are left out.
EXCERPT_ONLY_FACTOR = 10


def _project(project: ContextProjectConfig | str | os.PathLike[str]) -> ContextProjectConfig:
    if isinstance(project, ContextProjectConfig):
        config = project
    elif isinstance(project, str | os.PathLike):
        path = Path(project).expanduser()
        config = ContextProjectConfig(name=path.resolve().name or str(path), path=str(path))
    else:
        raise TypeError(f"project must be a ContextProjectConfig or a path, not {type(project).__name__}")
    if not Path(config.path).expanduser().is_dir():
        raise ConfigError(f"project path {config.path!r} is not a directory; pass the root folder of the project")
    return config


class ContextBuilder:
    """Builds a :class:`TaskContext` for a task from one project's files and the agent's memory.

    ``repo_map`` and ``code_search`` are sources (see :class:`RepoMapProvider`,
    :class:`CodeSearchProvider`); ``"auto"`` uses the tree-sitter repo map and code
    search when tree-sitter is installed (``toolctx[fresh]``) and the plain BM25
    search otherwise; ``None`` leaves code search out and lists files by path.
    ``code_memory`` is a search of your own (embeddings, the seed's CodeMemory):
    its hits are merged with the code search's by reciprocal rank fusion.
    ``memory`` is a :class:`toolctx.memory.MemoryStore` (each agent's own memory is
    read) or one agent's :class:`toolctx.memory.AgentMemory`. ``codebase_analyzer``
    (a :class:`CodebaseAnalyzer`, or a callable taking the project) supplies the
    codebase docs instead of the project's README, ARCHITECTURE and package
    docstrings; if it fails, they are read after all. A project without docs gets
    an outline of itself (name, languages, top-level layout) as its docs.
    """

    def __init__(
        self,
        project: ContextProjectConfig | str | os.PathLike[str],
        *,
        budgeter: TokenBudgeter | None = None,
        repo_map: RepoMapProvider | Auto | None = "auto",
        code_search: CodeSearchProvider | Auto | None = "auto",
        code_memory: CodeSearchProvider | None = None,
        memory: Any = None,
        codebase_analyzer: CodebaseAnalyzer | AnalyzerFunction | None = None,
        options: ContextBuilderOptions | None = None,
    ) -> None:
        self.project = _project(project)
        self.options = options or ContextBuilderOptions()
        self.budgeter = budgeter or TokenBudgeter()
        self.counter = CachedCounter(self.budgeter.counter)
        self.files = ProjectFiles(
            self.project.path,
            max_chars=self.options.max_file_size_chars * EXCERPT_ONLY_FACTOR,
            encoding=self.options.encoding,
            max_files=self.options.max_scan_files,
            include_secrets=self.options.include_secret_files,
        )
        self.plain = PlainSearch(self.files, self.counter)
        self.notes: list[str] = []  # why a source fell back, repeated in every context's warnings
        if not self.files.honours_gitignore and (self.files.root / ".gitignore").is_file():
            self.notes.append(
                "the project's .gitignore is not applied without pathspec (pip install 'toolctx[fresh]'); "
                "only version control, cache and virtualenv folders are skipped"
            )
        self.repo_map = self._source(repo_map, "_repomap", "RepoMap", RepoMapProvider)
        self.code_search = self._source(code_search, "_codesearch", "CodeSearch", CodeSearchProvider)
        # The plain index serves the plain map, plain code search, and file ranking without a code search.
        self._plain_needed = any(s is None or s is self.plain for s in (self.repo_map, self.code_search))
        if code_memory is not None and not isinstance(code_memory, CodeSearchProvider):
            raise TypeError(f"code_memory must have a search(query, k) method, got {type(code_memory).__name__}")
        self.code_memory = code_memory
        self.memory = memory
        self.codebase_analyzer = check_analyzer(codebase_analyzer)

    def _source(self, given: Any, module: str, name: str, kind: type) -> Any:
        if given != "auto":
            if given is not None and not isinstance(given, kind):
                raise TypeError(f"{name.lower()} must provide {kind.__name__}'s methods, got {type(given).__name__}")
            return given
        if importlib.util.find_spec("tree_sitter") is None:
            self.notes.append(f"without tree-sitter (pip install 'toolctx[fresh]') {name} is the plain BM25 search")
            return self.plain
        try:
            factory = getattr(importlib.import_module(f"toolctx.fresh.{module}"), name)
        except (ImportError, AttributeError):
            return self.plain
        same_reading = {
            "max_file_chars": self.options.max_file_size_chars * EXCERPT_ONLY_FACTOR,
            "max_files": self.options.max_scan_files,
            "encoding": self.options.encoding,
            "include_secret_files": self.options.include_secret_files,
        }
        if name == "RepoMap":
            return factory(self.files.root, self.counter, **same_reading)
        return factory(self.files.root, **same_reading)

    def _guard(self, what: str, call: Callable[[], T], fallback: T, warnings: list[str]) -> T:
        try:
            return call()
        except Exception as exc:  # a source's failure must not stop the build
            warnings.append(f"{what} failed ({type(exc).__name__}: {describe_error(exc)}); left out")
            return fallback

    def build(
        self,
        task: TaskSpec,
        options: ContextOptions | None = None,
        *,
        agent_id: str | None = None,
        memory: MemorySource | None = None,
    ) -> TaskContext:
        """A context for ``task`` built from scratch, within ``options.max_tokens``.

        ``memory`` overrides the builder's memory for this build (one agent's memory).
        """
        if not isinstance(task, TaskSpec):
            raise TypeError(f"task must be a TaskSpec, not {type(task).__name__}")
        options = options or ContextOptions()
        counter = self.counter
        budget = self.budgeter.create_budget(options.max_tokens)
        warnings = [*budget.warnings, *self.notes]
        listing = self._scan(warnings)
        paths = {path for path, _mtime, _size in listing}
        mentioned = self._mentioned(task, paths, warnings)
        task_text = task.search_text()
        query = options.code_search_query or task_text

        sections: dict[str, str] = {}
        sections["system_prompt"] = truncate_lines(
            _render.system_prompt(self.project, options.system_prompt), budget["system_prompt"], counter
        ).text
        sections["task_spec"] = truncate_lines(_render.task_section(task), budget["task_spec"], counter).text
        repo_map = ""
        if options.include_repo_map and listing:
            room = max(0, budget["repo_map"] - counter.count(_render.HEADINGS["repo_map"] + "\n"))
            source = self.repo_map or self.plain
            repo_map = self._guard(
                "the repo map", lambda: source.render(task_text, [p for p, _ in mentioned], room), "", warnings
            )
            if repo_map.strip():
                cut = truncate_lines(f"{_render.HEADINGS['repo_map']}\n{repo_map}", budget["repo_map"], counter)
                sections["repo_map"] = cut.text
        docs = None
        if options.include_codebase_docs:
            room = max(0, budget["codebase_docs"] - counter.count(_render.HEADINGS["codebase_docs"] + "\n\n"))
            docs = self._docs(paths, room, warnings)
            parts = [docs.architecture_summary, *(s.text for s in docs.sections)]
            if any(parts):
                body = "\n\n".join([_render.HEADINGS["codebase_docs"], *(p for p in parts if p)])
                sections["codebase_docs"] = truncate_lines(body, budget["codebase_docs"], counter).text
        used = {name: counter.count(text) for name, text in sections.items()}
        pool = max(0, budget.context_tokens - sum(used.values()))

        nothing: list[CodeSearchResult] = []
        found = self._guard("searching code", partial(self._search, task_text), nothing, warnings)
        files = self._file_candidates(task_text, mentioned, paths, options.max_relevant_files, found, warnings)
        hits = self._code_hits(query, options.max_code_results, warnings)
        memories = self._memories(agent_id, memory, task_text, options.max_memories, warnings)
        spans: dict[str, list[tuple[int, int]]] = {}
        for hit in found:
            spans.setdefault(hit.path, []).append((hit.start_line, hit.end_line))
        dynamic = fit_dynamic(
            self.budgeter,
            counter,
            pool,
            files,
            hits,
            memories,
            options.max_code_results,
            spans,
            self.options.max_file_size_chars,
        )
        kept_files, kept_hits, kept_memories = dynamic["files"][1], dynamic["code_results"][1], dynamic["memories"][1]
        for name in DYNAMIC_COMPONENTS:
            sections[name] = dynamic[name][0].text
        token_count = settle(counter, sections, budget.context_tokens)
        if len(kept_files) < len(files):
            warnings.append(f"{len(files) - len(kept_files)} of {len(files)} candidate files did not fit the budget")
        breakdown = TokenBreakdown(
            **{name: counter.count(text) for name, text in sections.items()},
            reserved=budget.reserved,
            total=token_count + budget.reserved,
        )
        return TaskContext(
            context_id=f"ctx-{uuid.uuid4().hex[:16]}",
            agent_id=agent_id,
            task_spec=task,
            project_config=self.project,
            repo_map=repo_map if "repo_map" in sections else "",
            codebase_docs=docs if docs is not None else CodebaseDocsSummary(),
            relevant_files=tuple(kept_files),
            relevant_code=tuple(kept_hits),
            relevant_memories=tuple(kept_memories),
            sections={name: text for name, text in sections.items() if text},
            breakdown=breakdown,
            warnings=tuple(warnings),
            token_count=token_count,
            token_budget=budget.max_tokens,
            counter=counter.name,
            generated_at=datetime.now(UTC),
        )

    def _docs(self, paths: set[str], room: int, warnings: list[str]) -> CodebaseDocsSummary:
        """The codebase analyser's summary, else the project's own docs, else an outline of the project."""
        counter = self.counter
        analyzer = self.codebase_analyzer
        if analyzer is not None:
            try:
                return fit_summary(analyzer_summary(analyzer, self.project), room, counter)
            except Exception as exc:  # an analyser's failure must not stop the build
                log(WARNING, "fresh_codebase_analyzer_failed", error=type(exc).__name__, message=describe_error(exc))
                warnings.append(
                    f"the codebase analyser failed ({type(exc).__name__}: {describe_error(exc)}); "
                    "the project's own docs were read instead"
                )
        none = CodebaseDocsSummary()
        docs = self._guard("the codebase docs", lambda: codebase_docs(self.files, paths, room, counter), none, warnings)
        if docs.sections:
            return docs
        outline = CodebaseDocsSummary(architecture_summary=project_outline(self.project, paths))
        return fit_summary(outline, room, counter)

    def _scan(self, warnings: list[str]) -> list[tuple[str, int, int]]:
        """This build's listing of the project, handed to every source that follows the project."""
        if not self.files.exists():
            warnings.append(f"project path {str(self.files.root)!r} no longer exists; no files, map or docs")
            return []
        listing, cut_short, notes = self.files.scan()
        warnings.extend(notes)
        if cut_short:
            warnings.append(f"the project has more than {self.options.max_scan_files:,} files; only those were read")
        if self._plain_needed:
            self._guard("indexing the project", lambda: self.plain.refresh(listing), None, warnings)
        sources = {id(s): s for s in (self.repo_map, self.code_search) if s is not None and s is not self.plain}
        for source in sources.values():
            refresh: Callable[[list[tuple[str, int, int]]], None] | None = getattr(source, "refresh", None)
            if callable(refresh):
                self._guard(f"refreshing {type(source).__name__}", partial(refresh, listing), None, warnings)
        return listing

    def _mentioned(self, task: TaskSpec, paths: set[str], warnings: list[str]) -> list[tuple[str, str]]:
        """The task's files, then its dependencies, that the context can show, with why they are in it."""
        found: list[tuple[str, str]] = []
        for reason, names in (("task", task.files), ("dependency", task.dependencies)):
            for name in names:
                path = self.files.normalise(name)
                if path is None:
                    warnings.append(f"{reason} file {name!r} named by the task is outside the project root; left out")
                elif path not in paths:
                    problem = self.files.read(path).problem or "is excluded by .gitignore"
                    warnings.append(f"{reason} file {name!r} named by the task {problem}; left out")
                elif path not in (p for p, _ in found):
                    found.append((path, reason))
        return found

    def _search(self, task_text: str) -> list[CodeSearchResult]:
        """The task's best code chunks over the whole project: they rank files and choose their excerpts."""
        source = self.code_search if self.code_search is not None else self.plain
        return _results(source, task_text, _FILE_HITS)

    def _file_candidates(
        self,
        task_text: str,
        mentioned: list[tuple[str, str]],
        paths: set[str],
        limit: int,
        found: list[CodeSearchResult],
        warnings: list[str],
    ) -> list[FileContent]:
        ordered = list(mentioned)
        for path, reason in mentioned:
            if reason == "task":
                text = self.files.read(path).text or ""
                ordered += [(dep, "dependency") for dep in local_imports(path, text, paths)]
        names = [p for p, _ in mentioned]
        none: list[tuple[str, float]] = []
        if self._plain_needed:
            rank = partial(self.plain.rank_files, task_text, names)
        else:  # files by their best code search hit, from the index the code search keeps anyway
            rank = partial(_best_per_file, found)
        rankings = [self._guard("ranking files", rank, none, warnings)]
        if self.repo_map is not None and self.repo_map is not self.plain:
            source = self.repo_map
            rankings.append(
                self._guard("the repo map's ranking", lambda: source.rank_files(task_text, names), none, warnings)
            )
        ordered += [(path, "ranked") for path, _score in fuse_rankings(rankings) if path in paths]
        chosen: list[FileContent] = []
        seen: set[str] = set()
        for path, reason in ordered:
            if len(chosen) >= max(limit, sum(1 for _, r in mentioned if r == "task")) or path in seen:
                continue
            seen.add(path)
            read = self.files.read(path)
            if read.text is None:
                if reason != "ranked":
                    how = "named by the task" if path in names else "imported by a task file"
                    warnings.append(f"{reason} file {path!r} {how} {read.problem}; left out")
                continue
            chosen.append(FileContent(path=path, content=read.text, tokens=0, reason=reason))
        return chosen

    def _code_hits(self, query: str, limit: int, warnings: list[str]) -> list[CodeSearchResult]:
        """Hits of the code search and of the user's code memory, each cut at its relevance floor, then fused."""
        if limit <= 0 or not query.strip():
            return []
        lists: list[list[CodeSearchResult]] = []
        none: list[CodeSearchResult] = []
        for what, source in (("code search", self.code_search), ("code memory", self.code_memory)):
            if source is None:
                continue
            hits = self._guard(what, partial(_results, source, query, limit * 4), none, warnings)
            if hits:
                floor = max(hit.score for hit in hits) * self.options.min_code_relevance
                lists.append([hit for hit in hits if hit.score >= floor])  # cut to the limit once files are placed
        if len(lists) < 2:
            return lists[0] if lists else []
        fused: dict[tuple[str, int, int], float] = {}
        first: dict[tuple[str, int, int], CodeSearchResult] = {}
        for hits in lists:
            for rank, hit in enumerate(hits, start=1):
                key = (hit.path, hit.start_line, hit.end_line)
                fused[key] = fused.get(key, 0.0) + 1.0 / (60 + rank)
                first.setdefault(key, hit)
        order = sorted(fused, key=lambda key: (-fused[key], key))
        return [first[key].model_copy(update={"score": fused[key]}) for key in order]

    def _memories(
        self, agent_id: str | None, memory: MemorySource | None, task_text: str, limit: int, warnings: list[str]
    ) -> list[MemoryEntry]:
        source: Any = memory
        if source is None and self.memory is not None and agent_id is not None:
            store = self.memory
            source = (
                store
                if not hasattr(store, "agent")
                else self._guard(
                    f"opening the memory of agent {agent_id!r}", lambda: store.agent(agent_id, create=False), None, []
                )
            )
        if source is None:
            return []
        floor = self.options.min_memory_relevance
        return self._guard("reading memories", lambda: gather_memories(source, task_text, limit, floor), [], warnings)


def _results(source: CodeSearchProvider, query: str, k: int) -> list[CodeSearchResult]:
    return [as_result(hit) for hit in source.search(query, k)]


def _best_per_file(found: list[CodeSearchResult]) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for hit in found:
        if hit.score > best.get(hit.path, 0.0):
            best[hit.path] = hit.score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))

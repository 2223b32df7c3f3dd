"""How each component of a fresh context reads to the model, and fitting a section to its allocation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolctx.fresh._models import CodeSearchResult, ContextProjectConfig, MemoryEntry, TaskSpec
from toolctx.tokens import TokenCounter

__all__ = [
    "HEADINGS",
    "CachedCounter",
    "Fitted",
    "code_item",
    "file_item",
    "fit_section",
    "memory_item",
    "system_prompt",
    "task_section",
]

HEADINGS = {
    "task_spec": "## Task",
    "repo_map": "## Repository map",
    "codebase_docs": "## Codebase docs",
    "files": "## Files",
    "code_results": "## Relevant code",
    "memories": "## Memories",
}
_FENCES = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "sh",
}


class CachedCounter:
    """A counter that remembers its counts, so a second build recounts only what changed."""

    def __init__(self, counter: TokenCounter, max_entries: int = 20_000) -> None:
        self.counter = counter
        self.max_entries = max_entries
        self._counts: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.counter.name

    def count(self, text: str) -> int:
        found = self._counts.get(text)
        if found is None:
            found = self.counter.count(text)
            if len(self._counts) >= self.max_entries:
                self._counts.clear()
            self._counts[text] = found
        return found


def system_prompt(project: ContextProjectConfig, custom: str | None) -> str:
    """The caller's system prompt, or one written from the project's configuration."""
    if custom is not None:
        return custom
    facts = [f"Project: {project.name}"]
    if project.language:
        facts.append(f"Language: {project.language}")
    if project.framework:
        facts.append(f"Framework: {project.framework}")
    if project.test_framework:
        facts.append(f"Tests: {project.test_framework}")
    return (
        "You are a software engineer working on one task in this project. The context below was built "
        "for this task alone: the repository map, the project's docs, the files and code that matter, and "
        "what you remembered from earlier work. Parts cut to fit are marked.\n" + "\n".join(facts)
    )


def task_section(task: TaskSpec) -> str:
    lines = [HEADINGS["task_spec"], f"{task.name} (id {task.id})"]
    if task.description:
        lines += ["", task.description]
    if task.files:
        lines += ["", "Files: " + ", ".join(task.files)]
    if task.dependencies:
        lines.append("Depends on: " + ", ".join(task.dependencies))
    if task.acceptance_criteria:
        lines += ["", "Acceptance criteria:", *(f"- {c}" for c in task.acceptance_criteria)]
    if task.test_criteria:
        lines += ["", f"Tests: {task.test_criteria}"]
    if task.estimated_time is not None:
        lines.append(f"Estimated time: {task.estimated_time:g} h")
    return "\n".join(lines)


def _fence(path: str) -> str:
    dot = path.rfind(".")
    return _FENCES.get(path[dot:].lower(), "") if dot > path.rfind("/") else ""


def file_item(path: str, content: str, note: str = "") -> str:
    fence = "````" if "```" in content else "```"
    return f"### {path}{note}\n{fence}{_fence(path)}\n{content.rstrip()}\n{fence}"


def code_item(hit: CodeSearchResult) -> str:
    fence = "````" if "```" in hit.text else "```"
    title = f"### {hit.path}:{hit.start_line}-{hit.end_line} {hit.name}".rstrip()
    return f"{title}\n{fence}{_fence(hit.path)}\n{hit.text.rstrip()}\n{fence}"


def memory_item(entry: MemoryEntry) -> str:
    return f"- [{entry.item_type}, {entry.tier}] {entry.content.strip()}"


@dataclass(frozen=True)
class Fitted:
    """A section fitted to its allocation: its text, its tokens, which items it kept."""

    text: str
    tokens: int
    kept: tuple[int, ...]
    texts: tuple[str, ...] = ()  # the kept items as shown, in order


def fit_section(name: str, items: Sequence[str], cap: int, counter: TokenCounter) -> Fitted:
    """Heading and whole items, in order, while they fit ``cap``; the rest counted in a closing line.

    The whole section, heading and marker included, counts at most ``cap`` (files
    are fitted by ``_fitting.fit_file_section`` instead).
    """
    heading = HEADINGS[name]
    if not items or cap <= 0:
        return Fitted("", 0, ())
    costs = [counter.count(item) for item in items]
    separator = counter.count("\n\n")
    marker_room = counter.count(f"[… {len(items)} of {len(items)} left out to fit the token budget]") + separator
    room = cap - counter.count(heading) - separator
    whole = sum(costs) + separator * len(items) <= room
    if not whole:
        room -= marker_room
    parts: list[str] = []
    kept: list[int] = []
    for index, (item, cost) in enumerate(zip(items, costs, strict=True)):
        if cost + separator <= room:
            parts.append(item)
            kept.append(index)
            room -= cost + separator
    while True:
        lines = [heading, *parts]
        if len(kept) < len(items):
            lines.append(f"[… {len(items) - len(kept)} of {len(items)} left out to fit the token budget]")
        text = "\n\n".join(lines) if parts else ""
        tokens = counter.count(text)
        if tokens <= cap:
            return Fitted(text, tokens, tuple(kept), tuple(parts))
        parts.pop()  # counting the joined text came out above the sum of its parts: drop the last item
        kept.pop()

"""The codebase docs part when the project's own docs are not read: a codebase analyser's, or an outline.

A codebase analyser (the seed's ``CodebaseAnalyzer``) is any object with a
``docs_summary(project)`` method, or any callable taking the project, that gives
a :class:`CodebaseDocsSummary`; the builder calls it instead of reading the
project's docs. Whatever it gives is fitted to the allocation here.

A project with no docs at all still gets a summary: an outline written from what
the project has (its name and configuration, the languages of its files, its
top-level layout), so the model always learns what it is working on.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Collection
from typing import Protocol, runtime_checkable

from toolctx.fresh._models import CodebaseDocsSummary, ContextProjectConfig, DocSection
from toolctx.fresh._truncate import truncate_lines
from toolctx.tokens import TokenCounter

__all__ = [
    "AnalyzerFunction",
    "CodebaseAnalyzer",
    "analyzer_summary",
    "check_analyzer",
    "fit_summary",
    "project_outline",
]

_LANGUAGES = {
    ".py": "Python",
    ".pyi": "Python",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".js": "JavaScript",
    ".jsx": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
    ".kt": "Kotlin",
    ".swift": "Swift",
    ".rb": "Ruby",
    ".php": "PHP",
    ".cs": "C#",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".hpp": "C++",
    ".scala": "Scala",
    ".sh": "Shell",
    ".sql": "SQL",
}
_TOP_LEVEL = 20  # entries of the top-level layout listed; the rest are counted
_HEADING = "### Project overview"


@runtime_checkable
class CodebaseAnalyzer(Protocol):
    """Supplies the codebase docs of a fresh context (the seed's ``dependencies.codebaseAnalyzer``).

    ``docs_summary`` is called at every build, in the building thread, with the
    project the context is for; cache in it what is costly to work out. A plain
    callable taking the project does as well. An analyser that raises, or gives
    something other than a :class:`CodebaseDocsSummary`, is logged and the
    project's own docs are read instead: it never stops a build.
    """

    def docs_summary(self, project: ContextProjectConfig) -> CodebaseDocsSummary:
        """The project's docs: an architecture summary and/or sections, of any size (they are fitted)."""
        ...


AnalyzerFunction = Callable[[ContextProjectConfig], CodebaseDocsSummary]


def check_analyzer(analyzer: object) -> CodebaseAnalyzer | AnalyzerFunction | None:
    """``analyzer`` if it can be used as a codebase analyser, else a TypeError saying what is wanted."""
    if analyzer is None or isinstance(analyzer, CodebaseAnalyzer) or callable(analyzer):
        return analyzer
    raise TypeError(
        "codebase_analyzer must have a docs_summary(project) method or be a callable taking the project, "
        f"got {type(analyzer).__name__}"
    )


def analyzer_summary(
    analyzer: CodebaseAnalyzer | AnalyzerFunction, project: ContextProjectConfig
) -> CodebaseDocsSummary:
    """What ``analyzer`` gives for ``project``; a TypeError when it is not a :class:`CodebaseDocsSummary`."""
    summary = analyzer.docs_summary(project) if isinstance(analyzer, CodebaseAnalyzer) else analyzer(project)
    if not isinstance(summary, CodebaseDocsSummary):
        raise TypeError(f"the codebase analyser gave a {type(summary).__name__}, not a CodebaseDocsSummary")
    return summary


def fit_summary(summary: CodebaseDocsSummary, max_tokens: int, counter: TokenCounter) -> CodebaseDocsSummary:
    """``summary`` within ``max_tokens``: its architecture summary first, then whole-line cuts of its sections.

    A part cut is marked (``truncated`` on a section, a marker line in the text);
    ``tokens`` is what the kept parts cost.
    """
    left = max_tokens
    overview = ""
    if summary.architecture_summary.strip():
        cut = truncate_lines(summary.architecture_summary.strip(), left, counter)
        overview, left = cut.text, left - cut.tokens
    sections: list[DocSection] = []
    for section in summary.sections:
        if left <= 0 or not section.text.strip():
            continue
        cut = truncate_lines(section.text, left, counter)
        if cut.text:
            sections.append(
                section.model_copy(update={"text": cut.text, "truncated": section.truncated or cut.truncated})
            )
            left -= cut.tokens
    return CodebaseDocsSummary(architecture_summary=overview, sections=tuple(sections), tokens=max_tokens - left)


def project_outline(project: ContextProjectConfig, paths: Collection[str]) -> str:
    """A few lines saying what the project is, from its configuration and its file listing; never empty."""
    described = [project.language, project.framework and f"framework {project.framework}"]
    if project.test_framework:
        described.append(f"tests with {project.test_framework}")
    about = ", ".join(part for part in described if part)
    lines = [_HEADING, f"Project: {project.name}" + (f" ({about})" if about else "")]
    languages = Counter(
        _LANGUAGES[ext] for ext in (posixpath.splitext(p)[1].lower() for p in paths) if ext in _LANGUAGES
    )
    if languages:
        counted = ", ".join(
            f"{name} ({count} file{'s' if count > 1 else ''})" for name, count in languages.most_common()
        )
        lines.append(f"Languages: {counted}")
    if not paths:
        lines.append("No files the context can show (the project is empty, or every file is excluded).")
        return "\n".join(lines)
    lines.append(f"Files: {len(paths):,}, and no README or ARCHITECTURE document.")
    top: Counter[str] = Counter(p.split("/", 1)[0] + ("/" if "/" in p else "") for p in paths)
    entries = sorted(top, key=lambda name: (not name.endswith("/"), name))
    shown = [f"{name} ({_files(top[name])})" if name.endswith("/") else name for name in entries[:_TOP_LEVEL]]
    more = len(entries) - len(shown)
    lines.append("Top level: " + ", ".join(shown) + (f", and {more} more" if more > 0 else ""))
    return "\n".join(lines)


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"

"""Fitting the dynamic components to the pool, and the last check of the whole context against its budget.

Files, code results and memories first share the pool by their shares, each
taking no more than it wants (:meth:`TokenBudgeter.allocate`). Files are placed
first (:func:`toolctx.fresh._excerpts.fit_files`: whole, or as excerpts of the
parts matching the task when they do not fit whole); code already shown by a
file is dropped, and what the files left is shared between code results and
memories. If those two leave tokens unused while files were cut, the files are
fitted again with them.
"""

from __future__ import annotations

from typing import Any

from toolctx.fresh import _render
from toolctx.fresh._budgeter import TokenBudgeter
from toolctx.fresh._excerpts import FileFit, fit_files, line_ranges
from toolctx.fresh._models import CodeSearchResult, FileContent, MemoryEntry
from toolctx.fresh._truncate import truncate_lines
from toolctx.tokens import TokenCounter

__all__ = ["fit_dynamic", "settle"]


def fit_dynamic(
    budgeter: TokenBudgeter,
    counter: TokenCounter,
    pool: int,
    files: list[FileContent],
    hits: list[CodeSearchResult],
    memories: list[MemoryEntry],
    max_hits: int,
    spans: dict[str, list[tuple[int, int]]] | None = None,
    max_whole_chars: int | None = None,
) -> dict[str, tuple[_render.Fitted, list[Any]]]:
    """Files, code results and memories fitted to shares of ``pool``, unused parts flowing on.

    ``spans`` are the search's hits in each file, best first, as line ranges: what
    an excerpt of a file too large to show whole keeps; a file longer than
    ``max_whole_chars`` is shown only as an excerpt.
    """
    spans = spans or {}
    file_items = [_render.file_item(f.path, f.content) for f in files]
    code_items = [_render.code_item(h) for h in hits]
    memory_items = [_render.memory_item(m) for m in memories]
    items = {"files": file_items, "code_results": code_items, "memories": memory_items}
    demands = {name: sum(counter.count(i) + 2 for i in rows) + 8 if rows else 0 for name, rows in items.items()}
    shares = budgeter.allocate(pool, demands)
    fitted, placed = fit_file_section(files, spans, shares["files"], counter, max_whole_chars)
    hits = [hit for hit in hits if not _shown(hit, placed, files)][:max_hits]
    code_items = [_render.code_item(h) for h in hits]
    demands["code_results"] = sum(counter.count(i) + 2 for i in code_items) + 8 if code_items else 0
    # What the files left flows to code results and memories, by their shares.
    rest = budgeter.allocate(pool - fitted.tokens, {**demands, "files": 0})
    code = _render.fit_section("code_results", code_items, rest["code_results"], counter)
    mems = _render.fit_section("memories", memory_items, rest["memories"], counter)
    left = pool - fitted.tokens - code.tokens - mems.tokens
    if left > 0 and (len(placed) < len(file_items) or any(fit.lines is not None for fit in placed)):
        fitted, placed = fit_file_section(files, spans, pool - code.tokens - mems.tokens, counter, max_whole_chars)
        shown_before = [hits[i] for i in code.kept]
        still = [hit for hit in shown_before if not _shown(hit, placed, files)]
        if len(still) < len(shown_before):  # the files now show some of that code: it goes (fewer tokens)
            hits, code_items = still, [_render.code_item(h) for h in still]
            code = _render.fit_section("code_results", code_items, code.tokens, counter)
    kept_files = []
    for fit in placed:
        cut = fit.lines is not None
        content = fit.item.split("\n", 2)[2].rsplit("\n", 1)[0] if cut else files[fit.index].content
        update: dict[str, object] = {"truncated": cut, "content": content, "tokens": fit.tokens}
        if fit.lines is not None:
            update["shown_lines"] = line_ranges(fit.lines)
        kept_files.append(files[fit.index].model_copy(update=update))
    return {
        "files": (fitted, kept_files),
        "code_results": (
            code,
            [hits[i].model_copy(update={"tokens": counter.count(code_items[i])}) for i in code.kept],
        ),
        "memories": (
            mems,
            [memories[i].model_copy(update={"tokens": counter.count(memory_items[i])}) for i in mems.kept],
        ),
    }


def fit_file_section(
    files: list[FileContent],
    spans: dict[str, list[tuple[int, int]]],
    cap: int,
    counter: TokenCounter,
    max_whole_chars: int | None = None,
) -> tuple[_render.Fitted, list[FileFit]]:
    """The files section within ``cap``: heading, the files placed by :func:`fit_files`, a line for those left out."""
    heading = _render.HEADINGS["files"]
    if not files or cap <= 0:
        return _render.Fitted("", 0, ()), []
    separator = counter.count("\n\n")
    marker = counter.count(f"[… {len(files)} of {len(files)} left out to fit the token budget]") + separator
    room = cap - counter.count(heading) - separator - marker
    placed = fit_files([(f.path, f.content) for f in files], spans, room, counter, max_whole_chars)
    while True:
        lines = [heading, *(fit.item for fit in placed)]
        if len(placed) < len(files):
            lines.append(f"[… {len(files) - len(placed)} of {len(files)} left out to fit the token budget]")
        text = "\n\n".join(lines) if placed else ""
        tokens = counter.count(text)
        if tokens <= cap:
            kept = tuple(fit.index for fit in placed)
            return _render.Fitted(text, tokens, kept, tuple(fit.item for fit in placed)), placed
        placed.pop()  # joining came out above the sum of the parts: drop the last file


def _shown(hit: CodeSearchResult, placed: list[FileFit], files: list[FileContent]) -> bool:
    """Whether every line of ``hit`` is already shown by a file of the section."""
    for fit in placed:
        if files[fit.index].path == hit.path:
            if fit.lines is None:
                return True
            shown = set(fit.lines)
            return all(n in shown for n in range(hit.start_line, hit.end_line + 1))
    return False


def settle(counter: TokenCounter, sections: dict[str, str], limit: int) -> int:
    """The rendered context's token count, cutting the last dynamic sections while it is over ``limit``."""
    while True:  # every pass makes a section strictly shorter, so this ends (at the latest, empty)
        system = sections.get("system_prompt", "")
        rest = "\n\n".join(text for name, text in sections.items() if name != "system_prompt" and text)
        total = counter.count(system) + counter.count(rest)
        if total <= limit:
            return total
        over = total - limit
        for name in (
            "memories",
            "code_results",
            "files",
            "codebase_docs",
            "repo_map",
            "task_spec",
            "system_prompt",
        ):
            if sections.get(name):
                size = counter.count(sections[name])
                sections[name] = truncate_lines(sections[name], max(0, size - over - 2), counter).text
                break

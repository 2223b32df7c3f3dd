"""Fitting the dynamic components to the pool, and the last check of the whole context against its budget.

Files, code results and memories first share the pool by their shares, each
taking no more than it wants (:meth:`TokenBudgeter.allocate`). Files are placed
first; code found in a file already shown whole is dropped, and what the files
left is shared between code results and memories. If those two leave tokens
unused while files were cut, the files are fitted again with them.
"""

from __future__ import annotations

from typing import Any

from toolctx.budget import TokenBudgeter, truncate_lines
from toolctx.fresh import _render
from toolctx.fresh._models import CodeSearchResult, FileContent, MemoryEntry
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
) -> dict[str, tuple[_render.Fitted, list[Any]]]:
    """Files, code results and memories fitted to shares of ``pool``, unused parts flowing on."""
    file_items = [_render.file_item(f.path, f.content) for f in files]
    bodies = [f.content for f in files]
    code_items = [_render.code_item(h) for h in hits]
    memory_items = [_render.memory_item(m) for m in memories]
    items = {"files": file_items, "code_results": code_items, "memories": memory_items}
    demands = {name: sum(counter.count(i) + 2 for i in rows) + 8 if rows else 0 for name, rows in items.items()}
    shares = budgeter.allocate(pool, demands)
    fitted = _render.fit_section("files", file_items, shares["files"], counter, partial_bodies=bodies)
    # Code found in a file shown whole is already there.
    whole = {files[i].path for i in fitted.kept if i != fitted.partial}
    hits = [hit for hit in hits if hit.path not in whole][:max_hits]
    code_items = [_render.code_item(h) for h in hits]
    demands["code_results"] = sum(counter.count(i) + 2 for i in code_items) + 8 if code_items else 0
    # What the files left flows to code results and memories, by their shares.
    rest = budgeter.allocate(pool - fitted.tokens, {**demands, "files": 0})
    code = _render.fit_section("code_results", code_items, rest["code_results"], counter)
    mems = _render.fit_section("memories", memory_items, rest["memories"], counter)
    left = pool - fitted.tokens - code.tokens - mems.tokens
    if left > 0 and (len(fitted.kept) < len(file_items) or fitted.partial is not None):
        fitted = _render.fit_section(
            "files", file_items, pool - code.tokens - mems.tokens, counter, partial_bodies=bodies
        )
    kept_files = []
    for index, shown in zip(fitted.kept, fitted.texts, strict=True):
        cut = index == fitted.partial
        content = shown.split("\n", 2)[2].rsplit("\n", 1)[0] if cut else files[index].content
        kept_files.append(
            files[index].model_copy(update={"truncated": cut, "content": content, "tokens": counter.count(shown)})
        )
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

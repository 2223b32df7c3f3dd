"""Build a fresh, budgeted context for a task on this repository, as an agent would receive it.

Run it from anywhere: ``python examples/fresh_context.py``. It reads the
repository it lives in and writes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from toolctx.fresh import ContextOptions, ContextProjectConfig, TaskSpec, create_context_system

ROOT = Path(__file__).resolve().parent.parent


async def main() -> None:
    system = create_context_system(
        ContextProjectConfig(name="toolctx", path=str(ROOT), language="python", test_framework="pytest"),
    )
    task = TaskSpec(
        id="budget-1",
        name="Let the token budgeter cut lists by priority",
        description="fit_items keeps whole items in order; callers want the most important items kept first.",
        files=("toolctx/fresh/_truncate.py", "docs/no-such-file.md"),
        acceptance_criteria=("budgets are never exceeded", "the cut items are named"),
    )
    options = ContextOptions(max_tokens=40_000, code_search_query="fit_items truncate whole items marker")

    prepared = await system.integration.prepare_agent_context("agent-1", task, options)
    context = prepared.context
    assert context is not None, prepared.error
    print(f"Context {context.context_id} for task {task.id!r}, counted in {context.counter}")
    print(f"Tokens: {context.token_count:,} of {context.token_budget:,} (reserve {context.breakdown.reserved:,})")
    print("Conversation history:", context.conversation_history)
    for file in context.relevant_files:
        shown = sum(last - first + 1 for first, last in file.shown_lines)
        cut = f", excerpt of {shown:,} lines" if file.truncated else ""
        print(f"  file  {file.path} ({file.reason}, {file.tokens:,} tokens{cut})")
    for hit in context.relevant_code:
        print(f"  code  {hit.path}:{hit.start_line}-{hit.end_line} {hit.name[:60]}")

    validation = system.manager.validate_context(context)
    print("Valid:", validation.valid)
    breakdown = validation.breakdown.model_dump()
    print("Breakdown:", ", ".join(f"{name} {tokens:,}" for name, tokens in breakdown.items()))
    for warning in validation.warnings:
        print("Warning:", warning)
    for suggestion in validation.suggestions:
        print("Suggestion:", suggestion)

    messages = context.to_messages()
    print(f"Messages for the model: {[m['role'] for m in messages]}, first user line: {messages[-1]['content'][:7]!r}")

    await system.integration.on_task_complete("agent-1", task.id)
    print("Active contexts after the task:", len(system.manager.get_active_contexts()))


if __name__ == "__main__":
    asyncio.run(main())

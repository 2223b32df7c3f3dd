"""The prepared context, and how it is written for real clients: OpenAI chat, Anthropic messages, LangChain.

Order, the same in every output, stable parts first so a provider's prompt cache
keeps as long a prefix as possible: the tool definitions, the system prompt with
the instructions, the history (only ever appended to between compactions), and
last the plugins' components (plan, memory index...), which may change on every
call. Compaction changes the history from its first edit on; between two
compactions only the last message and what was added change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolctx.assembly._measure import openai_message
from toolctx.assembly._types import CompactionStep, Component, ContextBudget, HistoryMessage

__all__ = ["CONTEXT_ID", "SYSTEM_ID", "PreparedContext", "context_block", "sequence"]

SYSTEM_ID = "toolctx:system"
CONTEXT_ID = "toolctx:context"


def context_block(components: Sequence[Component]) -> str:
    """The text of the message that carries the components, each in a tag named after it."""
    return "\n\n".join(f"<{c.name}>\n{c.content}\n</{c.name}>" for c in components)


def sequence(
    system: HistoryMessage | None, shown: Sequence[HistoryMessage], block: HistoryMessage | None
) -> list[HistoryMessage]:
    """Every message the model is sent, in order (the one list measured and rendered)."""
    out = [system] if system is not None else []
    out.extend(shown)
    if block is not None:
        out.append(block)
    return out


@dataclass(repr=False)
class PreparedContext:
    """One model call's context: what to send, its budget, and what compaction did to get there.

    ``messages``: everything in order, as :class:`HistoryMessage` objects (the
    system prompt first, the components' message last, with the id
    ``toolctx:context``); ``history``: the history as shown (stand-ins, markers);
    ``components``: the plugins' components included; ``tools``: the tool
    definitions (OpenAI's function format), ``read_context`` included once the
    conversation shows a stand-in; ``budget``: exactly what this uses;
    ``log``: the compaction steps of this call.
    """

    messages: list[HistoryMessage]
    history: list[HistoryMessage]
    components: list[Component]
    tools: list[dict[str, Any]]
    budget: ContextBudget
    compacted: bool = False
    log: list[CompactionStep] = field(default_factory=list)
    context_role: str = "system"

    def __repr__(self) -> str:
        return (
            f"PreparedContext(messages={len(self.messages)}, components={[c.name for c in self.components]}, "
            f"tools={len(self.tools)}, used={self.budget.used:,}/{self.budget.limit:,}, compacted={self.compacted})"
        )

    # -- OpenAI chat completions -------------------------------------------------------------

    def to_openai(self) -> list[dict[str, Any]]:
        """Chat Completions ``messages``."""
        role: Any = self.context_role
        return [openai_message(m, role if m.id == CONTEXT_ID else None) for m in self.messages]

    def openai_tools(self) -> list[dict[str, Any]]:
        """Chat Completions ``tools`` (``None`` is what to pass when this is empty)."""
        return [dict(t) for t in self.tools]

    # -- Anthropic messages ------------------------------------------------------------------

    def to_anthropic(self) -> dict[str, Any]:
        """``{"system": ..., "messages": [...]}`` for the Messages API.

        The system prompt goes in ``system``; other system-role messages and the
        components become user text; consecutive results and texts of the user
        side are one message, tool results first, as the API asks.
        """
        system = ""
        turns: list[dict[str, Any]] = []
        for m in self.messages:
            if m.id == SYSTEM_ID:
                system = m.content
                continue
            if m.role == "assistant":
                blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
                blocks += [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)} for c in m.tool_calls
                ]
                role = "assistant"
            elif m.role == "tool":
                blocks = [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}]
                role = "user"
            else:
                blocks = [{"type": "text", "text": m.content}] if m.content else []
                role = "user"
            if not blocks:
                continue
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        for turn in turns:  # tool results lead their user message
            if turn["role"] == "user":
                turn["content"].sort(key=lambda b: b["type"] != "tool_result")
        return {"system": system, "messages": turns}

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tool definitions in the Messages API's form."""
        out = []
        for t in self.tools:
            function = t.get("function", t)
            out.append(
                {
                    "name": function["name"],
                    "description": function.get("description", ""),
                    "input_schema": function.get("parameters", {"type": "object", "properties": {}}),
                }
            )
        return out

    # -- LangChain ---------------------------------------------------------------------------

    def to_langchain(self) -> list[Any]:
        """LangChain messages (``langchain_core`` must be installed: ``pip install 'toolctx[langchain]'``)."""
        try:
            from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
        except ImportError as exc:
            raise ImportError("to_langchain() needs LangChain: pip install 'toolctx[langchain]'") from exc
        out: list[Any] = []
        for m in self.messages:
            if m.role == "tool":
                out.append(ToolMessage(content=m.content, tool_call_id=m.tool_call_id or "", name=m.name, id=m.id))
            elif m.role == "assistant":
                calls = [
                    {"id": c.id, "name": c.name, "args": dict(c.arguments), "type": "tool_call"} for c in m.tool_calls
                ]
                out.append(AIMessage(content=m.content, tool_calls=calls, id=m.id))
            elif m.role == "system" or (m.id == CONTEXT_ID and self.context_role == "system"):
                out.append(SystemMessage(content=m.content, id=m.id))
            else:
                out.append(HumanMessage(content=m.content, id=m.id))
        return out

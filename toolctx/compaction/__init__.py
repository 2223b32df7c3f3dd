"""The one policy deciding what a model sees of tool calls: stand-ins and batched, cache-aware compaction.

Framework adapters (``toolctx_langchain``, ``toolctx_openai_agents``) only
translate their framework's messages; everything they decide comes from here:

- :class:`CompactionSettings`: every option and its default, with the reasons;
- :func:`persist_call` and :func:`shown_output`: storing a call without ever
  breaking the tool, and the stand-in for a big output (only when it was stored);
  :func:`queue_call` stores a call whose output is :func:`shown_whole` later,
  with the others queued, as soon as anything reads the session;
- :class:`Compactor`: per model call, which old results and long arguments become
  stand-ins, in batches from a high-water to a low-water mark, incrementally;
- :func:`notes`: per session, whether ``read_context`` is worth offering yet and
  the question tool calls are tagged with; :func:`session_resolver` finds the
  session an adapter uses.
"""

from __future__ import annotations

from toolctx.compaction._notes import (
    BeforeModelCall,
    Notes,
    Resolver,
    SessionSource,
    before_model_call,
    notes,
    session_resolver,
)
from toolctx.compaction._persist import SavedCall, persist_call, queue_call, shown_output, shown_whole
from toolctx.compaction._policy import Compactor, Edit, Item, ItemAdapter, ToolCall
from toolctx.compaction._settings import READ_CONTEXT, CompactionSettings, pays_for_cache_break

__all__ = [
    "READ_CONTEXT",
    "BeforeModelCall",
    "CompactionSettings",
    "Compactor",
    "Edit",
    "Item",
    "ItemAdapter",
    "Notes",
    "Resolver",
    "SavedCall",
    "SessionSource",
    "ToolCall",
    "before_model_call",
    "notes",
    "pays_for_cache_break",
    "persist_call",
    "queue_call",
    "session_resolver",
    "shown_output",
    "shown_whole",
]

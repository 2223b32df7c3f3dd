"""The one policy deciding what a model sees of tool calls: stand-ins and batched, cache-aware compaction.

"Compaction" in toolctx means this: outputs, arguments and text replaced by
restorable stand-ins, each naming the handle ``read_context`` reads back. (The
context assembler's priority shedding, :meth:`toolctx.assembly.ContextAssembler.compact`,
keeps seed 004's word for its own job and uses this policy for tool outputs.)

Framework adapters (``toolctx_langchain``, ``toolctx_openai_agents``) and the
assembler only translate their objects; everything they decide comes from here.
From need to door:

- every option and its default, with the reasons: :class:`CompactionSettings`
  (a tool's own limit: :meth:`CompactionSettings.limit_for`);
- a tool returned (store it, then show it whole, queue it, or stand it in):
  :func:`at_tool_time`, built of :func:`persist_call`, :func:`queue_call`,
  :func:`shown_whole`, :func:`over_limit` and :func:`shown_output`;
- a model call is about to be sent (old results and long arguments become
  stand-ins, in batches from a high-water to a low-water mark): :class:`Compactor`
  with an :class:`ItemAdapter` for the framework's messages; :class:`PrefixSize`
  estimates the system prompt and tools sent before them;
- the ``read_context`` tool: :data:`READ_CONTEXT` (its name),
  :data:`READ_CONTEXT_DESCRIPTION`, :data:`READ_CONTEXT_PARAMETERS`,
  :data:`READ_CONTEXT_DEFINITION`, and :func:`read_context`, its body;
- the stand-ins themselves: :func:`stand_in`, :func:`result_marker`,
  :func:`argument_stand_in`, :func:`text_marker`, :func:`is_stand_in`,
  :func:`handle_of`, :func:`stored_text`, :func:`output_text`;
- handles passed as arguments (``content="ctx:<id>"``) for tools an adapter's
  ``by_reference`` setting names: :class:`HandleParameters` (``is_text_schema`` says
  which parameters get text), resolved around the tool call's :func:`reference_scope`,
  which also scopes decorated tools' own handles to the conversation;
- per session, whether ``read_context`` is worth offering yet and the question
  tool calls are tagged with: :func:`notes`; the session an adapter uses:
  :func:`session_resolver`; a memory's trigger before each model call:
  :func:`before_model_call`.
"""

from __future__ import annotations

from toolctx.compaction._items import Edit, Item, ItemAdapter, ToolCall
from toolctx.compaction._notes import (
    BeforeModelCall,
    Notes,
    Resolver,
    SessionSource,
    before_model_call,
    notes,
    session_resolver,
)
from toolctx.compaction._policy import Compactor
from toolctx.compaction._prefix import PrefixSize
from toolctx.compaction._references import HandleParameters, is_text_schema
from toolctx.compaction._settings import READ_CONTEXT, CompactionSettings, pays_for_cache_break
from toolctx.compaction._standins import (
    ASSISTANT_TEXT,
    DEFAULT_READ_LIMIT,
    READ_CONTEXT_DEFINITION,
    READ_CONTEXT_DESCRIPTION,
    READ_CONTEXT_PARAMETERS,
    STAND_IN_MARK,
    answer_read_context,
    argument_stand_in,
    argument_text,
    handle_of,
    is_stand_in,
    output_text,
    read_context,
    result_marker,
    stand_in,
    stored_text,
    text_marker,
)
from toolctx.compaction._tooltime import (
    ToolTime,
    at_tool_time,
    over_limit,
    persist_call,
    queue_call,
    shown_output,
    shown_whole,
)
from toolctx.sessions import SavedCall, reference_scope

__all__ = [
    "ASSISTANT_TEXT",
    "DEFAULT_READ_LIMIT",
    "READ_CONTEXT",
    "READ_CONTEXT_DEFINITION",
    "READ_CONTEXT_DESCRIPTION",
    "READ_CONTEXT_PARAMETERS",
    "STAND_IN_MARK",
    "BeforeModelCall",
    "CompactionSettings",
    "Compactor",
    "Edit",
    "HandleParameters",
    "Item",
    "ItemAdapter",
    "Notes",
    "PrefixSize",
    "Resolver",
    "SavedCall",
    "SessionSource",
    "ToolCall",
    "ToolTime",
    "answer_read_context",
    "argument_stand_in",
    "argument_text",
    "at_tool_time",
    "before_model_call",
    "handle_of",
    "is_stand_in",
    "is_text_schema",
    "notes",
    "output_text",
    "over_limit",
    "pays_for_cache_break",
    "persist_call",
    "queue_call",
    "read_context",
    "reference_scope",
    "result_marker",
    "session_resolver",
    "shown_output",
    "shown_whole",
    "stand_in",
    "stored_text",
    "text_marker",
]

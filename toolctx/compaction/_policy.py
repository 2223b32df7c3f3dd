"""The compaction policy: which tool results and arguments a model sees whole, and which as stand-ins.

An adapter hands :meth:`Compactor.view` the model input it is about to send (its
framework's messages or items) and an :class:`ItemAdapter` that describes one item
and applies a decision to one. The compactor keeps, per conversation, what it saw
last time, so it only describes items that are new since the previous model call;
decisions are remembered per conversation, tool call id and content
(:mod:`toolctx.compaction._decisions`) and applied identically on every later call,
so the prompt prefix only changes when a new batch is made. A batch takes old
results, long arguments and the long assistant text written before them, all
restorable through their handles.

A stored call is found by its conversation (the task its calls are stored under)
and its own identity: the handle its stand-in names, or the framework's call id
with the arguments and output the conversation shows. A call id that comes back
with other content (a model server numbering its calls per response, a replayed or
client-supplied history) is another call, never the old record.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from toolctx.compaction._conversation import Conversation
from toolctx.compaction._decisions import (
    Decisions,
    digest,
    keep_shared_state,
    shared_state,
    state_name,
)
from toolctx.compaction._inuse import choose, in_use, lines_in_use
from toolctx.compaction._items import Edit, Item, ItemAdapter, ToolCall
from toolctx.compaction._notes import Notes, Resolver, SessionSource, notes, session_resolver
from toolctx.compaction._settings import CompactionSettings, pays_for_cache_break, small_record
from toolctx.compaction._standins import (
    argument_stand_in,
    handle_of,
    is_stand_in,
    result_marker,
    showing,
    stored_text,
    text_marker,
)
from toolctx.compaction._tooltime import (
    shown_output,
    store_late,
    store_said_ahead,
    stored_call,
    stored_said,
    unstored_text,
)
from toolctx.sessions import CallParts, ContextSession, SavedCall
from toolctx.telemetry import events
from toolctx.tokens import estimate_tokens_cached as estimated

__all__ = ["Compactor"]

T = TypeVar("T")
_MARKER_TOKENS = 25  # a result marker without preview, in tokens
_ARG_STAND_IN_TOKENS = 35  # an argument stand-in without its preview
_TEXT_MARKER_TOKENS = 25  # a marker for old assistant text
_CONVERSATIONS = 64  # conversations remembered per compactor, least recently used dropped
_UNSET: Any = object()


class Compactor(Generic[T]):
    """One compaction policy for one adapter; state and decisions per conversation.

    ``view(items, key)`` returns the items to send and the edits made in this call. Work per call is
    proportional to the items new since the previous call plus the calls compacted (``operations``);
    an unexpected history (edited elsewhere, or new) is read again from the start once.
    """

    def __init__(self, adapter: ItemAdapter[T], settings: CompactionSettings, session: SessionSource = None) -> None:
        self.adapter = adapter
        self.settings = settings
        self.session: Resolver = session_resolver(session)
        self.decided = Decisions()  # per conversation and content: what is shown from now on
        self.operations = 0
        self._conversations: OrderedDict[Hashable, Conversation] = OrderedDict()
        self._lock = threading.Lock()  # one adapter may serve agents running in several threads

    # -- one model call ----------------------------------------------------------------

    def view(
        self,
        items: Sequence[T],
        key: Hashable = None,
        session: ContextSession | None = None,
        *,
        task: int | str | None = _UNSET,
        now: bool = False,
    ) -> tuple[list[T], list[Edit]]:
        """The items to send, and the edits this call made (empty: the same as last time plus the new ones).

        ``key`` tells conversations apart (a thread id); ``session`` saves resolving it again
        (without it, a string ``key`` names the conversation to the session resolver).
        ``task``: the task the conversation's calls are stored under, which scopes
        every lookup and every call stored here (by default ``key`` if it is a str or
        an int, else None).
        ``now``: make a batch in this call of everything the rules allow (never the
        ``keep`` most recent results, errors or excluded tools), whatever the
        high-water mark and the cache say; for a caller whose context does not fit.
        """
        if session is None:
            session = self.session(key if isinstance(key, str) else None)
        if task is _UNSET:
            task = key if isinstance(key, (str, int)) and not isinstance(key, bool) else None
        # In a shared store, another worker may have served the conversation since: its decisions come first.
        shared = session.store.shared
        kept = shared_state(session, state_name(key)) if shared else None
        with self._lock:
            try:
                if kept is not None and self.decided.load(key, kept):
                    self._conversations.pop(key, None)  # (read again from the start, with those decisions)
                    notes(session).offer_read_context |= key in self.decided.offered
                view = self._settled if shared else self._view
                shown, edits = view(items, key, task, session, now)
                kept = self.decided.dump(key, offered=notes(session).offer_read_context) if shared else None
            except BaseException:
                # Half taken in, the conversation would show some items twice next time: read it again
                # from the start then (the decisions made per call id are kept, so it comes out the same).
                self._conversations.pop(key, None)
                raise
        if kept is not None:
            keep_shared_state(session, state_name(key), kept)
        return shown, edits

    def _settled(
        self, items: Sequence[T], key: Hashable, task: int | str | None, session: ContextSession, now: bool = False
    ) -> tuple[list[T], list[Edit]]:
        """``_view`` in a shared store: what it stores uploads in parallel, and the outputs it newly shows by
        handle land before anyone is shown them (it waits for those uploads only); if some did not land, the
        call is made again from the decisions before it, storing one by one (a failure then shows the output
        whole)."""
        failed = session.save_path.failed_writes
        with session.save_path.deferred(), showing() as ids:
            shown, edits = self._view(items, key, task, session, now)
        session.save_path.settle(ids=ids)
        if session.save_path.failed_writes == failed or not any(session.unstored(i) is not None for i in ids):
            return shown, edits  # (none of the handles it shows failed: other outputs' uploads may have)
        self.decided.load(key, self.decided.synced.pop(key, b"{}"))
        self._conversations.pop(key, None)
        return self._view(items, key, task, session, now)

    def _view(
        self, items: Sequence[T], key: Hashable, task: int | str | None, session: ContextSession, now: bool = False
    ) -> tuple[list[T], list[Edit]]:
        fingerprint = self.adapter.fingerprint
        conversation = self._conversation(key)
        n = len(items)
        first = fingerprint(items[0]) if n else None
        reuse = (
            0 < conversation.length <= n
            and first == conversation.first
            and fingerprint(items[conversation.length - 1]) == conversation.last
            and task == conversation.task
        )
        if not reuse:
            conversation = self._conversations[key] = Conversation(key, task)
        session_notes = notes(session)
        # (under a lease, what is new since this worker's last view in the same turn is its own: see _texts_ahead)
        store = session.store
        start = conversation.length if reuse and store.holding and conversation.turn == store.turn else n
        conversation.turn = store.turn
        for position in range(conversation.length, n):
            conversation.emitted.append(self._add(conversation, session, session_notes, position, items[position]))
        if start < n:
            self._texts_ahead(conversation, session, start)
        if n:
            conversation.length, conversation.first, conversation.last = n, first, fingerprint(items[-1])
        # (a conversation read anew, served before by another worker or process, counts the calls it had)
        conversation.model_calls = max(conversation.model_calls, conversation.answered) + 1
        edits = self._compact(conversation, session, session_notes, now)
        session_notes.shown_tokens, session_notes.model_calls = conversation.shown, conversation.model_calls
        return list(conversation.emitted), edits

    def _conversation(self, key: Hashable) -> Conversation:
        found = self._conversations.get(key)
        if found is None:
            found = self._conversations[key] = Conversation(key)
            while len(self._conversations) > _CONVERSATIONS:
                self._conversations.popitem(last=False)
        else:
            self._conversations.move_to_end(key)
        return found

    def _add(
        self, conversation: Conversation, session: ContextSession, session_notes: Notes, position: int, item: T
    ) -> T:
        """Take in one new item; returns it as shown (with earlier decisions about its calls applied)."""
        self.operations += 1
        described = self.adapter.describe(item)
        if described.question is not None:
            session_notes.question(described.question)
        conversation.take_in(described, self.settings.in_use_tokens > 0 or self.settings.in_use_lines > 0)
        key = conversation.key
        decided = self.decided
        shown_args: dict[str, Mapping[str, Any]] = {}
        for call in described.calls:
            conversation.calls[call.id] = (position, call)
            uses = conversation.seen[call.id] = conversation.seen.get(call.id, 0) + 1
            ident = (
                call.id if uses == 1 else conversation.idents.setdefault((position, call.id), f"{call.id}\x00{uses}")
            )
            if (key, ident) in decided.args:  # (a dict test first: most calls have no decision)
                args = decided.args_for(key, ident, call.args)
                if args is not None:
                    shown_args[call.id] = args
        result = None
        call_id = described.result_of
        if call_id is None and described.text and described.question is None:  # an assistant's text
            result = decided.text(key, self.adapter.fingerprint(item), described.text)
            if result is None and len(described.text) > self.settings.text_chars and not is_stand_in(described.text):
                conversation.texts.append((position, described.text))
        elif call_id is not None:
            call_position, call = conversation.calls.get(call_id) or (-1, ToolCall(call_id, "", {}))
            ident = conversation.ident(call_position, call_id)
            if (key, ident) in decided.results:
                found = decided.result(key, ident, described.text)
                if found is not None:
                    result, early = found
                    if early:
                        conversation.early[position] = result
                    else:
                        conversation.final.add(position)
            conversation.results[position] = (call_position, call, described)
            # (a big output once shown whole stays so until a batch: a decision another worker reads too)
            if (
                result is None
                and described.tokens > self.settings.limit_for(call.name or described.tool, described.text)
                and not (decided.whole and decided.is_whole(key, ident, described.text))
            ):
                result = self._unhooked(conversation, session, position)
                if result is None:
                    decided.kept_whole(key, ident, described.text)
            conversation.recent.append(position)
            if is_stand_in(described.text):
                session_notes.offer_read_context = True
                result = result or unstored_text(session, described.text)
        tokens = described.tokens
        if result is not None or shown_args:
            item = self.adapter.apply(item, result, shown_args)
            tokens = self.adapter.describe(item).tokens
            conversation.usage.saw(result, shown_args)
        conversation.shown += tokens
        conversation.sizes.append(tokens)
        return item

    def _unhooked(self, conversation: Conversation, session: ContextSession, position: int) -> str | None:
        """The stand-in for a big output that reached the model whole (an MCP or hosted tool, say), or None.

        Outputs of wrapped tools were given their stand-in when the tool ran; one
        that no wrapper saw is stored now (unless a hook stored it already) and
        stood in for from this call on.
        """
        call_position, call, result = conversation.results[position]
        if result.is_error or is_stand_in(result.text):
            return None
        if self.settings.keeps_whole(call.name or result.tool):
            return None
        stored = self._stored(conversation, session, call, result)
        if stored is not None:
            pointer: SavedCall | None = SavedCall(stored.id, True, stored.error is not None, stored.tool_name)
        else:
            pointer = store_late(session, call, result, conversation.task)
        shown = shown_output(self.settings, session, pointer, result.text)
        if shown is not None:
            ident = conversation.ident(call_position, call.id)
            self.decided.stood_in(conversation.key, ident, result.text, shown)  # (a candidate once old)
            conversation.early[position] = shown
        return shown

    def _stored(
        self, conversation: Conversation, session: ContextSession, call: ToolCall, result: Item
    ) -> CallParts | None:
        """The stored copy of a result the conversation shows, or None: the call a stand-in names, else the
        newest call stored under the conversation's task with this call id, arguments and output."""
        named = handle_of(result.text)
        if named is not None:
            parts = session.parts_of(named)
            # (a handle of another conversation's, in a history someone supplied: not this conversation's call)
            return parts if parts is not None and parts.task_id == conversation.task else None
        found = stored_call(session, call, result, conversation.task)
        if found is None and session.store.shared and session.catch_up(call.id, task_id=conversation.task):
            found = stored_call(session, call, result, conversation.task)
        return found

    # -- choosing and making a batch ---------------------------------------------------------

    def _compact(
        self, conversation: Conversation, session: ContextSession, session_notes: Notes, now: bool = False
    ) -> list[Edit]:
        settings = self.settings
        while len(conversation.recent) > settings.keep:
            position = conversation.recent.popleft()
            while conversation.texts and conversation.texts[0][0] < position:  # assistant text older than it
                said_at, text = conversation.texts.popleft()
                if self._candidate(conversation, said_at, estimated(text) - _TEXT_MARKER_TOKENS):
                    conversation.said[said_at] = text
            self._candidate(conversation, position, self._estimated_gain(conversation, position))
        held: dict[int, int] = {}  # candidates in use, kept whole for now
        if now:
            if not conversation.available:
                return []
            wanted = conversation.available
            session_notes.offer_read_context = True
        else:
            if conversation.shown <= settings.high_water:
                return []
            wanted = conversation.shown - settings.low_water
            if settings.in_use_calls and settings.in_use_tokens:
                held = in_use(conversation, settings.in_use_calls, settings.in_use_tokens, settings.args_chars)
            # A batch breaks the prompt cache after its first edit, near the start: make it only if it frees
            # enough to pay for that (the oldest candidate comes first, so about all that is shown is re-sent).
            available = conversation.available - sum(held.values())
            freed = wanted if wanted < available else available
            # (the first batch brings read_context into the tool list, at the very start of the prompt)
            broken = conversation.shown + (0 if session_notes.offer_read_context else session_notes.prefix_tokens)
            if freed < settings.min_gain or not pays_for_cache_break(
                freed, broken, conversation.model_calls, settings.cached_price
            ):
                return []
            if not session_notes.offer_read_context:
                # The first batch waits one call: read_context is offered from the next call on, and the tool
                # list and the messages then change in the same call, one cache break instead of two.
                session_notes.offer_read_context = True
                return []
        chosen = choose(conversation, wanted, held)
        started = events.batch_started(conversation.shown)
        edits = [edit for position in chosen if (edit := self._edit(conversation, session, position)) is not None]
        self._apply(conversation, edits)
        events.compacted(started, edits, conversation.sizes, conversation.shown)
        return edits

    def _candidate(self, conversation: Conversation, position: int, gain: int) -> bool:
        if gain <= 0:
            return False
        conversation.candidates.append((position, gain))
        conversation.available += gain
        return True

    def _estimated_gain(self, conversation: Conversation, position: int) -> int:
        self.operations += 1
        settings = self.settings
        if position in conversation.final:
            return 0
        call_position, call, result = conversation.results[position]
        tool = result.tool or call.name
        if result.is_error or settings.keeps_whole(tool):
            return 0
        shown = conversation.early.get(position)  # a tool-time stand-in this compactor made, or the output
        tokens = result.tokens if shown is None else estimated(shown)
        gain = tokens - _MARKER_TOKENS - settings.preview_chars // 4 if not small_record(settings, result.text) else 0
        gain = gain if gain > 0 else 0  # (a comparison, not max(): this path runs with cold caches)
        ident = conversation.ident(call_position, call.id)
        if self.decided.args_for(conversation.key, ident, call.args) is None and self._may_have_long_args(call):
            shown_in = _ARG_STAND_IN_TOKENS + settings.args_preview_chars // 4  # (what its stand-in costs)
            for value in call.args.values():
                if isinstance(value, str) and len(value) > settings.args_chars and not is_stand_in(value):
                    freed = self._argument_tokens(call, value) - shown_in
                    gain += freed if freed > 0 else 0
        return gain

    @staticmethod
    def _argument_tokens(call: ToolCall, value: str) -> int:
        """About the tokens a long string argument takes as sent: its share of the call's arguments."""
        if call.tokens < 0 or call.size <= 0:
            return estimated(value)
        sent = len(value) + value.count("\n") + value.count('"')  # (as JSON, with its usual escapes)
        share = call.tokens * sent // call.size
        return share if share < call.tokens else call.tokens

    def _may_have_long_args(self, call: ToolCall) -> bool:
        return call.size < 0 or call.size > self.settings.args_chars

    def _edit(self, conversation: Conversation, session: ContextSession, position: int) -> Edit | None:
        """The stand-ins for one old call (or assistant text), cut from its stored copy; None if not restorable."""
        self.operations += 1
        if position in conversation.said:
            return self._text_edit(conversation, session, position)
        settings = self.settings
        call_position, call, result = conversation.results[position]
        try:
            stored = self._stored(conversation, session, call, result)
            if stored is None and handle_of(result.text) is None:  # no hook stored it: store it now
                saved = store_late(session, call, result, conversation.task)
                if saved is None or not saved.stored:
                    return None
                stored = session.parts_of(saved.id)
            if stored is None or stored.error is not None:
                return None
        except Exception as exc:  # compaction is an optimisation: never break the model call
            events.compaction_failed(f"could not read the stored call {call.id!r} back; it stays as it is", exc)
            return None
        text = stored_text(stored)
        marker = result_marker(stored.id, text, settings.preview_chars)
        marker += lines_in_use(conversation, position, settings.in_use_lines, text)
        new_result = marker if len(marker) < len(result.text) and not small_record(settings, result.text) else None
        new_args: dict[str, Any] | None = None
        originals: dict[str, int] = {}
        if call_position >= 0 and self._may_have_long_args(call):
            for name, value in call.args.items():
                kept = stored.args.get(name)
                long = isinstance(value, str) and len(value) > settings.args_chars and not is_stand_in(value)
                if long and isinstance(kept, str):
                    replacement = argument_stand_in(stored.id, name, kept, settings.args_preview_chars)
                    replacement += lines_in_use(conversation, call_position, settings.in_use_lines, kept, written=True)
                    if len(replacement) < len(value):
                        new_args = dict(call.args) if new_args is None else new_args
                        new_args[name] = replacement
                        originals[name] = digest(value)
        if new_result is None and new_args is None:
            return None
        conversation.usage.saw(new_result, {call.id: new_args} if new_args else {})  # (lines it keeps: kept)
        return Edit(call.id, new_result, new_args, None, position, call_position, digest(result.text), originals)

    def _text_edit(self, conversation: Conversation, session: ContextSession, position: int) -> Edit | None:
        """The marker for the old assistant text at ``position``, cut from its stored copy; None if not restorable."""
        said = conversation.said.pop(position)  # (every text candidate's text is there, taken once)
        try:
            stored = stored_said(session, conversation.task, said)
        except Exception as exc:  # compaction is an optimisation: never break the model call
            events.compaction_failed("could not store old assistant text to compact it; it stays as it is", exc)
            return None
        if stored is None:
            return None
        marker = text_marker(stored.id, stored_text(stored))
        marker += lines_in_use(conversation, position, self.settings.in_use_lines, stored_text(stored), True)
        if len(marker) >= len(said):
            return None
        conversation.usage.saw(marker)
        return Edit(None, marker, text=said, position=position)

    def _texts_ahead(self, conversation: Conversation, session: ContextSession, start: int) -> None:
        """In a shared store whose lease this worker holds, the long assistant text new since its last view in
        the turn (from position ``start``) is found or stored now, in the background, as a batch that marks it
        would: that batch finds it here, landed, and waits for no request."""
        for position, said in reversed(conversation.texts):
            if position < start:
                return
            store_said_ahead(session, conversation.task, said)

    def _apply(self, conversation: Conversation, edits: list[Edit]) -> None:
        key = conversation.key
        by_position: dict[int, tuple[str | None, dict[str, Mapping[str, Any]]]] = {}
        for edit in edits:
            if edit.call_id is None:  # old assistant text
                if edit.text is not None and edit.result is not None:
                    self.decided.apply(key, edit, self.adapter.fingerprint(conversation.emitted[edit.position]))
                    by_position[edit.position] = (edit.result, by_position.get(edit.position, (None, {}))[1])
                continue
            self.decided.apply(key, edit, ident=conversation.ident(edit.call_position, edit.call_id))
            if edit.result is not None:
                conversation.final.add(edit.position)
                conversation.early.pop(edit.position, None)
                by_position[edit.position] = (edit.result, by_position.get(edit.position, (None, {}))[1])
            if edit.args is not None:
                text, args = by_position.setdefault(edit.call_position, (None, {}))
                args[edit.call_id] = edit.args
        for position, (text, args) in by_position.items():
            after = self.adapter.apply(conversation.emitted[position], text, args)
            size = self.adapter.describe(after).tokens
            conversation.shown += size - conversation.sizes[position]
            conversation.sizes[position] = size
            conversation.emitted[position] = after

    # -- what a host keeps of a conversation's decisions --------------------------------------

    def forget(self, key: Hashable, call_ids: Iterable[str]) -> None:
        """Drop the decisions about these calls of conversation ``key`` (they are shown whole again), and read
        its history again from the start on the next call."""
        with self._lock:
            self.decided.forget(key, list(call_ids))
            self._conversations.pop(key, None)

    def decisions(self, key: Hashable) -> dict[str, Any]:
        """The decisions made for conversation ``key``, as JSON, for :meth:`adopt` (in another process, say)."""
        with self._lock:
            return self.decided.export(key)

    def adopt(self, key: Hashable, decisions: Mapping[str, Any]) -> None:
        """Take over :meth:`decisions` for conversation ``key``; raises ValueError (changing nothing) if they
        are not in that form."""
        with self._lock:
            self.decided.adopt(key, decisions)
            self._conversations.pop(key, None)

"""What a compactor decided to show, per conversation and content, so every later call shows the same.

A decision names the conversation it was made in (the compactor's key for it),
the framework's call id and a digest of the content it replaces: the output, or
each long argument. A call id that comes back with other content, in the same
conversation or another, finds no decision, so it is never shown a stand-in made
for another call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Mapping
from typing import Any

import orjson
import xxhash

from toolctx._internal import internal_error
from toolctx.compaction._items import Edit
from toolctx.compaction._standins import ASSISTANT_TEXT
from toolctx.sessions import ContextSession

__all__ = ["Decisions", "digest", "keep_shared_state", "shared_state", "state_name", "text_key"]

_Made = tuple[Mapping[str, int], Mapping[str, Any]]  # (digests of the arguments replaced, the arguments shown)


def digest(text: str) -> int:
    """What a decision remembers of the content it was made for."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


class Decisions:
    """Every decision of one compactor (its caller holds the compactor's lock)."""

    def __init__(self) -> None:
        self.synced: dict[Hashable, bytes] = {}  # key -> the form last read from or written to a shared store
        self.changed: set[Hashable] = set()  # keys with decisions made since they were last dumped
        self.offered: set[Hashable] = set()  # keys whose model was offered read_context (as another worker said)
        self.results: dict[tuple[Hashable, str], dict[int, str]] = {}  # -> {digest of the output: shown}
        self.args: dict[tuple[Hashable, str], list[_Made]] = {}
        self.texts: dict[tuple[Hashable, Hashable, int], str] = {}  # (key, message, digest of its text) -> marker
        self.early: set[tuple[Hashable, str, int]] = set()  # outputs shown a head-and-tail stand-in
        self.whole: set[tuple[Hashable, str, int]] = set()  # big outputs shown as they are (until a batch)

    def __len__(self) -> int:
        return sum(map(len, self.results.values())) + sum(map(len, self.args.values())) + len(self.texts)

    def result(self, key: Hashable, call_id: str, text: str) -> tuple[str, bool] | None:
        """What a result of ``text`` is shown as from now on, and whether that is a head-and-tail stand-in
        (not yet final); None if nothing was decided for it."""
        made = self.results.get((key, call_id))
        if made is None:
            return None
        found = digest(text)
        shown = made.get(found)
        return None if shown is None else (shown, (key, call_id, found) in self.early)

    def stood_in(self, key: Hashable, call_id: str, text: str, shown: str) -> None:
        """A big output ``text`` is shown as the head-and-tail stand-in ``shown`` (still a candidate)."""
        found = digest(text)
        self.results.setdefault((key, call_id), {})[found] = shown
        self.early.add((key, call_id, found))
        self.changed.add(key)

    def kept_whole(self, key: Hashable, call_id: str, text: str) -> None:
        """A big output ``text`` was shown as it is (its stand-in did not pay yet): it stays so until a batch."""
        self.whole.add((key, call_id, digest(text)))
        self.changed.add(key)

    def is_whole(self, key: Hashable, call_id: str, text: str) -> bool:
        return (key, call_id, digest(text)) in self.whole

    def args_for(self, key: Hashable, call_id: str, args: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The arguments a call is shown with: those decided for it (its id, as the compactor numbers reuses of
        one id) with the same long arguments."""
        made = self.args.get((key, call_id))
        if made is None:
            return None
        for originals, shown in made:
            if all(isinstance(v := args.get(name), str) and digest(v) == d for name, d in originals.items()):
                return shown
        return None

    def text(self, key: Hashable, message: Hashable, text: str) -> str | None:
        return self.texts.get((key, message, digest(text))) if self.texts else None

    def apply(self, key: Hashable, edit: Edit, message: Hashable = None, *, ident: str | None = None) -> None:
        """Remember ``edit`` (``message``: the fingerprint of the message an edit of assistant text changes;
        ``ident``: what the decision is kept under, by default the edit's call id)."""
        self.changed.add(key)
        if edit.call_id is None:
            if edit.text is not None and edit.result is not None:
                self.texts[(key, message, digest(edit.text))] = edit.result
            return
        call_id = edit.call_id if ident is None else ident
        if edit.result is not None:
            self.results.setdefault((key, call_id), {})[edit.digest] = edit.result
            self.early.discard((key, call_id, edit.digest))
        if edit.args is not None and edit.originals is not None:
            self.args.setdefault((key, call_id), []).append((edit.originals, edit.args))

    def forget(self, key: Hashable, call_ids: list[str]) -> None:
        """Drop the decisions about every call with these ids (each reuse of an id too)."""
        self.changed.add(key)
        forgotten = set(call_ids)

        def gone(k: tuple[Any, ...]) -> bool:
            return k[0] == key and k[1].partition("\x00")[0] in forgotten

        for k in [k for k in self.results if gone(k)]:
            del self.results[k]
        for k in [k for k in self.args if gone(k)]:
            del self.args[k]
        self.whole = {k for k in self.whole if not gone(k)}

    def export(self, key: Hashable) -> dict[str, Any]:
        """The final decisions of conversation ``key``, as JSON."""
        results = [
            [call_id, found, shown, (key, call_id, found) in self.early]
            for (owner, call_id), made in self.results.items()
            if owner == key
            for found, shown in made.items()
        ]
        args = [
            [call_id, dict(originals), dict(shown)]
            for (owner, call_id), made in self.args.items()
            if owner == key
            for originals, shown in made
        ]
        texts = [[_plain(message), found, shown] for (who, message, found), shown in self.texts.items() if who == key]
        whole = [[call_id, found] for owner, call_id, found in self.whole if owner == key]
        return {"results": results, "args": args, "texts": texts, "whole": whole}

    def adopt(self, key: Hashable, exported: Mapping[str, Any]) -> None:
        """Take over :meth:`export`'s form for conversation ``key``, replacing its decisions; raises
        ValueError (changing nothing) if it is not in that form."""
        results: dict[tuple[Hashable, str], dict[int, str]] = {}
        args: dict[tuple[Hashable, str], list[_Made]] = {}
        texts: dict[tuple[Hashable, Hashable, int], str] = {}
        early: set[tuple[Hashable, str, int]] = set()
        try:
            for call_id, found, shown, *more in exported.get("results") or ():
                results.setdefault((key, str(call_id)), {})[int(found)] = str(shown)
                if more and more[0]:
                    early.add((key, str(call_id), int(found)))
            whole = {(key, str(call_id), int(found)) for call_id, found in exported.get("whole") or ()}
            for call_id, originals, shown in exported.get("args") or ():
                made = ({str(k): int(v) for k, v in dict(originals).items()}, dict(shown))
                args.setdefault((key, str(call_id)), []).append(made)
            for message, found, shown in exported.get("texts") or ():
                texts[(key, _hashable(message), int(found))] = str(shown)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"decisions are lists of [call id, digest, shown], [call id, digests, args] and "
                f"[message, digest, shown]: {exc}"
            ) from None
        for owned in [k for k in self.results if k[0] == key]:
            del self.results[owned]
        for owned in [k for k in self.args if k[0] == key]:
            del self.args[owned]
        for text_key in [k for k in self.texts if k[0] == key]:
            del self.texts[text_key]
        self.early = {k for k in self.early if k[0] != key} | early
        self.whole = {k for k in self.whole if k[0] != key} | whole
        self.results.update(results)
        self.args.update(args)
        self.texts.update(texts)

    def load(self, key: Hashable, data: bytes) -> bool:
        """Take over conversation ``key``'s decisions as another worker kept them (``data``: :meth:`dump`'s);
        False if they are those already held."""
        if self.synced.get(key) == data:
            return False
        decoded = orjson.loads(data)
        self.adopt(key, decoded)
        if decoded.get("offer"):
            self.offered.add(key)
        self.synced[key] = data
        return True

    def dump(self, key: Hashable, *, offered: bool = False) -> bytes | None:
        """Conversation ``key``'s decisions for other workers to :meth:`load` (``offered``: its model is offered
        read_context); None if unchanged since."""
        if offered and key not in self.offered:
            self.offered.add(key)
            self.changed.add(key)
        if key not in self.changed:
            return None
        self.changed.discard(key)
        data = orjson.dumps({**self.export(key), "offer": key in self.offered})
        if self.synced.get(key) == data:
            return None
        self.synced[key] = data
        return data


def text_key(task: int | str | None, text: str) -> str:
    """The call id old assistant ``text`` of a conversation (its ``task``) is stored under (``text`` as stored:
    redacted, so the key, kept with the call, tells nothing about a secret)."""
    scope = "" if task is None else f"{type(task).__name__}:{task}"
    digest = xxhash.xxh3_128_hexdigest(f"{scope}\0{text}".encode("utf-8", "surrogatepass"))
    return f"{ASSISTANT_TEXT}:{digest}"


def state_name(key: Hashable) -> str:
    """The name a conversation's decisions are kept under in a shared store."""
    return "compaction-" + xxhash.xxh3_128_hexdigest(repr(key).encode("utf-8", "surrogatepass"))


def _plain(fingerprint: Hashable) -> Any:
    """A message's fingerprint as JSON (a tuple of scalars becomes a list)."""
    return [_plain(part) for part in fingerprint] if isinstance(fingerprint, tuple) else fingerprint


def _hashable(value: Any) -> Hashable:
    """A fingerprint back from JSON (a list becomes the tuple it was)."""
    return tuple(_hashable(part) for part in value) if isinstance(value, list) else value


def shared_state(session: ContextSession, name: str) -> bytes | None:
    """What other workers kept under ``name`` (or what this one is writing there)."""
    writing = _writes(session)
    with writing.lock:
        data = writing.latest.get(name)
    if data is not None:
        return data
    try:
        return session.store.get_state(name)
    except Exception as exc:  # (the decisions held here serve meanwhile)
        internal_error(f"could not read the compaction decisions other workers kept in {session.store!r}", exc)
        return None


def keep_shared_state(session: ContextSession, name: str, data: bytes) -> None:
    """Write ``data`` under ``name`` for other workers: in the background while this worker holds the session's
    lease (the uploads' pool: the turn gives its lease up once it landed, so no other worker reads the session
    meanwhile), else now; writes of one name land in the order they were made."""
    writing = _writes(session)
    with writing.lock:
        under_way = name in writing.latest
        if under_way or session.store.holding:
            writing.latest[name] = data
    if under_way:
        return  # (the write under way writes it next)
    if not session.store.holding:
        _write(session, None, name, data)
        return
    session.save_path.uploads.submit(f"state:{name}", lambda: _write(session, writing, name, data))


class _Writes:
    """A session's state being written in the background, in this process: the latest data of each name
    until it landed."""

    def __init__(self, session: ContextSession | None = None) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.latest: dict[str, bytes] = {}


def _writes(session: ContextSession) -> _Writes:
    writing = session.attached(_Writes, _Writes)
    if writing.pid != os.getpid():  # (a forked child writes nothing of its parent's: the parent does)
        writing.__init__()  # type: ignore[misc]
    return writing


def _write(session: ContextSession, writing: _Writes | None, name: str, data: bytes) -> None:
    """Write ``data`` under ``name``; with ``writing``, then its latest data until what landed is the latest
    (one writer per name at a time)."""
    while True:
        try:
            session.store.put_state(name, data)
        except Exception as exc:
            internal_error(f"could not keep the compaction decisions in {session.store!r} for other workers", exc)
        if writing is None:
            return
        with writing.lock:
            if writing.latest[name] is data:
                del writing.latest[name]
                return
            data = writing.latest[name]

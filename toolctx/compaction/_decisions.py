"""What a compactor decided to show, per conversation and content, so every later call shows the same.

A decision names the conversation it was made in (the compactor's key for it),
the framework's call id and a digest of the content it replaces: the output, or
each long argument. A call id that comes back with other content, in the same
conversation or another, finds no decision, so it is never shown a stand-in made
for another call.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import xxhash

from toolctx.compaction._items import Edit, ToolCall

__all__ = ["Decisions", "digest"]

_Made = tuple[Mapping[str, int], Mapping[str, Any]]  # (digests of the arguments replaced, the arguments shown)


def digest(text: str) -> int:
    """What a decision remembers of the content it was made for."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


class Decisions:
    """Every decision of one compactor (its caller holds the compactor's lock)."""

    def __init__(self) -> None:
        self.results: dict[tuple[Hashable, str], dict[int, str]] = {}  # -> {digest of the output: shown}
        self.args: dict[tuple[Hashable, str], list[_Made]] = {}
        self.texts: dict[tuple[Hashable, Hashable, str], str] = {}  # (key, message, its text) -> marker
        self.early: set[tuple[Hashable, str, int]] = set()  # outputs shown a head-and-tail stand-in

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

    def args_for(self, key: Hashable, call: ToolCall) -> Mapping[str, Any] | None:
        """The arguments ``call`` is shown with: those decided for a call with the same long arguments."""
        made = self.args.get((key, call.id))
        if made is None:
            return None
        args = call.args
        for originals, shown in made:
            if all(isinstance(v := args.get(name), str) and digest(v) == d for name, d in originals.items()):
                return shown
        return None

    def text(self, key: Hashable, message: Hashable, text: str) -> str | None:
        return self.texts.get((key, message, text))

    def apply(self, key: Hashable, edit: Edit, message: Hashable = None) -> None:
        """Remember ``edit`` (``message``: the fingerprint of the message an edit of assistant text changes)."""
        if edit.call_id is None:
            if edit.text is not None and edit.result is not None:
                self.texts[(key, message, edit.text)] = edit.result
            return
        if edit.result is not None:
            self.results.setdefault((key, edit.call_id), {})[edit.digest] = edit.result
            self.early.discard((key, edit.call_id, edit.digest))
        if edit.args is not None and edit.originals is not None:
            self.args.setdefault((key, edit.call_id), []).append((edit.originals, edit.args))

    def forget(self, key: Hashable, call_ids: list[str]) -> None:
        for call_id in call_ids:
            self.results.pop((key, call_id), None)
            self.args.pop((key, call_id), None)

    def export(self, key: Hashable) -> dict[str, Any]:
        """The final decisions of conversation ``key``, as JSON."""
        results = [
            [call_id, found, shown]
            for (owner, call_id), made in self.results.items()
            if owner == key
            for found, shown in made.items()
            if (key, call_id, found) not in self.early
        ]
        args = [
            [call_id, dict(originals), dict(shown)]
            for (owner, call_id), made in self.args.items()
            if owner == key
            for originals, shown in made
        ]
        return {"results": results, "args": args}

    def adopt(self, key: Hashable, exported: Mapping[str, Any]) -> None:
        """Take over :meth:`export`'s form for conversation ``key``, replacing its decisions; raises
        ValueError (changing nothing) if it is not in that form."""
        results: dict[tuple[Hashable, str], dict[int, str]] = {}
        args: dict[tuple[Hashable, str], list[_Made]] = {}
        try:
            for call_id, found, shown in exported.get("results") or ():
                results.setdefault((key, str(call_id)), {})[int(found)] = str(shown)
            for call_id, originals, shown in exported.get("args") or ():
                made = ({str(k): int(v) for k, v in dict(originals).items()}, dict(shown))
                args.setdefault((key, str(call_id)), []).append(made)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"decisions are lists of [call id, digest, shown] and [call id, digests, args]: {exc}"
            ) from None
        for owned in [k for k in self.results if k[0] == key]:
            del self.results[owned]
        for owned in [k for k in self.args if k[0] == key]:
            del self.args[owned]
        self.results.update(results)
        self.args.update(args)

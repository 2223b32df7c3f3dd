"""The redaction prefilter: which of these fragments occur in ``data``, in one fast pass.

Redaction uses it to skip the (slow) parse-walk-encode of outputs that cannot
hold a secret, and to run only the rules whose fragments occur. A fragment is a
literal (``caseless`` ones in any ASCII letter case, ``exact`` ones as given) or
a *screen*: a small regular expression, with a literal every match contains,
that narrows a frequent word to the places a rule could match (``token`` only
where an ``=`` or ``:`` follows). :meth:`Prefilter.locate` also says where each
literal starts, for large data in which a rule is worth trying only there.

Hyperscan scans all fragments at once at memory speed. Where it cannot load (a
platform without a wheel, a CPU without SSSE3, or the ``fast`` extra not
installed) the ``re`` engine gives the same answers. ``re`` has no multi-needle
search: on small data it runs one alternation of the literals, factored on their
leading bytes (over the data lowered, for the caseless ones); past 1 KiB, one
pass for each first byte, because ``re`` skips to a literal first byte many times
faster than it tries an alternation at every byte. A literal leaves its pass
once found (or, when placing, once too frequent to be worth it), then the
screens whose literal occurred run. Each pass is linear in the data.

The module also holds what redaction does with the bytes of a text: lowering
them where needed (:class:`Lowered`), reading full-width forms as ASCII
(:class:`Folded`) and replacing spans (:func:`splice`).
"""

from __future__ import annotations

import bisect
import codecs
import functools
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolctx._internal import WARNING, log

__all__ = ["FULL_WIDTH", "Folded", "Lowered", "Prefilter", "Screen", "splice", "whole_spans"]


@dataclass(frozen=True)
class Screen:
    """A fragment that is a regular expression: found when ``regex`` matches.

    ``literal`` occurs in every match; ``caseless`` screens are written in lower
    case and match in any ASCII letter case. Keep ``regex`` to what both engines
    read alike: literals, classes, alternation and bounded repeats, no lookaround.
    """

    name: str
    regex: bytes
    literal: bytes
    caseless: bool = True


def _alternation(needles: dict[int, bytes], depth: int = 0) -> bytes:
    """A regex matching any of ``needles`` (by index), factored on shared leading bytes.

    Each needle ends in an empty group ``n<index>``, so ``match.lastgroup`` says
    which one matched; longer needles are tried first.
    """
    branches: list[bytes] = []
    by_byte: dict[bytes, dict[int, bytes]] = {}
    ended = [i for i, n in needles.items() if len(n) == depth]
    for index, needle in needles.items():
        if len(needle) > depth:
            by_byte.setdefault(needle[depth : depth + 1], {})[index] = needle
    for byte, group in sorted(by_byte.items()):
        branches.append(re.escape(byte) + _alternation(group, depth + 1))
    branches += [b"(?P<n%d>)" % i for i in ended]
    return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"


class _Needles:
    """Finds which of many needles occur in a buffer, and where, with one ``re`` alternation.

    ``re`` has no multi-needle search, but a factored alternation costs about one
    sweep of the data. A needle leaves the alternation once found (or, when
    positions are wanted, once it has occurred ``cap`` + 1 times), so a needle
    that occurs a million times costs a handful of matches, not a million.
    """

    def __init__(self, members: Sequence[tuple[Hashable, bytes]], place: frozenset[Hashable]) -> None:
        self.fragments = [f for f, _ in members]
        self._place = [f in place for f in self.fragments]
        self.needles = [n for _, n in members]
        # Needles that also start where needle i matched: those it begins with.
        self._prefixes = [
            [j for j, other in enumerate(self.needles) if needle.startswith(other)] for needle in self.needles
        ]
        self._regex = functools.lru_cache(maxsize=128)(self._compile)

    def _compile(self, remaining: frozenset[int]) -> re.Pattern[bytes]:
        return re.compile(_alternation({i: self.needles[i] for i in remaining}))

    def scan(self, data: bytes, hits: set[Hashable], positions: dict[Hashable, list[int]] | None, cap: int) -> None:
        remaining = frozenset(range(len(self.needles)))
        counts = [0] * len(self.needles)
        at = 0
        while remaining:
            match = self._regex(remaining).search(data, at)
            if match is None:
                return
            at = match.start()
            done = []
            for j in self._prefixes[int((match.lastgroup or "n0")[1:])]:
                if j not in remaining:
                    continue
                fragment = self.fragments[j]
                hits.add(fragment)
                counts[j] += 1
                if positions is None or counts[j] > cap or not self._place[j]:
                    done.append(j)
                    if positions is not None:
                        positions.pop(fragment, None)  # too many to use: a plain pass is cheaper
                else:
                    positions.setdefault(fragment, []).append(at)
            if done:
                remaining = remaining.difference(done)
            at += 1


_SMALL = 1024


def _by_first_byte(members: Sequence[tuple[Hashable, bytes]], place: frozenset[Hashable]) -> list[_Needles]:
    groups: dict[bytes, list[tuple[Hashable, bytes]]] = {}
    for fragment, needle in members:
        groups.setdefault(needle[:1], []).append((fragment, needle))
    return [_Needles(group, place) for _, group in sorted(groups.items())]


def _needle(fragment: str | bytes) -> bytes:
    return fragment if isinstance(fragment, bytes) else fragment.encode()


class Prefilter:
    """Finds which fragments occur in ``data``; ``caseless`` ones in any (ASCII) letter case.

    ``exact`` fragments may be ``bytes`` (a UTF-8 lead sequence, say). A screen's
    literal is reported as a fragment of its own too.
    """

    def __init__(
        self,
        caseless: Iterable[str],
        exact: Iterable[str | bytes],
        *,
        screens: Iterable[Screen] = (),
        place: Iterable[Hashable] | None = None,
        use_hyperscan: bool = True,
    ) -> None:
        self.screens = tuple(screens)
        self.caseless = sorted(set(caseless) | {s.literal.decode() for s in self.screens if s.caseless})
        self.exact: list[str | bytes] = sorted(
            set(exact) | {s.literal for s in self.screens if not s.caseless}, key=_needle
        )
        self.fragments: tuple[Hashable, ...] = (*self.caseless, *self.exact, *(s.name for s in self.screens))
        self.engine = "none"
        self._pool: list[Any] = []  # Hyperscan scratch spaces not in use
        self._every_pool: list[Any] = []
        self._database: Any = None
        self._every: Any = None
        # Literals whose places locate() reports (all by default); 0 marks the others.
        self._place = frozenset(self.caseless) | frozenset(self.exact) if place is None else frozenset(place)
        self._lengths = [len(f.encode()) if f in self._place else 0 for f in self.caseless]
        self._lengths += [len(_needle(f)) if f in self._place else 0 for f in self.exact]
        self._lengths += [0] * len(self.screens)
        if not self.fragments:
            return
        if use_hyperscan:
            try:
                self._database = self._compile_hyperscan()
                self.engine = "hyperscan"
                return
            except Exception as exc:  # ImportError, or hyperscan refusing this CPU
                log(WARNING, "slow_secret_scan", reason=f"{type(exc).__name__}: {exc}")
        as_given: list[tuple[Hashable, bytes]] = [(f, _needle(f)) for f in self.exact]
        lowered: list[tuple[Hashable, bytes]] = [(f, f.lower().encode()) for f in self.caseless]
        # Small data: one alternation for each kind. Large data: one pass for each first
        # byte, since ``re`` skips to a literal first byte many times faster than it
        # tries an alternation at every byte.
        self._small = (_Needles(as_given, self._place), _Needles(lowered, self._place))
        self._large = (_by_first_byte(as_given, self._place), _by_first_byte(lowered, self._place))
        self._screens = [
            (s.name, re.compile(s.regex), s.literal.decode() if s.caseless else s.literal, s.caseless)
            for s in self.screens
        ]
        self.engine = "re"

    def _compile_hyperscan(self, every: bool = False) -> Any:
        import hyperscan

        expressions = [re.escape(f.encode()) for f in self.caseless]
        expressions += [re.escape(_needle(f)) for f in self.exact]
        expressions += [s.regex for s in self.screens]
        # Each fragment reported once; with ``every``, each occurrence of a literal worth placing.
        single, caseless = hyperscan.HS_FLAG_SINGLEMATCH, hyperscan.HS_FLAG_CASELESS
        literals = len(self.caseless) + len(self.exact)
        flags = [0 if every and length else single for length in self._lengths[:literals]]
        flags = [flag | caseless for flag in flags[: len(self.caseless)]] + flags[len(self.caseless) :]
        flags += [single | caseless if s.caseless else single for s in self.screens]
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
        self._terminated = hyperscan.ScanTerminated
        self._scratch_type = hyperscan.Scratch
        return database

    def _scratch(self, every: bool = False) -> Any:
        """A scratch space no other scan is using; give it back with :meth:`_release`.

        Scratch may not be shared by two scans at once. A pool rather than one per
        thread: frameworks run tools in short-lived threads, and making a scratch
        costs tens of microseconds. ``list.pop`` and ``append`` are atomic, and a
        forked child never inherits one that a scan of another thread was using.
        """
        pool = self._every_pool if every else self._pool
        try:
            return pool.pop()
        except IndexError:
            return self._scratch_type(self._every if every else self._database)

    def _release(self, scratch: Any, every: bool = False) -> None:
        (self._every_pool if every else self._pool).append(scratch)

    def __call__(self, data: bytes) -> bool:
        """Whether any fragment occurs in ``data`` (with Hyperscan, stops at the first)."""
        if self._database is not None:
            scratch = self._scratch()
            try:
                self._database.scan(data, match_event_handler=_stop, scratch=scratch)
            except self._terminated:
                return True
            finally:
                self._release(scratch)
            return False
        return bool(self.found(data))

    def found(self, data: bytes) -> frozenset[Hashable]:
        """The fragments that occur in ``data`` (one pass with Hyperscan)."""
        database = self._database
        if database is not None:
            ids: list[int] = []
            scratch = self._scratch()
            try:
                database.scan(data, match_event_handler=_collect, context=ids, scratch=scratch)
            finally:
                self._release(scratch)
            return frozenset(map(self.fragments.__getitem__, ids)) if ids else _NOTHING
        return self._search(data, None, 0)

    def locate(self, data: bytes, cap: int) -> tuple[frozenset[Hashable], dict[Hashable, list[int]]]:
        """The fragments in ``data``, and where each literal one starts if it occurs at most ``cap`` times.

        For large data: a rule whose matches start at its literal can then be tried
        at those few places instead of in a pass over all of ``data``.
        """
        if self._database is None:
            positions: dict[Hashable, list[int]] = {}
            return self._search(data, positions, cap), positions
        if self._every is None:
            self._every = self._compile_hyperscan(every=True)
        hits = _Hits(self._lengths, cap, max(4096, len(data) >> 10))
        scratch = self._scratch(every=True)
        try:
            self._every.scan(data, match_event_handler=_record, context=hits, scratch=scratch)
        except self._terminated:  # far too many occurrences to be worth placing: say only which occur
            return self.found(data), {}
        finally:
            self._release(scratch, every=True)
        found = frozenset(map(self.fragments.__getitem__, hits.found))
        return found, {self.fragments[i]: p for i, p in hits.positions.items() if p is not None}

    def _search(self, data: bytes, positions: dict[Hashable, list[int]] | None, cap: int) -> frozenset[Hashable]:
        if self.engine == "none":
            return _NOTHING
        hits: set[Hashable] = set()
        if len(data) < _SMALL:
            self._small[0].scan(data, hits, positions, cap)
            lowered = data.lower() if self.caseless else data
            self._small[1].scan(lowered, hits, positions, cap)
        else:
            for needles in self._large[0]:
                needles.scan(data, hits, positions, cap)
            lowered = data.lower() if self.caseless else data
            for needles in self._large[1]:
                needles.scan(lowered, hits, positions, cap)
        for name, regex, literal, in_any_case in self._screens:
            if literal in hits and regex.search(lowered if in_any_case else data):
                hits.add(name)
        return frozenset(hits) if hits else _NOTHING


class _Hits:
    """What a Hyperscan scan for positions gathers (``_record`` fills it)."""

    def __init__(self, lengths: Sequence[int], cap: int, budget: int) -> None:
        self.lengths, self.cap, self.budget = lengths, cap, budget
        self.found: set[int] = set()
        self.positions: dict[int, list[int] | None] = {}


def _record(fragment_id: int, start: int, end: int, flags: int, hits: _Hits) -> bool:
    hits.found.add(fragment_id)
    length = hits.lengths[fragment_id]
    if length:  # a literal: note where it starts, until it proves too frequent
        places = hits.positions.setdefault(fragment_id, [])
        if places is not None:
            if len(places) < hits.cap:
                places.append(end - length)
            else:
                hits.positions[fragment_id] = None
        hits.budget -= 1
        return hits.budget < 0
    return False


_NOTHING: frozenset[Any] = frozenset()

FULL_WIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}
"""``str.translate`` table from the full-width forms of ASCII (U+FF01-U+FF5E, U+3000) to ASCII."""
# A full-width form as UTF-8 or as a JSON escape (``json.dumps`` writes ``\uff50``).
_WIDE = (
    rb"(?:\xef(?:\xbc[\x81-\xbf]|\xbd[\x80-\x9e])|\xe3\x80\x80"
    rb"|\\u(?:[fF]{2}(?:0[1-9a-fA-F]|[1-4][0-9a-fA-F]|5[0-9a-eA-E])|3000))"
)
_WIDE_ONE = re.compile(_WIDE)
_WIDE_RUN = re.compile(_WIDE + b"++")
_WIDE_ALNUM = (  # ０-９, Ａ-Ｚ, ａ-ｚ: a run holding one may spell a key
    re.compile(rb"\xef(?:\xbc[\x90-\x99\xa1-\xba]|\xbd[\x81-\x9a])"),
    re.compile(rb"\\u[fF]{2}(?:1[0-9]|2[1-9a-fA-F]|3[0-9aA]|4[1-9a-fA-F]|5[0-9aA])"),
)


def _wide_before(data: bytes, end: int) -> int:
    """The length of the full-width form that ends at ``end`` (0 if none)."""
    for width in (3, 6):
        if end >= width and _WIDE_ONE.fullmatch(data, end - width, end) is not None:
            return width
    return 0


class Folded:
    """``data`` with each run of full-width forms that holds a letter or digit read as ASCII.

    ``ｐａｓｓｗｏｒｄ：hunter2`` reads ``password:hunter2``, and so does the JSON escape
    ``\\uff50\\uff41...``: :attr:`data` is that reading, and :meth:`original` maps spans found
    in it back to the input.
    """

    def __init__(self, data: bytes, *, text: bool = True) -> None:
        self._input = data
        found: list[tuple[int, int]] = []
        for seeds in _WIDE_ALNUM:
            at = 0
            while (seed := seeds.search(data, at)) is not None:
                start = seed.start()
                while width := _wide_before(data, start):
                    start -= width
                at = _WIDE_RUN.match(data, seed.start()).end()  # type: ignore[union-attr]
                # In bytes that need not be text, a run counts where the bytes around it are UTF-8.
                if text or _utf8_around(data, start, at):
                    found.append((start, at))
        self._found = _merge(found)
        # (start in output, start in input, length, bytes of input per character or where each one starts)
        self._runs: list[tuple[int, int, int, list[int] | int]] = []
        self._starts: list[int] = []
        self._data: bytes | None = None if self._found else data

    def __bool__(self) -> bool:
        return bool(self._found)

    @property
    def data(self) -> bytes:
        if self._data is None:
            data, last, size = self._input, 0, 0
            parts: list[bytes] = []
            for start, end in self._found:
                forms = data[start:end]
                places: list[int] | int
                if b"\\" not in forms:  # all UTF-8, three bytes each
                    run, places = forms.decode().translate(FULL_WIDTH).encode(), 3
                elif forms.isascii():  # all JSON escapes, six bytes each
                    run, places = forms.decode("unicode_escape").translate(FULL_WIDTH).encode(), 6
                else:  # both: one by one
                    each = list(_WIDE_ONE.finditer(data, start, end))
                    run, places = bytes(FULL_WIDTH[_code(m.group())] for m in each), [m.start() for m in each] + [end]
                parts += (data[last:start], run)
                size += start - last
                self._runs.append((size, start, len(run), places))
                size += len(run)
                last = end
            parts.append(data[last:])
            self._data = b"".join(parts)
            self._starts = [run[0] for run in self._runs]
        return self._data

    def _place(self, at: int) -> int:
        k = bisect.bisect_right(self._starts, at) - 1
        if k < 0:
            return at
        out, start, length, places = self._runs[k]
        if at - out <= length:  # inside the run (or at its end)
            return start + (at - out) * places if isinstance(places, int) else places[at - out]
        end = start + length * places if isinstance(places, int) else places[-1]
        return end + at - out - length

    def original(self, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """``spans`` of :attr:`data` as spans of the input."""
        return [(self._place(s), self._place(e)) for s, e in spans]


def _utf8_around(data: bytes, start: int, end: int) -> bool:
    low, high = max(0, start - 16), min(len(data), end + 16)
    while low < start and 0x80 <= data[low] < 0xC0:  # begin on a character
        low += 1
    try:
        codecs.utf_8_decode(data[low:high], "strict", False)  # not final: a cut last character is fine
    except UnicodeDecodeError:
        return False
    return True


def _code(form: bytes) -> int:
    return int(form[2:], 16) if form.startswith(b"\\") else ord(form.decode())


class Lowered:
    """``data`` with its ASCII letters lowered (offsets unchanged): all of it, or only where asked."""

    _AROUND = 512  # most matches are shorter; one that reaches the end is matched again on all of it

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._all: bytes | None = None
        self._some: bytearray | None = None
        self._budget = len(data) // 2

    def whole(self) -> bytes:
        if self._all is None:
            self._all = self.data.lower()
        return self._all

    def match(self, regex: re.Pattern[bytes], at: int) -> re.Match[bytes] | None:
        """``regex.match`` at ``at`` in the lowered data, lowering only the few KiB around it if it can."""
        if self._all is not None:
            return regex.match(self._all, at)
        low, high = max(0, at - 64), min(len(self.data), at + self._AROUND)
        self._budget -= high - low
        if self._budget < 0:  # lowering so many places costs more than lowering it all
            return regex.match(self.whole(), at)
        if self._some is None:
            self._some = bytearray(self.data)
        self._some[low:high] = self._some[low:high].lower()
        match = regex.match(self._some, at)
        if match is not None and match.end() >= high < len(self.data):
            return regex.match(self.whole(), at)  # it may go on past what was lowered
        return match


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _whole_characters(data: bytes, start: int, end: int) -> tuple[int, int]:
    # A bounded match may stop inside a UTF-8 sequence: widen it to whole characters.
    while start > 0 and 0x80 <= data[start] < 0xC0:
        start -= 1
    while end < len(data) and 0x80 <= data[end] < 0xC0:
        end += 1
    return start, end


def whole_spans(data: bytes, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` of UTF-8 ``data`` widened to whole characters, sorted, and merged where they overlap or touch."""
    return _merge(_whole_characters(data, s, e) for s, e in spans)


def splice(data: bytes, spans: Iterable[tuple[int, int]], replacement: bytes) -> bytes:
    """``data`` with each span (merged where they overlap or touch) replaced by ``replacement``."""
    parts: list[bytes] = []
    last = 0
    for start, end in whole_spans(data, spans):
        parts += (data[last:start], replacement)
        last = end
    parts.append(data[last:])
    return b"".join(parts)


def _stop(*_: object) -> bool:
    return True  # the first match answers the question: stop scanning


def _collect(fragment_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(fragment_id)

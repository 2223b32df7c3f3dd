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
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from toolctx._internal import DEBUG, WARNING, log

__all__ = ["SHORTEST_BASE64_RUN", "Prefilter", "Screen", "base64_runs", "needle_alternation"]


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


def needle_alternation(needles: Iterable[bytes]) -> bytes:
    """A regex matching any of ``needles`` (the longest where several match), factored on shared leading bytes
    and without groups: many times faster in ``re`` than a plain alternation, or one that says which matched."""
    by_byte: dict[bytes, list[bytes]] = {}
    ends = False
    for needle in set(needles):
        if needle:
            by_byte.setdefault(needle[:1], []).append(needle[1:])
        else:
            ends = True
    branches = [re.escape(byte) + needle_alternation(rest) for byte, rest in sorted(by_byte.items())]
    if ends and branches:
        branches.append(b"")
    return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")" if branches else b""


_SMALL = 1024
SHORTEST_BASE64_RUN = 12
"""Characters in the shortest run of base64 worth decoding (9 bytes): fragments elsewhere are not reported."""
_CHUNK = 1 << 16
_KINDS = bytes((2 if 65 <= b <= 90 else 4 if 97 <= b <= 122 else 8 if 48 <= b <= 57 else 0) for b in range(256))
_BASE64_CLASS = bytes(1 if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/_-") else 0 for b in range(256))


def base64_runs(data: bytes) -> Iterator[tuple[int, int]]:
    """The runs of base64 characters (standard or URL-safe) in ``data`` that may hold base64: those with 12
    (:data:`SHORTEST_BASE64_RUN`) characters in a row that hold an upper-case letter, a lower-case letter
    and a digit. Paths, words, names and hex digests do not; base64 of 9 bytes or more almost always does.

    Found with whole-buffer operations (``bytes.translate``, and shifts of integers holding a byte per
    character) rather than a regex trying each byte in turn: a clean output costs a few passes at memory speed.
    """
    marks = data.translate(_BASE64_CLASS)  # 1 for a base64 character, else 0
    at = 0
    for offset in range(0, len(data), _CHUNK):  # in pieces, so that the integers stay small
        piece = slice(offset, offset + _CHUNK + SHORTEST_BASE64_RUN - 1)
        ones = int.from_bytes(marks[piece], "little")
        kinds = int.from_bytes(data[piece].translate(_KINDS), "little")  # 2 upper-case, 4 lower-case, 8 digit
        for shift in (8, 16, 32, 32):  # at each byte: the 2, 4, 8, then 12 characters from there on
            ones &= ones >> shift  # all base64
            kinds |= kinds >> shift  # the kinds of character among them
        ones &= (kinds >> 1) & (kinds >> 2) & (kinds >> 3)  # (only each byte's lowest bit is kept)
        if not ones:
            continue
        windows = ones.to_bytes(_CHUNK + SHORTEST_BASE64_RUN, "little")[:_CHUNK]
        while (window := windows.find(1, max(0, at - offset))) >= 0:
            window += offset
            end = marks.find(0, window)
            end = len(data) if end < 0 else end
            yield marks.rfind(0, 0, window) + 1, end
            at = end


_SETS_KEPT = 4096


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
    literal is reported as a fragment of its own too. ``encoded`` fragments (exact, of
    base64 characters) matter only inside a run of base64: ``re`` looks for them
    only in :func:`base64_runs`, Hyperscan reports them anywhere.
    """

    def __init__(
        self,
        caseless: Iterable[str],
        exact: Iterable[str | bytes],
        *,
        screens: Iterable[Screen] = (),
        place: Iterable[Hashable] | None = None,
        encoded: Iterable[bytes] = (),
        use_hyperscan: bool = True,
    ) -> None:
        self.screens = tuple(screens)
        encoded = frozenset(encoded)
        self.caseless = sorted(set(caseless) | {s.literal.decode() for s in self.screens if s.caseless})
        self.exact: list[str | bytes] = sorted(
            set(exact) | encoded | {s.literal for s in self.screens if not s.caseless}, key=_needle
        )
        self.fragments: tuple[Hashable, ...] = (*self.caseless, *self.exact, *(s.name for s in self.screens))
        self.engine = "none"
        self._pool: list[Any] = []  # Hyperscan scratch spaces not in use
        self._every_pool: list[Any] = []
        self._sets: dict[tuple[int, ...], frozenset[Hashable]] = {}  # what found() answered for these matches
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
                _fell_back(exc)
        as_given: list[tuple[Hashable, bytes]] = [(f, _needle(f)) for f in self.exact if f not in encoded]
        # Base64 fragments: looked for only inside runs long enough to be decoded, which ``re`` finds
        # at the speed of one character class, far faster than hundreds more needles at every byte.
        self._encoded = (
            re.compile(b"|".join(map(re.escape, sorted(encoded, key=len, reverse=True)))) if encoded else None
        )
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
                self._database.scan(data, _stop, 0, None, scratch)  # (by position: cheaper to parse)
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
            pool = self._pool  # (_scratch and _release, written out: this runs on every stored call)
            try:
                scratch = pool.pop()
            except IndexError:
                scratch = self._scratch_type(database)
            try:
                database.scan(data, _collect, 0, ids, scratch)  # (by position: keywords cost 1.7k instructions)
            finally:
                pool.append(scratch)
            if not ids:
                return _NOTHING
            # The same few matches recur call after call: one shared set each (its hash kept, for the caches
            # keyed by it), not a new one per scan.
            key = tuple(ids)
            found = self._sets.get(key)
            if found is None:
                found = frozenset(map(self.fragments.__getitem__, ids))
                if len(self._sets) < _SETS_KEPT:
                    self._sets[key] = found
            return found
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
            self._every.scan(data, _record, 0, hits, scratch)
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
        if self._encoded is not None:
            self._search_runs(data, hits, positions, cap)
        return frozenset(hits) if hits else _NOTHING

    def _search_runs(
        self, data: bytes, hits: set[Hashable], positions: dict[Hashable, list[int]] | None, cap: int
    ) -> None:
        """The base64 fragments in ``data``, looked for in its runs of base64 characters only."""
        counts: dict[bytes, int] = {}
        for start, end in base64_runs(data):
            for hit in self._encoded.finditer(data, start, end):  # type: ignore[union-attr]
                fragment = hit.group()
                hits.add(fragment)
                if positions is not None and fragment in self._place:
                    counts[fragment] = seen = counts.get(fragment, 0) + 1
                    if seen <= cap:
                        positions.setdefault(fragment, []).append(hit.start())
                    elif seen == cap + 1:
                        positions.pop(fragment, None)  # too many to use: a plain pass is cheaper


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
_told: set[bool] = set()  # whether the fallback to ``re`` was logged, by whether Hyperscan is installed


def _fell_back(exc: Exception) -> None:
    """Say once per process that scans use ``re``: a warning only when Hyperscan is installed and failed to load.

    A core install (no ``toolctx[fast]``) has asked for nothing faster: that is logged at
    debug level, so a default install warns about nothing.
    """
    try:
        installed = importlib.util.find_spec("hyperscan") is not None
    except (ImportError, ValueError):  # a stand-in without a spec
        installed = False
    if installed in _told:
        return
    _told.add(installed)
    level = WARNING if installed else DEBUG
    log(level, "slow_secret_scan", reason=f"{type(exc).__name__}: {exc}", fast_extra_installed=installed)


def _stop(*_: object) -> bool:
    return True  # the first match answers the question: stop scanning


def _collect(fragment_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(fragment_id)

"""The redaction prefilter: a fast "might this contain any of these fragments?" test over bytes.

Redaction uses it to skip the (slow) parse-walk-encode of outputs that cannot
hold a secret. Hyperscan scans all fragments at once in a single pass at memory
speed; where it cannot load (a platform without a wheel, a CPU without SSSE3, or
the ``fast`` extra not installed) one compiled ``re`` alternation gives the same
answers, several times slower. :meth:`Prefilter.found` says which fragments occur, so
redaction runs only the rules those fragments belong to.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from toolctx._internal import WARNING, log

__all__ = ["Prefilter"]


class Prefilter:
    """Finds which fragments occur in ``data``; ``caseless`` ones in any (ASCII) letter case."""

    def __init__(self, caseless: Iterable[str], exact: Iterable[str], *, use_hyperscan: bool = True) -> None:
        self.caseless = sorted(set(caseless))
        self.exact = sorted(set(exact))
        self.fragments = (*self.caseless, *self.exact)
        self.engine = "none"
        self._local = threading.local()
        self._database: Any = None
        self._lowered = tuple(f.lower().encode() for f in self.caseless)
        self._encoded = tuple(f.encode() for f in self.exact)
        self._caseless_re: re.Pattern[bytes] | None = None  # over the lowered data
        self._exact_re: re.Pattern[bytes] | None = None
        if not self.fragments:
            return
        if use_hyperscan:
            try:
                self._database = self._compile_hyperscan()
                self.engine = "hyperscan"
                return
            except Exception as exc:  # ImportError, or hyperscan refusing this CPU
                log(WARNING, "slow_secret_scan", reason=f"{type(exc).__name__}: {exc}")
        # Lowering the data once and matching lowered fragments is about ten times
        # faster in ``re`` than one alternation of case-insensitive groups.
        if self._lowered:
            self._caseless_re = re.compile(b"|".join(re.escape(f) for f in self._lowered))
        if self._encoded:
            self._exact_re = re.compile(b"|".join(re.escape(f) for f in self._encoded))
        self.engine = "re"

    def _compile_hyperscan(self) -> Any:
        import hyperscan

        expressions = [re.escape(f).encode() for f in self.fragments]
        single = hyperscan.HS_FLAG_SINGLEMATCH  # each fragment reported once
        flags = [single | hyperscan.HS_FLAG_CASELESS] * len(self.caseless) + [single] * len(self.exact)
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
        self._terminated = hyperscan.ScanTerminated
        self._scratch_type = hyperscan.Scratch
        return database

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:  # scratch space may not be shared between threads
            scratch = self._local.scratch = self._scratch_type(self._database)
        return scratch

    def __call__(self, data: bytes) -> bool:
        """Whether any fragment occurs in ``data`` (stops at the first)."""
        if self._database is not None:
            try:
                self._database.scan(data, match_event_handler=_stop, scratch=self._scratch())
            except self._terminated:
                return True
            return False
        return (self._exact_re is not None and self._exact_re.search(data) is not None) or (
            self._caseless_re is not None and self._caseless_re.search(data.lower()) is not None
        )

    def found(self, data: bytes) -> frozenset[str]:
        """The fragments that occur in ``data`` (one pass with Hyperscan)."""
        database = self._database
        if database is not None:
            ids: list[int] = []
            scratch = getattr(self._local, "scratch", None) or self._scratch()
            database.scan(data, match_event_handler=_collect, context=ids, scratch=scratch)
            return frozenset(map(self.fragments.__getitem__, ids)) if ids else _NOTHING
        if not self(data):
            return _NOTHING
        lowered = data.lower()  # something is there (rare): say exactly what
        hits = [f for f, low in zip(self.caseless, self._lowered, strict=True) if low in lowered]
        hits += [f for f, raw in zip(self.exact, self._encoded, strict=True) if raw in data]
        return frozenset(hits)


_NOTHING: frozenset[str] = frozenset()


def _stop(*_: object) -> bool:
    return True  # the first match answers the question: stop scanning


def _collect(fragment_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(fragment_id)

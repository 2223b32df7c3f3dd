"""The redaction prefilter: a fast "might this contain any of these fragments?" test over bytes.

Redaction uses it to skip the (slow) parse-walk-encode of outputs that cannot
hold a secret. Hyperscan scans all fragments at once in a single pass at memory
speed; where it cannot load (a platform without a wheel, a CPU without SSSE3)
one compiled ``re`` alternation gives the same answers, several times slower.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from toolctx._internal import WARNING, log

__all__ = ["Prefilter"]


class Prefilter:
    """Answers whether ``data`` contains any fragment; ``caseless`` ones in any letter case."""

    def __init__(self, caseless: Iterable[str], exact: Iterable[str], *, use_hyperscan: bool = True) -> None:
        self.caseless = sorted(set(caseless))
        self.exact = sorted(set(exact))
        self.engine = "none"
        self._local = threading.local()
        self._database: Any = None
        self._regex: re.Pattern[bytes] | None = None
        if not (self.caseless or self.exact):
            return
        if use_hyperscan:
            try:
                self._database = self._compile_hyperscan()
                self.engine = "hyperscan"
                return
            except Exception as exc:  # ImportError, or hyperscan refusing this CPU
                log(WARNING, "slow_secret_scan", reason=f"{type(exc).__name__}: {exc}")
        parts = [f"(?i:{re.escape(f)})" for f in self.caseless] + [re.escape(f) for f in self.exact]
        self._regex = re.compile("|".join(parts).encode())
        self.engine = "re"

    def _compile_hyperscan(self) -> Any:
        import hyperscan

        expressions = [re.escape(f).encode() for f in self.caseless + self.exact]
        single = hyperscan.HS_FLAG_SINGLEMATCH
        flags = [single | hyperscan.HS_FLAG_CASELESS] * len(self.caseless) + [single] * len(self.exact)
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
        self._terminated = hyperscan.ScanTerminated
        self._scratch_type = hyperscan.Scratch
        return database

    def __call__(self, data: bytes) -> bool:
        if self._database is not None:
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:  # scratch space may not be shared between threads
                scratch = self._local.scratch = self._scratch_type(self._database)
            try:
                self._database.scan(data, match_event_handler=_stop, scratch=scratch)
            except self._terminated:
                return True
            return False
        if self._regex is not None:
            return self._regex.search(data) is not None
        return False


def _stop(*_: object) -> bool:
    return True  # the first match answers the question: stop scanning

"""The clock that stamps stored calls: the system's, or a test's while :func:`stamping_clock` runs."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

__all__ = ["clock", "stamping_clock"]


class _Clock:
    __slots__ = ("time_ns",)

    def __init__(self) -> None:
        self.time_ns: Callable[[], int] = time.time_ns


clock = _Clock()


@contextlib.contextmanager
def stamping_clock(time_ns: Callable[[], int]) -> Iterator[None]:
    """Stamp the calls every session stores with ``time_ns()`` (nanoseconds) while the block runs.

    Process-wide, for tests that write timestamps down (:func:`toolctx.testing.fixed_session`):
    use one at a time.
    """
    if not callable(time_ns):
        raise TypeError(f"time_ns must be a function returning nanoseconds, got {time_ns!r:.80}")
    before = clock.time_ns
    clock.time_ns = time_ns
    try:
        yield
    finally:
        clock.time_ns = before

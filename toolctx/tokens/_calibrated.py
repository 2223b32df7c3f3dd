"""Counts corrected by the usage a provider reports, for models whose tokenizer is not public."""

from __future__ import annotations

import math
import threading

from toolctx.errors import ConfigError
from toolctx.tokens._counter import TokenCounter

__all__ = ["CalibratedCounter"]


class CalibratedCounter:
    """A counter scaled by what the provider reported for requests it counted.

    Claude, Gemini and most open models tokenize with vocabularies toolctx
    does not have; counting them with ``o200k_base`` or the estimate is off by
    a steady factor (often 10-30 %). After each call, :meth:`observe` takes the
    count made for the request and the ``prompt_tokens`` (OpenAI) or
    ``input_tokens`` (Anthropic) the provider reported; the counter keeps a
    moving average of their ratio, so later counts come out in the provider's
    tokens::

        counter = CalibratedCounter(get_counter("o200k_base"))
        estimated = count_request(messages, tools=tools, counter=counter.base)
        response = client.messages.create(...)
        counter.observe(estimated, response.usage.input_tokens)
        budget_left = limit - counter.adjust(count_request(next_messages, counter=counter.base))

    The ratio starts at 1, moves by ``weight`` of each new observation and
    stays within ``[low, high]`` (default 0.5-2.0), so one odd report (a
    cached prefix, an image) cannot swing it far. Reports with a count
    below ``min_tokens`` (default 50) are ignored: a few tokens of framing
    dominate them. Safe to share between threads.
    """

    def __init__(
        self,
        base: TokenCounter,
        *,
        weight: float = 0.2,
        low: float = 0.5,
        high: float = 2.0,
        min_tokens: int = 50,
    ) -> None:
        if not isinstance(base, TokenCounter):
            raise ConfigError(f"base must be a TokenCounter (such as get_counter('o200k_base')), got {base!r}")
        if not 0 < weight <= 1:
            raise ConfigError(f"weight must be in (0, 1], got {weight!r}")
        if not 0 < low <= 1 <= high:
            raise ConfigError(f"the bounds must satisfy 0 < low <= 1 <= high, got low={low!r} high={high!r}")
        if min_tokens < 1:
            raise ConfigError(f"min_tokens must be at least 1, got {min_tokens!r}")
        self.base = base
        self._weight = weight
        self._low = low
        self._high = high
        self._min_tokens = min_tokens
        self._ratio = 1.0
        self._observed = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The base counter's name with ``+calibrated``, such as ``"o200k_base+calibrated"``."""
        return f"{self.base.name}+calibrated"

    @property
    def ratio(self) -> float:
        """Reported tokens per counted token, as learned so far (1.0 before any observation)."""
        return self._ratio

    @property
    def observations(self) -> int:
        """How many reports have moved the ratio."""
        return self._observed

    def observe(self, counted: int, reported: int) -> None:
        """Learn from one request: what the base counter counted and what the provider reported.

        Negative or non-integer values raise :class:`~toolctx.errors.ConfigError`.
        """
        for label, value in (("counted", counted), ("reported", reported)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{label} must be a token count (an int >= 0), got {value!r}")
        if counted < self._min_tokens or reported == 0:
            return
        sample = min(self._high, max(self._low, reported / counted))
        with self._lock:
            if self._observed == 0:
                self._ratio = sample
            else:
                self._ratio += self._weight * (sample - self._ratio)
            self._observed += 1

    def adjust(self, counted: int) -> int:
        """A count made with the base counter, in the provider's tokens (rounded up)."""
        return math.ceil(counted * self._ratio - 1e-9)

    def count(self, text: str) -> int:
        """The base counter's count of ``text``, scaled by the learned ratio."""
        return self.adjust(self.base.count(text))

    def __repr__(self) -> str:
        return f"CalibratedCounter({self.base!r}, ratio={self._ratio:.3f}, observations={self._observed})"

"""The one interface every budget and trigger in toolctx counts tokens through."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolctx.tokens._estimate import estimate_tokens

__all__ = ["EstimateCounter", "TokenCounter"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a model spends on a piece of text.

    Anything with a ``name`` and a ``count(text) -> int`` method is a counter:
    an exact tokenizer, the fast estimate, or a user's own.
    """

    @property
    def name(self) -> str:
        """What the counts are measured in, such as ``"o200k_base"`` or ``"estimate"``."""
        ...

    def count(self, text: str) -> int:
        """How many tokens ``text`` costs; 0 for the empty string."""
        ...


class EstimateCounter:
    """The fast estimate as a :class:`TokenCounter`: no tokenizer, no vocabulary, no I/O."""

    name = "estimate"

    def count(self, text: str) -> int:
        """About how many tokens ``text`` costs (see :func:`estimate_tokens`)."""
        return estimate_tokens(text)

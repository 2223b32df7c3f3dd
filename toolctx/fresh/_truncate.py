"""Cutting text and lists down to a token budget without cutting a line or an item in half.

What is cut is always said: a text ends with a marker naming the lines left out,
a list with one naming how many items were left out. The marker's own tokens are
counted in the budget, and a budget too small for even the marker gives nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from toolctx._checks import whole_number
from toolctx.tokens import TokenCounter

__all__ = ["FitItems", "Truncation", "fit_items", "truncate_lines"]


@dataclass(frozen=True)
class Truncation:
    """Text cut to a budget: the text as kept (marker included) and what it cost."""

    text: str
    tokens: int
    kept_lines: int
    total_lines: int

    @property
    def truncated(self) -> bool:
        """Whether any line was left out."""
        return self.kept_lines < self.total_lines


@dataclass(frozen=True)
class FitItems:
    """The items that fit a budget, as indices into the list given, and the text they make."""

    kept: tuple[int, ...]
    text: str
    tokens: int
    total_items: int

    @property
    def cut(self) -> int:
        """How many items were left out."""
        return self.total_items - len(self.kept)


def _line_marker(first_cut: int, total: int) -> str:
    if first_cut == 0:
        return f"[… all {total} lines cut to fit the token budget]"
    return f"[… lines {first_cut + 1}-{total} of {total} cut to fit the token budget]"


def truncate_lines(text: str, max_tokens: int, counter: TokenCounter) -> Truncation:
    """The longest run of ``text``'s first whole lines that fits ``max_tokens`` with its cut marker.

    Text that fits is returned unchanged. Otherwise the kept lines are followed by
    a line saying which lines were cut; the result, marker included, counts at most
    ``max_tokens`` with ``counter``. A budget too small for the marker gives ``""``.
    """
    whole_number("max_tokens", max_tokens, unit="tokens")
    tokens = counter.count(text)
    lines = text.splitlines(keepends=True)
    if tokens <= max_tokens:
        return Truncation(text, tokens, len(lines), len(lines))
    # Binary search on the number of whole lines kept, counting each candidate exactly
    # (marker included). The first probe is proportional, so a cut to a small part of
    # a large text counts only small prefixes.
    offsets = list(accumulate((len(line) for line in lines), initial=0))
    fits, over = 0, len(lines)  # bounds: `over` lines do not fit; more than `fits` might
    best: Truncation | None = None
    probe = min(len(lines) - 1, len(lines) * max_tokens // max(tokens, 1))
    while True:
        candidate = _cut(text, offsets, probe, len(lines))
        cost = counter.count(candidate)
        if cost <= max_tokens:
            best = Truncation(candidate, cost, probe, len(lines))
            fits = probe
        elif probe == 0:
            return Truncation("", 0, 0, len(lines))
        else:
            over = probe
        if over - fits <= 1:
            break
        probe = (fits + over) // 2
    return best if best is not None else Truncation("", 0, 0, len(lines))


def _cut(text: str, offsets: list[int], keep: int, total: int) -> str:
    kept = text[: offsets[keep]]
    if kept and not kept.endswith("\n"):
        kept += "\n"
    return kept + _line_marker(keep, total)


def _items_marker(cut: int, total: int) -> str:
    return f"[… {cut} of {total} items cut to fit the token budget]"


def fit_items(items: Sequence[str], max_tokens: int, counter: TokenCounter, separator: str = "\n") -> FitItems:
    """Whole items, first to last, while they fit ``max_tokens`` joined by ``separator``.

    An item too large for what is left is skipped and later, smaller ones are still
    tried. When any item is left out, a last line says how many; the joined text,
    that line included, counts at most ``max_tokens``.
    """
    whole_number("max_tokens", max_tokens, unit="tokens")
    total = len(items)
    if not total:
        return FitItems((), "", 0, 0)
    joined = separator.join(items)
    tokens = counter.count(joined)
    if tokens <= max_tokens:
        return FitItems(tuple(range(total)), joined, tokens, total)
    room = max_tokens - counter.count(separator + _items_marker(total, total))
    kept: list[int] = []
    spent = 0
    step = counter.count(separator)
    for index, item in enumerate(items):
        cost = counter.count(item) + (step if kept else 0)
        if spent + cost <= room:
            kept.append(index)
            spent += cost
    while True:
        parts = [items[i] for i in kept]
        parts.append(_items_marker(total - len(kept), total))
        text = separator.join(parts)
        cost = counter.count(text)
        if cost <= max_tokens:
            return FitItems(tuple(kept), text, cost, total)
        if not kept:
            return FitItems((), "", 0, total)
        kept.pop()

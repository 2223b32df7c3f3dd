"""Files too large for their share of the budget, shown as the parts that matter to the task.

An excerpt keeps, in file order, the code the search matched for the task (each
hit with the definition lines that enclose it), the file's outline (its
definition lines: top-level ones first, then those one level in) and, for a file
nothing matched, its first lines. Each run of lines left out is marked by a line
holding ``⋮``, and the heading says how many of the file's lines are shown.

:func:`fit_files` places the ranked files: first every file, best first, whole
when it fits its fair share of the room and as an excerpt of that share
otherwise, so that many ranked files fit; then, best first, excerpts grow (to
the whole file when it fits) with whatever room is left.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolctx.fresh import _render
from toolctx.tokens import TokenCounter

__all__ = ["MIN_EXCERPT_TOKENS", "Excerpt", "FileFit", "excerpt", "fit_files", "line_ranges"]

#: An excerpt smaller than this is not worth showing: the file is left out instead.
MIN_EXCERPT_TOKENS = 200
GAP = "⋮"
_MAX_HIT_LINES = 80  # a long hit shows its first lines; the rest of the room goes to other hits
_HEAD_LINES = 40
_OUTLINE = re.compile(
    r"^(\s*)(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|static|abstract|final|async|default|override)\s+)*"
    r"(?:def|class|func|fn|function|interface|struct|enum|trait|impl|type|module|object|record)\b"
)


@dataclass(frozen=True)
class Excerpt:
    """Some of a file's lines (1-based), as shown: ``text`` holds the lines with ``⋮`` for each gap."""

    text: str
    lines: tuple[int, ...]
    total_lines: int


def line_ranges(lines: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Sorted line numbers as inclusive ``(first, last)`` runs."""
    runs: list[tuple[int, int]] = []
    for number in sorted(lines):
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return tuple(runs)


def _outline(lines: list[str]) -> list[tuple[int, int]]:
    """``(line number, indent)`` of every line that opens a definition."""
    found = []
    for number, line in enumerate(lines, start=1):
        match = _OUTLINE.match(line)
        if match:
            found.append((number, len(match.group(1).expandtabs(4))))
    return found


def _enclosing(outline: list[tuple[int, int]], start: int, lines: list[str]) -> list[int]:
    """The definition lines that enclose line ``start`` (nearest first), by indentation."""
    line = lines[start - 1]
    indent = len(line) - len(line.lstrip())
    found = []
    for number, level in reversed(outline):
        if number >= start or level >= indent:
            continue
        found.append(number)
        indent = level
        if level == 0:
            break
    return found


def _pieces(lines: list[str], spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The line groups an excerpt takes, most useful first: best hit, top-level outline, other hits, members."""
    outline = _outline(lines)
    top = [n for n, level in outline if level == 0]
    members = [n for n, level in outline if 0 < level <= 4]
    hits = []
    for first, last in spans:
        start, end = max(1, first), min(len(lines), last)
        if start > end:
            continue
        body = list(range(start, min(end, start + _MAX_HIT_LINES - 1) + 1))
        hits.append(sorted(_enclosing(outline, start, lines)) + body)
    if not hits:
        head = list(range(1, min(len(lines), _HEAD_LINES) + 1))
        return [top, head, members]
    return [hits[0], top, *hits[1:], members]


def _render_lines(path: str, lines: list[str], chosen: set[int]) -> str:
    parts: list[str] = []
    previous = 0
    for number in sorted(chosen):
        if number > previous + 1:
            parts.append(GAP)
        parts.append(lines[number - 1])
        previous = number
    if previous < len(lines):
        parts.append(GAP)
    note = (
        f" (excerpt: {len(chosen):,} of {len(lines):,} lines, the code matching the task and the outline;"
        f" {GAP} marks lines left out)"
    )
    return _render.file_item(path, "\n".join(parts), note)


def excerpt(
    path: str,
    text: str,
    spans: Sequence[tuple[int, int]],
    max_tokens: int,
    counter: TokenCounter,
    max_chars: int | None = None,
) -> Excerpt | None:
    """The parts of ``text`` worth showing within ``max_tokens`` (rendered as a file item), or None.

    ``spans`` are the search's hits in the file, best first, as inclusive line
    ranges. Whole groups of lines are taken in order of use while the estimate
    fits, a group that does not fit is taken in part (outline lines one by one,
    a hit's first lines); the rendered item is then counted exactly and lines are
    dropped from the end of what was taken until it fits. The lines shown hold at
    most ``max_chars`` characters when it is given.
    """
    lines = text.split("\n")
    if max_tokens < MIN_EXCERPT_TOKENS or not lines:
        return None
    per_char = counter.count(text) / max(1, len(text))
    cost = [1.0 + len(line) * per_char for line in lines]
    overhead = counter.count(_render_lines(path, [""], {1})) + 4
    room: float = max_tokens - overhead
    chars = max_chars if max_chars is not None else len(text) + 1
    taken: list[int] = []
    chosen: set[int] = set()
    for piece in _pieces(lines, spans):
        for number in piece:
            if number in chosen:
                continue
            extra = cost[number - 1] + (2.0 if number - 1 not in chosen else 0.0)
            if extra > room or len(lines[number - 1]) + 2 > chars:
                break
            chosen.add(number)
            taken.append(number)
            room -= extra
            chars -= len(lines[number - 1]) + 2
    while taken:
        shown = _render_lines(path, lines, chosen)
        tokens = counter.count(shown)
        if tokens <= max_tokens:
            return Excerpt(shown, tuple(sorted(chosen)), len(lines))
        over = tokens - max_tokens
        while taken and over > 0:  # drop what was taken last until the estimate makes up the overshoot
            number = taken.pop()
            chosen.discard(number)
            over -= int(cost[number - 1]) + 1
    return None


@dataclass(frozen=True)
class FileFit:
    """One file as placed: its rendered item and, for an excerpt, the lines it shows (``None`` when whole)."""

    index: int
    item: str
    tokens: int
    lines: tuple[int, ...] | None = None


def fit_files(
    files: Sequence[tuple[str, str]],
    spans: dict[str, list[tuple[int, int]]],
    room: int,
    counter: TokenCounter,
    max_whole_chars: int | None = None,
) -> list[FileFit]:
    """Files ``(path, text)``, best first, placed within ``room`` tokens (their items' separators included).

    Each file first gets a fair share of the room (``room`` over the number of
    files, at least :data:`MIN_EXCERPT_TOKENS`): whole if it fits the share, else
    an excerpt of the share. What is left then goes, best first, to growing the
    excerpts, to the whole file when it fits. A file longer than
    ``max_whole_chars`` is only ever shown as an excerpt of at most that many
    characters.
    """
    limit = max_whole_chars if max_whole_chars is not None else max((len(t) for _, t in files), default=0)
    separator = counter.count("\n\n")
    whole = [_render.file_item(path, text) for path, text in files]
    whole_cost = [counter.count(item) + separator for item in whole]
    placed: dict[int, FileFit] = {}
    left = room
    for index, (path, text) in enumerate(files):
        share = max(MIN_EXCERPT_TOKENS, left // max(1, len(files) - index))
        if whole_cost[index] <= min(share, left) and len(text) <= limit:
            placed[index] = FileFit(index, whole[index], whole_cost[index] - separator)
            left -= whole_cost[index]
            continue
        cut = excerpt(path, text, spans.get(path, []), min(share, left) - separator, counter, limit)
        if cut is not None:
            tokens = counter.count(cut.text)
            placed[index] = FileFit(index, cut.text, tokens, cut.lines)
            left -= tokens + separator
    for index in sorted(placed):
        fit = placed[index]
        if fit.lines is None or left <= 0:
            continue
        path, text = files[index]
        if whole_cost[index] - fit.tokens - separator <= left and len(text) <= limit:
            left -= whole_cost[index] - fit.tokens - separator
            placed[index] = FileFit(index, whole[index], whole_cost[index] - separator)
            continue
        grown = excerpt(path, text, spans.get(path, []), fit.tokens + left, counter, limit)
        if grown is not None and len(grown.lines) > len(fit.lines):
            tokens = counter.count(grown.text)
            left -= tokens - fit.tokens
            placed[index] = FileFit(index, grown.text, tokens, grown.lines)
    return [placed[index] for index in sorted(placed)]

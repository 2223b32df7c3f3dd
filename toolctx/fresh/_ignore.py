"""The patterns of one ``.gitignore`` file, tried only on the paths they could match.

pathspec's ``GitIgnoreSpec`` compiles every pattern when it is built (with the
Hyperscan backend, into one database whose compile time grows faster than the
number of patterns: 10,000 lines took over a minute) and then tries the
patterns on every path. Here a pattern is compiled, by pathspec, the first time
a path could match it. A pattern with a literal segment (``build/``,
``src/gen/*.py``, ``.DS_Store``) can only match a path having that name as a
component (it is filed under the rarest such name in the file), a pattern
whose last segment is ``*`` and a literal (``*.log``) only a path with a
component ending so, and any other glob with two literal characters in a row
(``[Bb]uild*/``) only a path with a component containing them: all three are
found by dictionary lookups on the path's components. The rest (``*``,
``?.py``, lines with escapes) are tried on every path. A path costs
the lookups plus the patterns that could match it, so a scan is linear in
patterns times files at worst and, for the usual ignore files, close to linear
in the files alone.

The answer is ``GitIgnoreSpec``'s (pathspec 1.x, its reference "simple"
backend) for the same lines: the last pattern matching the path itself wins,
else the last one matching it through a folder.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from toolctx._internal import WARNING, log

__all__ = ["IgnoreFile"]

_GLOB = frozenset("*?[]\\")
_DIR_MARK = "ps_d"  # the group pathspec's gitignore patterns capture when they match through a folder
_NAME, _SUFFIX, _INFIX = 0, 1, 2


@functools.cache
def _pattern_class() -> Any:
    try:  # pathspec 1.x
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
    except ImportError:  # pragma: no cover - pathspec 0.12
        from pathspec.patterns.gitwildmatch import GitWildMatchPattern

        return GitWildMatchPattern
    return GitIgnoreSpecPattern


def _literal_runs(segment: str) -> list[str]:
    """The runs of two or more literal characters of a glob segment, each of which a matching name contains."""
    if segment.count("[") != segment.count("]") or segment.count("[") > 1:
        return []  # nested or unbalanced brackets: not worth reading closely
    if "[" in segment:
        start, end = segment.index("["), segment.index("]")
        if end < start + 2 or (end == start + 2 and segment[start + 1] in "!^"):
            return []  # "[]..." or "[!]...": a bracket that is a member, not the end
        segment = f"{segment[:start]}*{segment[end + 1 :]}"
    runs = segment.replace("?", "*").split("*")
    return [run for run in runs if len(run) >= 2]


def _keys(line: str) -> list[tuple[int, str]]:
    """The components a path this pattern matches must have (a name, a name's ending, a part of a name)."""
    if "\\" in line:
        return []  # escapes: left to pathspec, tried on every path
    text = line.rstrip()
    if text.startswith("!"):
        text = text[1:]
    segments = [segment for segment in text.split("/") if segment]
    if not segments or any(segment in (".", "..") for segment in segments):
        return []
    names = [(_NAME, segment) for segment in segments if not _GLOB.intersection(segment)]
    if names:
        return names
    last = segments[-1]
    if len(last) > 1 and last[0] == "*" and not _GLOB.intersection(last[1:]):
        return [(_SUFFIX, last[1:])]
    return [(_INFIX, run) for segment in segments if segment != "**" for run in _literal_runs(segment)]


class IgnoreFile:
    """The patterns of one ``.gitignore``; :meth:`ignores` answers for a path relative to its folder.

    Not safe to share between threads while in use (patterns are compiled on first use);
    a scan uses it from one thread.
    """

    def __init__(self, lines: list[str], source: str = ".gitignore") -> None:
        self.source = source
        self._lines: list[str] = []
        self._compiled: list[Any] = []  # None: not compiled yet; False: a no-op or invalid pattern
        self._by_name: dict[str, list[int]] = {}
        self._by_suffix: dict[str, list[int]] = {}
        self._by_infix: dict[str, list[int]] = {}
        self._infix_lengths: list[int] = []
        self._anywhere: list[int] = []  # in descending order
        self._longest_suffix = 0
        keyed: list[list[tuple[int, str]]] = []
        for line in lines:
            stripped = line.rstrip()
            if stripped and not stripped.startswith("#"):
                self._lines.append(line)
                keyed.append(_keys(line))
        self._compiled = [None] * len(self._lines)
        # Each pattern is filed under its rarest required component: "/gen{n}/out.py" under "gen{n}".
        counts = Counter(key for keys in keyed for key in keys)
        for index, keys in enumerate(keyed):
            if not keys:
                self._anywhere.append(index)
                continue
            kind, text = min(reversed(keys), key=counts.__getitem__)
            if kind == _NAME:
                self._by_name.setdefault(text, []).append(index)
            elif kind == _SUFFIX:
                self._by_suffix.setdefault(text, []).append(index)
                self._longest_suffix = max(self._longest_suffix, len(text))
            else:
                self._by_infix.setdefault(text, []).append(index)
        self._infix_lengths = sorted({len(text) for text in self._by_infix})
        self._anywhere.reverse()

    def _candidates(self, path: str) -> Iterator[int]:
        """The patterns that could match ``path``, last first."""
        found: set[int] = set()
        for component in path.split("/"):
            if not component:
                continue
            found.update(self._by_name.get(component, ()))
            if self._by_suffix:
                for start in range(max(0, len(component) - self._longest_suffix), len(component)):
                    found.update(self._by_suffix.get(component[start:], ()))
            for length in self._infix_lengths:
                if length > len(component):
                    break
                for start in range(len(component) - length + 1):
                    found.update(self._by_infix.get(component[start : start + length], ()))
        return heapq.merge(sorted(found, reverse=True), self._anywhere, reverse=True)

    def _pattern(self, index: int) -> Any:
        pattern = self._compiled[index]
        if pattern is None:
            try:
                pattern = _pattern_class()(self._lines[index])
            except (ValueError, re.error) as exc:  # "!", "[z-a]": git skips such a line too
                line = self._lines[index]
                log(WARNING, "fresh_gitignore_pattern_skipped", file=self.source, line=line, error=str(exc))
                pattern = False
            else:
                if pattern.include is None or pattern.regex is None:
                    pattern = False
            self._compiled[index] = pattern
        return pattern

    def ignores(self, path: str) -> bool:
        """Whether these patterns exclude ``path`` (``/``-separated; a folder ends with ``/``)."""
        through_folder: bool | None = None
        for index in self._candidates(path):
            pattern = self._pattern(index)
            if pattern is False:
                continue
            match = pattern.regex.search(path)
            if match is None:
                continue
            if not match.groupdict().get(_DIR_MARK):
                return bool(pattern.include)  # the last pattern matching the path itself
            if through_folder is None:
                through_folder = bool(pattern.include)
        return bool(through_folder)

"""What the agent still uses: old outputs, arguments and text that its later calls and text took values from.

An agent copies names and strings from what it was shown: a function name from a
file it printed, a variable or a message from the script it wrote a few calls ago.
A distinctive word (a dotted name, one with an underscore or a case change inside
it, a file name, or a code of capitals and digits; plain words and numbers would
make everything look used), or what a pair of quotes holds, that the model wrote in
two responses or more is in use. The policy keeps the items used so by the last
``CompactionSettings.in_use_calls`` responses whole, the most lately used first and
up to ``CompactionSettings.in_use_tokens``; when it stands in for an old item, the
stand-in keeps up to ``CompactionSettings.in_use_lines`` of its lines that hold
such a word written again in or after the item's response (the item is where the
model took it from, or a copy it saw since), one line for each word across all
stand-ins. What the model writes (its text and its calls' arguments) is read for
its words once, at the next batch; an item's own words are looked up only when it
is compacted or weighed for keeping.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolctx.compaction._conversation import (
    LINES_IN_USE,
    MAX_SCAN,
    Conversation,
    argument_texts,
    is_name,
    name_stands_at,
    names_by_line,
    words_of,
)

__all__ = ["choose", "in_use", "lines_in_use"]

_WIDTH = 160  # characters of a line kept in a stand-in


def in_use(conversation: Conversation, responses: int, budget: int, args_chars: int) -> dict[int, int]:
    """The candidates of ``conversation`` (position -> gain) to keep whole for now: those a response of the
    last ``responses`` took a word from, the most lately used first, up to ``budget`` tokens (a result's words:
    its output's and its call's arguments' over ``args_chars``, those a batch would stand in for)."""
    usage = conversation.usage
    usage.read()
    since = conversation.answered - responses
    ranked: list[tuple[int, int, int]] = []  # (-latest use, gain, position)
    for position, gain in conversation.candidates:
        if gain > budget:
            continue
        words = conversation.words.get(position)
        if words is None:
            said = conversation.said.get(position)
            if said is not None:
                words = words_of((said,))
            else:
                _, call, result = conversation.results[position]
                words = words_of((result.text, *argument_texts(call.args, args_chars)))
            conversation.words[position] = words
        taken = usage.taken(words, conversation.at[position], since)
        if taken:
            ranked.append((-max(usage.last[w] for w in taken), gain, position))
    held: dict[int, int] = {}
    for _, gain, position in sorted(ranked):
        if gain <= budget:
            held[position] = gain
            budget -= gain
    return held


def choose(conversation: Conversation, wanted: int, held: Mapping[int, int]) -> list[int]:
    """The candidates a batch takes, oldest first, until they free ``wanted`` tokens; those ``held`` (in use)
    stay candidates, in their place."""
    chosen: list[int] = []
    kept: list[tuple[int, int]] = []
    expected = 0
    candidates = conversation.candidates
    while candidates and expected < wanted:
        position, gain = candidates.popleft()
        if position in held:
            kept.append((position, gain))
            continue
        conversation.available -= gain
        conversation.words.pop(position, None)
        chosen.append(position)
        expected += gain
    candidates.extendleft(reversed(kept))
    return chosen


def lines_in_use(conversation: Conversation, position: int, lines: int, text: str, written: bool = False) -> str:
    """For the stand-in of an old item's ``text`` (at ``position``): at most ``lines`` of its lines that hold a
    word in use the model wrote again in or after the item's response, the first line of each word that no
    earlier stand-in keeps a line of, numbered from 1 and cut to ``_WIDTH`` characters, after a heading; empty
    if none does. ``written``: the item is the model's own (an argument, its text); lines left over go to those
    naming the most distinctive names no stand-in keeps a line of (the settings, imports and calls of a script
    it wrote, which its next script copies), the earliest first among equals. (The words of the lines a
    stand-in shown keeps count as kept: ``Usage.saw``, once the policy uses the stand-in.)"""
    if lines <= 0:
        return ""
    usage = conversation.usage
    usage.read()
    scan = text if len(text) <= MAX_SCAN else text[:MAX_SCAN]
    found: dict[int, list[str]] = {}  # start of a line -> the words first found on it
    for word in usage.in_use_since(conversation.at[position]):
        start = _first_whole(scan, word)
        if start >= 0:
            found.setdefault(scan.rfind("\n", 0, start) + 1, []).append(word)
    chosen = sorted(found)[:lines]
    if written and len(chosen) < lines:  # then those naming the most of what the model wrote there
        counts = names_by_line(scan, usage.kept, found)
        chosen += sorted(counts, key=lambda start: (-counts[start], start))[: lines - len(chosen)]
        chosen.sort()
    kept: list[str] = []
    for start in chosen:
        end = scan.find("\n", start)
        line = scan[start:] if end < 0 else scan[start:end]
        cut = line if len(line) <= _WIDTH else line[:_WIDTH] + " [...]"
        kept.append(f"{scan.count(chr(10), 0, start) + 1}: {cut}")
    return LINES_IN_USE + "\n".join(kept) if kept else ""


def _first_whole(text: str, word: str) -> int:
    """Where ``word`` first stands in ``text`` as :func:`words_of` would read it there, or -1: a name read whole
    in its run of name characters; anything else between a pair of quotes."""
    name = is_name(word)
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if name:
            if name_stands_at(text, start, end):
                return start
        elif start and end < len(text) and text[start - 1] in "'\"" and text[end] == text[start - 1]:
            return start
        start = text.find(word, start + 1)
    return -1

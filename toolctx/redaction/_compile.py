"""The rules compiled for scanning: one regex for each rule, and the prefilter that picks them.

:func:`compile_rules` turns a redactor's keys and patterns into :class:`Rule` objects (one for
each literal the key words are found by, one for each pattern) and one :class:`Prefilter`
over every fragment they need. A rule runs on an output only when the prefilter found one of
its ``triggers``; a rule whose matches start where one of its ``literals`` does can, in large
data, be tried at just those places.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from toolctx.errors import ConfigError
from toolctx.redaction._encoded import encoded_fragments
from toolctx.redaction._keys import KeyAssignment, key_assignments, key_test, words
from toolctx.redaction._prefilter import Prefilter, Screen, needle_alternation
from toolctx.redaction._rules import STARTS_AT_ANCHOR, SecretPattern

__all__ = ["BLOB_MARK", "FOLD", "CompiledRules", "Rule", "compile_rules"]

BLOB_MARK = '"$bytes":"'
"""A fragment found where JSON holds a ``bytes`` value (``{"$bytes": base64}``)."""
# A full-width letter or digit (０-９, Ａ-Ｚ, ａ-ｚ), as UTF-8 or JSON-escaped, a JSON escape of an ASCII letter,
# digit or ``+-./:=@_``, or an invisible character: then the text is read as it shows (``_forms.Folded``).
_FOLD_SCREENS = (
    Screen("full-width", rb"\xef(?:\xbc[\x90-\x99\xa1-\xba]|\xbd[\x81-\x9a])", b"\xef", caseless=False),
    Screen("full-width-escaped", rb"\\uff(?:1[0-9]|2[1-9a-f]|3[0-9a]|4[1-9a-f]|5[0-9a])", b"\\u"),
    Screen("ascii-escaped", rb"\\u00(?:2[bdef]|3[0-9ad]|4[0-9a-f]|5[0-9af]|6[1-9a-f]|7[0-9a])", b"\\u"),
    Screen("invisible-escaped", rb"\\u(?:200[b-d]|2060|feff|00ad)", b"\\u"),
    Screen("invisible", rb"\xe2(?:\x80[\x8b-\x8d]|\x81\xa0)", b"\xe2", caseless=False),
    Screen("byte-order-mark", rb"\xef\xbb\xbf", b"\xef", caseless=False),
    Screen("soft-hyphen", rb"\xc2\xad", b"\xc2\xad", caseless=False),
)
FOLD = frozenset(s.name for s in _FOLD_SCREENS)
"""The fragments found where text holds characters to read as others (or as none) before the rules run."""


@dataclass(frozen=True)
class Rule:
    """One compiled rule: a key assignment (``assignment``) or a secret pattern."""

    name: str
    regex: re.Pattern[bytes]
    caseless: bool
    triggers: frozenset[Hashable]  # fragments whose presence makes it run (none: always)
    literals: tuple[Hashable, ...] = ()  # when set, every match starts where one of these does
    assignment: bool = False
    encoded: bool = False  # ``regex`` finds base64 fragments of the other rules' literals (``_encoded``)


@dataclass(frozen=True)
class CompiledRules:
    """What a redactor scans with, built once from its keys and patterns."""

    rules: tuple[Rule, ...]
    unanchored: tuple[Rule, ...]  # rules that run on every output
    key_words: frozenset[Hashable]  # the fragments by which secret keys are found
    key_test: re.Pattern[str] | None  # passed by the words of a secret key
    prefilter: Prefilter


def _found_as(key: KeyAssignment) -> Hashable:
    """The fragment a key's literal is found as: text in any case, or bytes as written."""
    return key.literal.decode() if key.caseless else key.literal


def compile_rules(keys: Sequence[str], patterns: Sequence[SecretPattern]) -> CompiledRules:
    """Compile ``keys`` (lower case) and ``patterns``; a :class:`ConfigError` names a pattern that is not valid."""
    key_words = sorted({words(k) for k in keys} - {""}, key=len, reverse=True)
    rules: list[Rule] = []
    screens: list[Screen] = [*_FOLD_SCREENS]
    caseless: set[str] = set()
    exact: set[str | bytes] = {BLOB_MARK}
    assignments = key_assignments(key_words)
    for key in assignments:
        screens += (key.screen, key.unpacking_screen)
        anchor = key.literal.decode() if key.caseless else key.literal
        for regex, screen in ((key.regex, key.screen), (key.unpacking, key.unpacking_screen)):
            rules.append(Rule(key.name, regex, key.caseless, frozenset({screen.name}), (anchor,), assignment=True))
    for pattern in patterns:
        try:
            regex = re.compile(pattern.regex.encode("utf-8", "surrogatepass"))
        except re.error as exc:
            raise ConfigError(f"secret pattern {pattern.name!r} is not a valid regex: {exc}") from exc
        triggers: frozenset[Hashable] = frozenset(pattern.anchors)
        literals: tuple[Hashable, ...] = pattern.anchors
        if pattern.screen:
            if len(pattern.anchors) != 1:
                raise ConfigError(f"secret pattern {pattern.name!r} has a screen, so it needs exactly one anchor")
            name, anchor = f"pattern:{pattern.name}", pattern.anchors[0]
            screens.append(Screen(name, pattern.screen.encode(), anchor.encode(), pattern.caseless))
            triggers = frozenset({name})
            literals = (anchor if pattern.caseless else anchor.encode(),)
        else:
            (caseless if pattern.caseless else exact).update(pattern.anchors)
        rules.append(Rule(pattern.name, regex, pattern.caseless, triggers, literals * (pattern in STARTS_AT_ANCHOR)))
    # Secrets in base64: found by the fragments the literals of every rule above encode to.
    fragments = encoded_fragments(
        [k.literal.decode() for k in assignments if k.caseless]
        + sorted(a for p in patterns if p.caseless for a in p.anchors),
        [k.literal for k in assignments if not k.caseless] + [a for p in patterns if not p.caseless for a in p.anchors],
    )
    if fragments:
        alternation = re.compile(needle_alternation(fragments))
        rules.append(Rule("base64", alternation, False, frozenset(fragments), encoded=True))
    placed = {literal for rule in rules for literal in rule.literals}
    return CompiledRules(
        rules=tuple(rules),
        unanchored=tuple(r for r in rules if not r.triggers),
        # Any key word, wherever it is, may be part of a dict key: is_secret_key() judges those. A one-word key
        # that begins longer ones (``pass``: ``passengers``, ``password``) counts only where its screen matched
        # (the screen reads any key ending with it, closed by a quote and a colon, as JSON writes keys).
        key_words=frozenset(
            k.name
            if k.literal.decode("utf-8", "replace") in key_words
            and any(o.literal.startswith(k.literal) for o in assignments if o is not k)
            else _found_as(k)
            for k in assignments
        ),
        key_test=key_test(key_words),
        prefilter=Prefilter(caseless, exact, screens=screens, place=placed, encoded=fragments),
    )

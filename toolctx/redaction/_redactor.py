"""The redactor: applies the compiled rules to the JSON a session is about to store, and to text and bytes.

How it keeps clean outputs cheap is told under **Cost** in the package's documentation: the
prefilter (``_prefilter``) picks the rules (``_compile``) that can match, and only then is
the JSON parsed; large strings and ``bytes`` values have paths that avoid even that.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import orjson

from toolctx._scrub import shown
from toolctx.errors import ConfigError
from toolctx.redaction._compile import BLOB_MARK, FOLD, Rule, compile_rules
from toolctx.redaction._encoded import encoded_runs
from toolctx.redaction._forms import Folded, Lowered, splice, whole_spans
from toolctx.redaction._json import BLOB_HEAD, from_base64, replace_in_string, string_text
from toolctx.redaction._keys import assigned_spans, second_meaning, words
from toolctx.redaction._placeholders import is_masked, is_placeholder
from toolctx.redaction._rules import DEFAULT_KEYS, DEFAULT_PATTERNS, REDACTED, SecretPattern

__all__ = ["Redactor", "default_redactor", "resolve_redactor"]

_JOINED_SCAN_LIMIT = 16 * 1024  # below this, joining a call's args and result costs less than a second scan
_LARGE = 1 << 20  # from this size on, a rule is tried where its literal occurs rather than in a pass
_PLACEHOLDERS_KEPT = 4096
_HOOKS = ("redact_value", "redact_text", "redact_bytes", "is_secret_key", "_match_key")


class Redactor:
    """Replaces secrets in JSON outputs, text and bytes; see :mod:`toolctx.redaction` for the rules.

    ``keys``: snake-case names; a dict key, an argument name or the key of an assignment
    in text is secret when, split into words, it ends with one of them (or one of them
    plus ``s``, except ``token``). ``patterns``: secret formats found inside text.
    ``replacement``: what each secret becomes. Subclass and override
    :meth:`redact_value`, :meth:`redact_text`, :meth:`redact_bytes` or
    :meth:`is_secret_key` for anything else: an override runs on every output in which
    the scan found a key word or an anchor (or always, with a pattern that has no anchors).
    """

    def __init__(
        self,
        keys: Iterable[str] = DEFAULT_KEYS,
        patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS,
        replacement: str = REDACTED,
    ) -> None:
        self.keys = tuple(k.lower() for k in keys)
        self.patterns = tuple(patterns)
        self.replacement = replacement
        self._replacement = replacement.encode("utf-8", "surrogatepass")
        compiled = compile_rules(self.keys, self.patterns)
        self._key_test = compiled.key_test
        self._key_words = compiled.key_words
        self._rules = compiled.rules
        self._unanchored = compiled.unanchored
        self._prefilter = compiled.prefilter
        # A subclass that changes how values, strings or keys are judged gets the full
        # walk through its own methods whenever the scan found anything.
        self._custom = any(getattr(type(self), name) is not getattr(Redactor, name) for name in _HOOKS)
        self._is_secret_key = functools.lru_cache(maxsize=4096)(self._match_key)
        # Placeholders repeat (the same test settings written again and again): each is judged once. Only they
        # are remembered, never a value found to be a secret.
        self._placeholders: set[bytes] = set()
        self._rules_for = functools.lru_cache(maxsize=256)(self._select)
        # What a scan can find that makes redaction look further: a rule's trigger, a key word, a form to read
        # or a bytes value. (A screen's literal alone, ``pass`` of ``passengers``, says nothing.)
        self._telling = frozenset(t for r in self._rules for t in r.triggers) | self._key_words | FOLD | {BLOB_MARK}

    def __repr__(self) -> str:
        return f"Redactor(keys={list(self.keys)}, patterns={[p.name for p in self.patterns]})"

    # -- JSON, as sessions store it ------------------------------------------------------------

    def __call__(self, data: bytes) -> tuple[bytes, bool]:
        """Redact JSON ``data`` (as orjson writes it); returns the bytes to store and whether anything changed."""
        if data.startswith(BLOB_HEAD):
            blob = self._top_blob(data)
            if blob is not None:
                return blob
        if len(data) < _LARGE or data[:1] != b'"' or self._custom:
            return self._redact_json(data, self._prefilter.found(data))
        # Without Hyperscan a scan costs more than a parse: scan the text once, not its JSON first.
        found = None if self._prefilter.engine == "re" else self._prefilter.found(data)
        if found is None or self._rules_for(found) or not found.isdisjoint(FOLD):
            text = self._large_text(data, found)
            if text is not None:
                return text
        return self._redact_json(data, self._prefilter.found(data) if found is None else found)

    def redact_call(self, args_json: bytes, result_json: bytes) -> tuple[bytes, bytes]:
        """Redact a call's argument and result JSON, with one scan when both are small.

        Overriding it changes how sessions redact every call (:meth:`redact_call_with_id`
        uses the override), and the override may call ``super().redact_call``.
        """
        args, result, _ = self._redact_parts(args_json, result_json, None)
        return args, result

    def redact_call_with_id(
        self, args_json: bytes, result_json: bytes, call_id: str | None
    ) -> tuple[bytes, bytes, str | None]:
        """Redact a call as a session stores it: its argument and result JSON and the framework's id of the call.

        Sessions call this on every save; the id (text, such as ``call_abc``; None when the
        framework gave none) is redacted in the same scan as the JSON. A subclass that
        overrides :meth:`redact_call` has its own way used here too, and the id then goes
        through :meth:`redact_text`.
        """
        if type(self).redact_call is not Redactor.redact_call:  # a subclass's own way: used as it is
            args, result = self.redact_call(args_json, result_json)
            return args, result, None if call_id is None else self.redact_text(call_id)
        return self._redact_parts(args_json, result_json, call_id)

    def _redact_parts(
        self, args_json: bytes, result_json: bytes, call_id: str | None
    ) -> tuple[bytes, bytes, str | None]:
        """The default :meth:`redact_call_with_id`, which the default :meth:`redact_call` shares."""
        if len(result_json) <= _JOINED_SCAN_LIMIT and not result_json.startswith(BLOB_HEAD):
            # Compact JSON never holds a raw newline and no fragment matches one, so
            # nothing can match across the joins: one scan answers for all three.
            joined = (
                b"\n".join((args_json, result_json))
                if call_id is None
                else b"\n".join((args_json, result_json, call_id.encode("utf-8", "surrogatepass")))
            )
            found = self._prefilter.found(joined)
            if (not found or (not self._custom and found.isdisjoint(self._telling))) and not self._unanchored:
                return args_json, result_json, self.redact_text(call_id) if call_id and self._custom else call_id
            # Something is there: a scan of the (small) arguments says if it is in them.
            args = self._redact_json(args_json, self._prefilter.found(args_json))[0]
            result_json = self._redact_json(result_json, found)[0]
        else:
            args, result_json = self(args_json)[0], self(result_json)[0]
        return args, result_json, None if call_id is None else self.redact_text(call_id)

    def _large_text(self, data: bytes, found: frozenset[Hashable] | None) -> tuple[bytes, bool] | None:
        """A large result that is one string, redacted without building a ``str`` (None: not as orjson writes it)."""
        raw = string_text(data)
        if raw is None:
            return None  # control characters (or another writer): parsed as any JSON
        rules, fold = (None, None) if found is None else (self._rules_for(found), not found.isdisjoint(FOLD))
        spans = whole_spans(raw, self._secret_spans(raw, rules, fold, text=True))
        if not spans:
            return data, False
        return replace_in_string(data, raw, spans, orjson.dumps(self.replacement)[1:-1]), True

    def _redact_json(self, data: bytes, found: frozenset[Hashable]) -> tuple[bytes, bool]:
        """Apply the rules whose fragments were found: the parse is skipped when none can match."""
        if not found and not self._unanchored:
            return data, False
        if self._custom:
            value = orjson.loads(data)
            redacted = self.redact_value(value)
            return (data, False) if redacted == value else (orjson.dumps(redacted), True)
        rules = self._rules_for(found)
        fold = not found.isdisjoint(FOLD)
        blobs = BLOB_MARK in found
        keys = fold or not found.isdisjoint(self._key_words)
        if not rules and not fold and not blobs and not (keys and data[:1] in (b"{", b"[")):
            return data, False  # only a key word was found, and a lone string or number has no keys
        value = orjson.loads(data)
        redacted = self._walk(value, keys, rules, fold, blobs)
        if redacted is value:
            return data, False
        return orjson.dumps(redacted), True

    def _select(self, found: frozenset[Hashable]) -> tuple[Rule, ...]:
        return tuple(r for r in self._rules if not r.triggers or not r.triggers.isdisjoint(found))

    def _walk(self, value: Any, keys: bool, rules: tuple[Rule, ...], fold: bool, blobs: bool) -> Any:
        """``value`` with secrets replaced; the very same object where nothing changed."""
        kind = type(value)
        if kind is str:
            return self._text(value, None, rules, fold)
        if kind is dict:
            if blobs and len(value) == 1 and "$bytes" in value:
                blob = self._blob(value)
                if blob is not None:
                    return blob
            out: dict[Any, Any] = {}
            changed = False
            for k, v in value.items():
                if (
                    keys
                    and v is not None
                    and v != self.replacement
                    and self._is_secret_key(k)
                    and not second_meaning(k, v)
                ):
                    new = self.replacement
                else:
                    new = self._walk(v, keys, rules, fold, blobs)
                changed = changed or new is not v
                name = k
                if rules or fold:  # a key can be a secret itself: ``{"sk-live-...": 1}``
                    named = self._text(k, None, rules, fold)
                    if named is not k:
                        name, changed = _free_key(named, out, value), True
                out[name] = new
            return out if changed else value
        if kind is list:
            items = [self._walk(v, keys, rules, fold, blobs) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    # -- text and bytes --------------------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        """``text`` with every secret in it replaced (the same object if it holds none)."""
        return self._text(text, None, None, None)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with the bytes of every secret replaced by those of the replacement (``data`` if none).

        The bytes are read as text in any ASCII-compatible encoding (UTF-8, Latin-1,
        ...); full-width letters are read as ASCII when ``data`` is UTF-8.
        """
        spans = self._secret_spans(data, None, None, text=False)
        return splice(data, spans, self._replacement) if spans else data

    def _text(self, text: str, raw: bytes | None, rules: tuple[Rule, ...] | None, fold: bool | None) -> str:
        """``text`` redacted by ``rules`` (and read full-width if ``fold``), or by what a scan of it finds (None)."""
        if fold:
            fold = not text.isascii() or "\\u" in text
        if rules is not None and not rules and not fold:
            return text
        if raw is None:
            raw = text.encode("utf-8", "surrogatepass")
        spans = self._secret_spans(raw, rules, fold, text=True)
        return splice(raw, spans, self._replacement).decode("utf-8", "surrogatepass") if spans else text

    def _secret_spans(
        self, data: bytes, rules: tuple[Rule, ...] | None, fold: bool | None, *, text: bool
    ) -> list[tuple[int, int]]:
        """Where the secrets in UTF-8 (or any ASCII-compatible) ``data`` are.

        ``rules`` and ``fold`` come from a scan of the JSON around ``data``; without
        them, or for large data where placing each literal pays, ``data`` is scanned
        itself (``fold=None``: see for yourself). ``text``: ``data`` is known to be UTF-8.
        """
        if fold is None and len(data) >= _LARGE and (not data.isascii() or b"\\u" in data):
            # Large: place literals once, in the text to match. Without Hyperscan scans are
            # costly, so look for full-width forms directly; with it, a quick scan first.
            fold = self._prefilter.engine == "re" or not self._prefilter.found(data).isdisjoint(FOLD)
        if fold:
            folded = Folded(data, text=text)
            if folded:
                return folded.original(self._secret_spans(folded.data, None, False, text=True))
            fold = False
        located = None
        if rules is None or len(data) >= _LARGE:
            if len(data) >= _LARGE:
                located = self._prefilter.locate(data, len(data) >> 11)
                found = located[0]
            else:
                found = self._prefilter.found(data)
            rules = self._rules_for(found) if found or self._unanchored else ()
            fold = fold is not False and not found.isdisjoint(FOLD)
        if fold:
            folded = Folded(data, text=text)
            if folded:  # full-width letters: match on their ASCII reading
                return folded.original(self._secret_spans(folded.data, None, False, text=True))
        return self._spans(data, rules, located) if rules else []

    def _spans(
        self,
        data: bytes,
        rules: Iterable[Rule],
        located: tuple[frozenset[Hashable], dict[Hashable, list[int]]] | None,
    ) -> list[tuple[int, int]]:
        """Every match of every rule, wherever it starts (overlaps are merged when spliced)."""
        spans: list[tuple[int, int]] = []
        lowered = Lowered(data)
        for rule in rules:
            regex = rule.regex
            starts = None if located is None else _starts(rule, *located)
            if rule.encoded:  # base64 runs holding a fragment: each decoded, and redacted whole if it holds a secret
                spans += encoded_runs(data, regex, self._holds_secret)
                continue
            matches: list[re.Match[bytes]] = []
            if starts is None:  # left to right, each search resuming where the last match ended
                matches += regex.finditer(lowered.whole() if rule.caseless else data)
            else:  # a few known places: the same matches, trying just those (lowering only around them)
                end = 0
                for at in starts:
                    if at >= end:
                        match = lowered.match(regex, at) if rule.caseless else regex.match(data, at)
                        if match is not None:
                            matches.append(match)
                            end = match.end()
            for match in matches:
                if rule.assignment:
                    spans += assigned_spans(match, data, self._replacement, self.is_secret_key, self._placeholder)
                elif (span := _secret_span(match, self._placeholder)) is not None:
                    spans.append(span)
        return spans

    def _holds_secret(self, data: bytes) -> bool:
        return bool(self._secret_spans(data, None, None, text=False))

    # -- keys, bytes values, whole values ----------------------------------------------------------

    def _match_key(self, key: str) -> bool:
        if self._key_test is None:
            return False
        return self._key_test.search(words(key)) is not None

    def is_placeholder(self, value: str) -> bool:
        """Whether ``value``, assigned to a secret key in text, is kept as one that only stands in for a secret
        (``test``, ``changeme``, ``{password}``: **Placeholders** in :mod:`toolctx.redaction`)."""
        return self._placeholder(value.strip().encode("utf-8", "surrogatepass"))

    def _placeholder(self, value: bytes) -> bool:
        """Whether ``value`` (a matched value or password) only stands in for a secret."""
        if value in self._placeholders:
            return True
        if not is_placeholder(value, self.is_secret_key):
            return False
        if len(self._placeholders) >= _PLACEHOLDERS_KEPT:
            self._placeholders.clear()
        self._placeholders.add(value)
        return True

    def is_secret_key(self, key: str) -> bool:
        """Whether values under ``key`` (or assigned to it in text) are redacted."""
        return bool(self._is_secret_key(key))

    def _blob(self, value: dict[str, Any]) -> dict[str, Any] | None:
        """A redacted ``{"$bytes": base64}`` value, or None when it does not hold base64."""
        text = value["$bytes"]
        raw = from_base64(text) if isinstance(text, str) else None
        if raw is None:
            return None
        redacted = self.redact_bytes(raw)
        if redacted is raw:
            return value
        return {"$bytes": base64.b64encode(redacted).decode("ascii")}

    def _top_blob(self, data: bytes) -> tuple[bytes, bool] | None:
        """A whole result that is bytes: decoded straight from the JSON, no parse and no scan of the base64."""
        if not data.endswith(b'"}') or data.find(b'"', len(BLOB_HEAD)) != len(data) - 2:
            return None
        raw = from_base64(memoryview(data)[len(BLOB_HEAD) : -2])
        if raw is None:
            return None
        redacted = self.redact_bytes(raw)
        if redacted is raw:
            return data, False
        return BLOB_HEAD + base64.b64encode(redacted) + b'"}', True

    def redact_value(self, value: Any) -> Any:
        """A redacted copy of a JSON value (dicts, lists, strings, numbers), by every rule."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            raw = from_base64(value["$bytes"]) if len(value) == 1 and isinstance(value.get("$bytes"), str) else None
            if raw is not None:
                redacted = self.redact_bytes(raw)
                return value if redacted == raw else {"$bytes": base64.b64encode(redacted).decode("ascii")}
            out: dict[str, Any] = {}
            for k, v in value.items():
                new = (
                    self.replacement
                    if v is not None and self.is_secret_key(k) and not second_meaning(k, v)
                    else self.redact_value(v)
                )
                named = self.redact_text(k) if isinstance(k, str) else k
                out[k if named == k else _free_key(named, out, value)] = new
            return out
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value


def _free_key(key: str, taken: dict[str, Any], original: dict[str, Any]) -> str:
    """``key`` (a redacted dict key), numbered when two keys redact alike: ``[REDACTED]``, ``[REDACTED] (2)``."""
    name, number = key, 1
    while name in taken or name in original:
        number += 1
        name = f"{key} ({number})"
    return name


def _secret_span(match: re.Match[bytes], placeholder: Callable[[bytes], bool]) -> tuple[int, int] | None:
    """The first group that took part in the match (the secret after ``Bearer``), else the whole match; None
    when that is a placeholder (a group: ``user:pass@``, ``Bearer <token>``) or masked (``sk-xxxxxxxxxxxx``)."""
    for index in range(1, (match.re.groups or 0) + 1):
        if match.start(index) >= 0:
            return None if placeholder(match.group(index)) else match.span(index)
    return None if is_masked(match.group()) else match.span()


def _starts(rule: Rule, found: frozenset[Hashable], positions: dict[Hashable, list[int]]) -> list[int] | None:
    """Where ``rule`` can match, when every literal it starts with was placed; None means a pass."""
    if not rule.literals:
        return None
    starts: list[int] = []
    for literal in rule.literals:
        if literal in found:
            places = positions.get(literal)
            if places is None:
                return None  # too frequent to place: one pass is cheaper
            starts += places
    return sorted(set(starts))


@functools.cache
def default_redactor() -> Redactor:
    """The redactor sessions use unless told otherwise (built on first use)."""
    return Redactor()


def resolve_redactor(redact: object) -> Redactor | None:
    """Normalise a ``redact`` option: True (the default rules), False/None (off) or a Redactor."""
    if redact is True:
        return default_redactor()
    if redact is False or redact is None:
        return None
    if isinstance(redact, Redactor):
        return redact
    raise ConfigError(
        f"redact must be True (the default rules), False (off) or a toolctx.redaction.Redactor, got {shown(redact)}"
    )
